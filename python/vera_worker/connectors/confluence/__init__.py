"""The Confluence connector (Cloud REST API v2): the pages of a space, newest
version first, read down to the cursor's position (connector.py); storage
format (XHTML) to Markdown by markdownify (storage.py), cut into passages on
its headings; hierarchy, labels and last modifier as claims; tier 2 by default."""
