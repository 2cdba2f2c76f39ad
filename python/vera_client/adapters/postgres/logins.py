"""The login roles of SQL applications, one per application: LOGIN, a member
of the group vera_app (whose privileges it inherits), with a connection limit
and statement and idle-in-transaction timeouts. vera_app itself cannot log
in, so no application sees another's statements in pg_stat_activity nor may
cancel or end its backends. The statements are composed with psycopg.sql
(identifiers and literals quoted by psycopg) after the name and limits are
checked here; they run on the admin connection (CREATEROLE with ADMIN on
vera_app, or a superuser)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import conninfo, sql

from vera_client.adapters.postgres.errors import connect, translated_errors
from vera_client.api.queries import query
from vera_client.domain.deployment import AppLogin, LoginLimits
from vera_client.domain.errors import AppLoginExistsError, AppLoginNotFoundError, InvalidAppLoginError

# The group role holding what SQL applications may do; nobody logs in as it.
APP_GROUP = "vera_app"
# Every application login is named APP_LOGIN_PREFIX + a name of its own.
APP_LOGIN_PREFIX = "vera_app_"
_MAX_ROLE_NAME = 63  # PostgreSQL's NAMEDATALEN - 1
_LOGIN_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")
_DURATION = re.compile(r"(0|[1-9][0-9]{0,8})(ms|s|min|h|d)?")
_MAX_CONNECTION_LIMIT = 10_000
_SCRAM_ITERATIONS = 4096


def app_login_role(name: str) -> str:
    """The role of application login NAME: vera_app_NAME (a NAME that already
    carries the prefix is kept), lowercase letters, digits and _ only."""
    suffix = name.removeprefix(APP_LOGIN_PREFIX)
    longest = _MAX_ROLE_NAME - len(APP_LOGIN_PREFIX)
    if not _LOGIN_NAME.fullmatch(suffix) or len(suffix) > longest:
        raise InvalidAppLoginError(
            f"invalid application login name {name[:100]!r}: use 1 to {longest} lowercase letters, "
            f"digits and _ (starting with a letter or digit); the role is {APP_LOGIN_PREFIX}<name>"
        )
    return APP_LOGIN_PREFIX + suffix


def checked_limits(limits: LoginLimits) -> LoginLimits:
    """The limits, or InvalidAppLoginError naming the one that is not sensible."""
    if not 1 <= limits.connection_limit <= _MAX_CONNECTION_LIMIT:
        raise InvalidAppLoginError(
            f"invalid connection limit {limits.connection_limit}: between 1 and {_MAX_CONNECTION_LIMIT}"
        )
    for what, value in (
        ("statement timeout", limits.statement_timeout),
        ("idle timeout", limits.idle_in_transaction_timeout),
    ):
        if not _DURATION.fullmatch(value):
            raise InvalidAppLoginError(
                f"invalid {what} {value[:100]!r}: a whole number with a unit, "
                "e.g. 500ms, 30s, 2min, 1h (0 turns it off)"
            )
    return limits


def generate_password() -> str:
    """A random password for an application login (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = _SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677),
    computed here so that the password itself never reaches the server, its logs
    or pg_stat_activity (psql's \\password does the same)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    stored_key = hashlib.sha256(client_key).digest()
    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


# The operator's limits of a login: a setting of the database, LIMITS_SETTING + role, which
# only the database's owner or a superuser may write (a role may change its own role settings
# at will); vera.authenticate reads it from the catalog and sets it in every transaction.
LIMITS_SETTING = "vera_login."

# CONNECT on the database the statements run in (the database the login is for: no other), and
# the operator's limits as that database's setting, with the admin session's work_mem.
_DATABASE_STATEMENTS = sql.SQL(
    "do $login$ begin "
    "execute format('grant connect on database %I to %I', current_database(), {role}); "
    "execute format('alter database %I set %I = %L', current_database(), {setting}, "
    "{limits} || ',work_mem=' || current_setting('work_mem')); "
    "end $login$"
)


def limits_entry(limits: LoginLimits) -> str:
    """The operator's limits as stored in the database setting (without work_mem)."""
    return (
        f"statement_timeout={limits.statement_timeout},"
        f"idle_in_transaction_session_timeout={limits.idle_in_transaction_timeout}"
    )


def app_login_statements(role: str, limits: LoginLimits, *, create: bool) -> list[sql.Composed]:
    """What makes `role` an application login with `limits` (creating it when
    `create`): LOGIN, INHERIT and nothing else, a member of vera_app that
    inherits its privileges but may not SET ROLE to it, a connection limit,
    CONNECT on this database alone, the two timeouts as role settings (the
    defaults of its next sessions) and, binding, as this database's setting
    LIMITS_SETTING + role, which vera.authenticate applies in every
    transaction."""
    ident = sql.Identifier(role)
    statements: list[sql.Composed] = []
    if create:
        statements.append(
            sql.SQL(
                "create role {} login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls"
            ).format(ident)
        )
    statements += [
        sql.SQL("alter role {} login connection limit {}").format(
            ident, sql.Literal(limits.connection_limit)
        ),
        sql.SQL("grant {} to {} with inherit true, set false").format(sql.Identifier(APP_GROUP), ident),
        sql.SQL("alter role {} set statement_timeout = {}").format(
            ident, sql.Literal(limits.statement_timeout)
        ),
        sql.SQL("alter role {} set idle_in_transaction_session_timeout = {}").format(
            ident, sql.Literal(limits.idle_in_transaction_timeout)
        ),
        _DATABASE_STATEMENTS.format(
            role=sql.Literal(role),
            setting=sql.Literal(LIMITS_SETTING + role),
            limits=sql.Literal(limits_entry(limits)),
        ),
    ]
    return statements


def create_app_login(
    admin_dsn: str,
    name: str,
    limits: LoginLimits | None = None,
    *,
    password: str | None = None,
    exists_ok: bool = False,
) -> str:
    """Create the login role of one SQL application (see app_login_statements)
    and return its name. An existing application login of that name is an
    AppLoginExistsError, unless `exists_ok`: then its limits are set to these
    (and its password, when one is given). A role of that name that is not an
    application login is never taken over. The password is stored as a SCRAM
    verifier; without one the login can only use password-less authentication
    (trust, peer, certificates)."""
    role = app_login_role(name)
    limits = checked_limits(limits or LoginLimits())
    with connect(admin_dsn) as conn, translated_errors():
        found = conn.execute(query("app_login_exists"), {"role": role}).fetchone()
        if found is not None and not found[0]:
            raise AppLoginExistsError(
                f"role {role} exists and is not an application login: choose another name"
            )
        if found is not None and not exists_ok:
            raise AppLoginExistsError(
                f"application login {role} exists already: drop it first (vera tenant login drop {role})"
            )
        try:
            for statement in app_login_statements(role, limits, create=found is None):
                conn.execute(statement)
        except psycopg.errors.DuplicateObject as exc:  # created by someone else meanwhile
            raise AppLoginExistsError(f"application login {role} exists already") from exc
        if password is not None:
            conn.execute(
                sql.SQL("alter role {} password {}").format(
                    sql.Identifier(role), sql.Literal(scram_verifier(password))
                )
            )
    return role


def list_app_logins(admin_dsn: str) -> list[AppLogin]:
    """Every application login with its limits and how many sessions it has now."""
    with connect(admin_dsn) as conn, translated_errors():
        rows = conn.execute(query("app_logins")).fetchall()
    return [
        AppLogin(
            role=role,
            can_login=can_login,
            sessions=sessions,
            limits=LoginLimits(
                connection_limit=limit,
                statement_timeout=(statement or "=").split("=", 1)[1] or "0",
                idle_in_transaction_timeout=(idle or "=").split("=", 1)[1] or "0",
            ),
        )
        for role, can_login, limit, statement, idle, sessions in rows
    ]


def drop_app_login(admin_dsn: str, name: str) -> int:
    """Drop an application login, ending its sessions first; how many were ended.

    It loses LOGIN first (committed), so that no new session starts while the
    running ones are ended, then the role goes: a session whose role was
    dropped would otherwise run on. Needs CREATEROLE with ADMIN on the role and
    pg_signal_backend (a superuser has both)."""
    role = app_login_role(name)
    ident = sql.Identifier(role)
    with connect(admin_dsn, autocommit=True) as conn, translated_errors():
        found = conn.execute(query("app_login_exists"), {"role": role}).fetchone()
        if found is None or not found[0]:
            raise AppLoginNotFoundError(f"there is no application login {role} (vera tenant login list)")
        conn.execute(sql.SQL("alter role {} nologin").format(ident))
        ended = conn.execute(query("end_app_login_sessions"), {"role": role}).fetchone()
        # CONNECT on databases (any the login was made for) would keep the role from going
        for (database,) in conn.execute(query("app_login_databases"), {"role": role}).fetchall():
            conn.execute(sql.SQL("revoke all on database {} from {}").format(sql.Identifier(database), ident))
        conn.execute(
            sql.SQL(
                "do $login$ begin execute format('alter database %I reset %I', current_database(), {}); "
                "end $login$"
            ).format(sql.Literal(LIMITS_SETTING + role))
        )
        conn.execute(sql.SQL("drop role {}").format(ident))
    return int(ended[0]) if ended else 0


def login_dsn(dsn: str, role: str, password: str | None) -> str:
    """`dsn` (a URL or key=value string) with its user and password replaced."""
    if dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(dsn)
        host = parts.netloc.rsplit("@", 1)[-1]
        user = quote(role, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
        # a user or password given as a parameter would win over the ones in front of the host
        query = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(key, value) for key, value in query if key not in {"user", "password"}]
        return urlunsplit(parts._replace(netloc=f"{user}@{host}", query=urlencode(kept, safe="/")))
    params = conninfo.conninfo_to_dict(dsn)
    params.pop("password", None)
    params["user"] = role
    if password is not None:
        params["password"] = password
    return conninfo.make_conninfo("", **params)


def app_login_script(name: str, limits: LoginLimits | None = None) -> str:
    """A psql script that does what create_app_login(..., exists_ok=True) does,
    from the same statements, for a server reached with psql alone (the
    container's first start): the login is created when missing and given its
    limits, and its password is set from the psql variable `password` when
    one is passed (psql -v password=...)."""
    role = app_login_role(name)
    limits = checked_limits(limits or LoginLimits())
    missing = sql.SQL("select to_regrole({}) is null as vera_app_login_missing \\gset")
    exists = missing.format(sql.Literal(role))
    create, *update = app_login_statements(role, limits, create=True)
    password = sql.SQL("alter role {} password :'password';").format(sql.Identifier(role))
    lines = [
        f"-- The application login {role} (VERA's provisioning.app_login_script)",
        exists.as_string(),
        "\\if :vera_app_login_missing",
        create.as_string() + ";",
        "\\endif",
        *(statement.as_string() + ";" for statement in update),
        "\\if :{?password}",
        password.as_string(),
        "\\endif",
    ]
    return "\n".join(lines) + "\n"
