"""Worker adapters: the Procrastinate app and its tasks."""
