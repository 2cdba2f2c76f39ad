#!/usr/bin/env bash
# First start of the container: brings the database up to date with the psql
# script that `vera db sql` generated when the image was built, the same steps
# `vera db migrate` takes (each pending migration recorded in vera_meta, then
# the functions and row-level security, then Procrastinate's schema for the
# outbox's job queue), in one transaction. Then, with VERA_APP_PASSWORD, the
# application login vera_app_main (the script provisioning.app_login_script
# wrote: vera_app itself is a group nobody logs in as), and the worker's and
# gateway's passwords. Also runnable by hand against any server: set
# PGHOST/PGPORT, POSTGRES_USER, POSTGRES_DB, VERA_SQL_SCRIPT (a file `vera db
# sql` wrote) and VERA_APP_LOGIN_SCRIPT (one app_login_script wrote).
set -euo pipefail

script=${VERA_SQL_SCRIPT:-/opt/vera/vera.sql}
login_script=${VERA_APP_LOGIN_SCRIPT:-/opt/vera/app-login.sql}
psql_db=(psql -v ON_ERROR_STOP=1 -X -q --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}")

"${psql_db[@]}" -1 -f "$script"

if [ -n "${VERA_APP_PASSWORD:-}" ]; then
    "${psql_db[@]}" -1 -v password="$VERA_APP_PASSWORD" -f "$login_script"
fi

# The login roles are created without a password: no password, no TCP login.
for role in worker gateway; do
    variable="VERA_${role^^}_PASSWORD"
    if [ -n "${!variable:-}" ]; then
        echo "alter role vera_$role password :'password'" | "${psql_db[@]}" -v password="${!variable}"
    fi
done
