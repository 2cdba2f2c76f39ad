"""The `vera` command, assembled from the commands each package contributes."""
