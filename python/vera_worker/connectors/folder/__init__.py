"""The folder connector: a source is a folder below the roots the operator
allows; a run reads what changed since the source's cursor (run.py), found by
the scan (scan.py) and the cursor's plan (cursor.py). A sources.toml manifest
registers a tree of such folders at once (manifest.py)."""
