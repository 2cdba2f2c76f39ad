"""The CMDB connector: configuration items as JSON over HTTP (connector.py),
each item's fields made claims by the mapping in the source's config
(mapping.py), with no model; tier 1 (authoritative) by default."""
