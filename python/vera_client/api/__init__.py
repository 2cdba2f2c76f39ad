"""The SQL API by area: each module holds its rows (frozen dataclasses), its calls (which
named query of the .sql file beside it, with which parameters, read into which row) and
its plans, and lists its operations in one class that both client faces inherit. No
module here imports a database driver: the executor runs the calls."""
