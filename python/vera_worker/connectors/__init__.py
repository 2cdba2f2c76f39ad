"""Connectors: one folder per kind of source (folder/ today), holding what reads
that kind into VERA through the SQL API, as the principal who asked for the run.
What every connector offers (the contract) comes with the second kind."""
