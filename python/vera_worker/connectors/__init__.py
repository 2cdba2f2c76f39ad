"""Connectors: one folder per kind of source, holding what reads that kind into
VERA through the SQL API, as the principal who asked for the run.

Every kind but the folder speaks one contract (contract.py): a poll from the
source's cursor position, page by page, and a slim listing of the ids still
present for pruning. runner.py does the rest once for all of them (content-hash
no-ops, checkpoints, pruning by retraction, bad items skipped and counted, the
run's record); http.py is how an HTTP kind reaches its server, secrets.py where
its token comes from. registry.py names the kinds; dispatch.py sends a run to
the folder connector (folder/) or to the runner."""
