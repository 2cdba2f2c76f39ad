#!/usr/bin/env bash
# First start of the container: apply VERA's migrations in order, each in one
# transaction together with its bookkeeping row, exactly as `vera db migrate`
# records them, so the runner sees an up-to-date database afterwards.
# Then installs Procrastinate's schema (the outbox's job queue) into its own
# schema, as the runner does. Also runnable by hand against any server: set
# PGHOST/PGPORT, POSTGRES_USER, POSTGRES_DB, VERA_SQL_DIR (the repository's
# sql/ folder) and VERA_PROCRASTINATE_DIR (a folder with its schema.sql and a
# VERSION file).
set -euo pipefail

sql_dir=${VERA_SQL_DIR:-/opt/vera/sql}
queue_dir=${VERA_PROCRASTINATE_DIR:-/opt/vera/procrastinate}
psql_db=(psql -v ON_ERROR_STOP=1 -X -q --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}")

"${psql_db[@]}" -f "$sql_dir/meta/bookkeeping.sql"

for file in "$sql_dir"/migrations/[0-9][0-9][0-9][0-9]_*.sql; do
    name=$(basename "$file")
    version=$((10#${name:0:4}))
    sha=$(sha256sum "$file" | cut -d' ' -f1)
    applied=$("${psql_db[@]}" -A -t -c "select count(*) from vera_meta.migrations where version = $version")
    if [ "$applied" != "0" ]; then
        continue
    fi
    echo "vera: applying $name"
    "${psql_db[@]}" -1 -f "$file" \
        -c "insert into vera_meta.migrations (version, name, sha256) values ($version, '$name', '$sha')"
done

installed=$("${psql_db[@]}" -A -t -c "select count(*) from vera_meta.components where name = 'procrastinate'")
if [ "$installed" = "0" ]; then
    version=$(tr -d '[:space:]' < "$queue_dir/VERSION")
    sha=$(sha256sum "$queue_dir/schema.sql" | cut -d' ' -f1)
    echo "vera: installing Procrastinate $version's schema"
    "${psql_db[@]}" -1 -f "$sql_dir/meta/procrastinate_before.sql" -f "$queue_dir/schema.sql" \
        -f "$sql_dir/meta/procrastinate_after.sql" \
        -c "insert into vera_meta.components (name, version, sha256) values ('procrastinate', '$version', '$sha')"
fi

# The login roles are created without a password: no password, no TCP login.
for role in app worker gateway; do
    variable="VERA_${role^^}_PASSWORD"
    if [ -n "${!variable:-}" ]; then
        echo "alter role vera_$role password :'password'" | "${psql_db[@]}" -v password="${!variable}"
    fi
done
