"""The git connector: a repository by path or URL, read through the git CLI
(repository.py), only the files changed since the cursor's commit
(connector.py); tier 2 by default."""
