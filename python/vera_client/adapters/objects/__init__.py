"""Object stores: the local filesystem (embedded default); S3 comes with the client issue."""
