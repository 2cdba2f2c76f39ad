"""PostgreSQL: the embedded server, the SQL bundle, migrations, error mapping."""
