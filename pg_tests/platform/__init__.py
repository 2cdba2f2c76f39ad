"""Tests of the schema's catalog, migrations, deployment, the embedded server, the CLI and the
documented examples."""
