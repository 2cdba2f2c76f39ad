"""The folder connector: a source is a folder below the roots the operator
allows; the runner (connectors/runner.py) reads it as any kind, through the
connector (connector.py): the scan (scan.py) finds the files, the reading
(reading.py) reads one without following a link. A sources.toml manifest
registers a tree of such folders at once (manifest.py)."""
