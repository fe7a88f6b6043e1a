"""Tenants: creating them, per-tenant login roles, and forgetting what they own.

A per-tenant login role (for a psql session or a BI tool) is listed in
codesift.tenant_roles and is a member of codesift_tenant: the row-level policies
show it its own tenant and nothing else, whatever it sets, and it writes nothing.
It holds nothing else (codesift.login_role_problems, checked here and at every
use), and it has a connection limit and timeouts, so that BI sessions never take
the connections of codesift_app and codesift_loader: either the server keeps a
reserve for those (PostgreSQL 16+: reserved_connections, which the migration lets
them use) or the limits of all per-tenant roles together leave SERVICE_RESERVE
connections free for them.

Acting as a tenant is this module's too, so that a tenant is looked up by name and
app.current_tenant_id set in one place (tests/unit/test_tenant_helpers.py): tenant_id (the
one unknown-tenant error), use_tenant (for the rest of a long-lived session: the indexer,
the worker, status loops) and as_tenant (one transaction, SET LOCAL).
"""

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql

from .errors import CodesiftError

RESERVED_ROLES = frozenset({"codesift_app", "codesift_loader", "codesift_tenant", "postgres"})
TENANT_GROUP = "codesift_tenant"
# a new per-tenant role's connection limit (sql/idempotent/001-tenancy.sql gives it to the
# roles made before limits, too); a psql session or a BI tool's small pool
DEFAULT_CONNECTION_LIMIT = 5
MAX_CONNECTION_LIMIT = 10_000
# connections the per-tenant roles' limits leave for codesift_app and codesift_loader
# (their pools, workers and loaders) when the server reserves none for them
SERVICE_RESERVE = 10


@dataclass
class LoginRole:
    role: str
    tenant: str
    created: bool
    password: str | None  # generated for a new role, shown once
    connection_limit: int


class UnknownTenant(CodesiftError):
    """No tenant of that name (or none this role may see)."""


def tenant_id(conn: psycopg.Connection, name: str) -> int:
    """The tenant's id; an unknown one is the error every command gives."""
    row = conn.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownTenant(f"unknown tenant '{name}' (codesift status lists the tenants)")
    return row[0]


def _id_of(conn: psycopg.Connection, name_or_id: str | int) -> int:
    return name_or_id if isinstance(name_or_id, int) else tenant_id(conn, name_or_id)


def create_tenant(conn: psycopg.Connection, name: str) -> tuple[int, bool]:
    """The tenant's id, and whether it was created now."""
    if not name.strip():
        raise CodesiftError("a tenant name must not be empty")
    try:
        row = conn.execute(
            "insert into codesift.tenants (name) values (%s)"
            " on conflict (name) do nothing returning id",
            (name,),
        ).fetchone()
    except psycopg.errors.CheckViolation:
        raise CodesiftError("a tenant name is at most 200 characters") from None
    if row:
        return row[0], True
    return tenant_id(conn, name), False


def use_tenant(conn: psycopg.Connection, name_or_id: str | int) -> int:
    """Act as the tenant (a name, or an id already known) for the rest of the session: for
    long-lived connections; its transactions reach Citus workers through
    db.tenant_transaction. Returns its id."""
    tid = _id_of(conn, name_or_id)
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tid),))
    return tid


@contextmanager
def as_tenant(conn: psycopg.Connection, name_or_id: str | int) -> Iterator[int]:
    """A transaction acting as the tenant (a name, or an id already known); yields its id.
    SET LOCAL, not set_config(): on a Citus coordinator only a SET LOCAL reaches the
    workers (citus.propagate_set_commands = 'local'). The session's own setting is back
    when the transaction ends."""
    with conn.transaction():
        tid = _id_of(conn, name_or_id)
        conn.execute(sql.SQL("set local app.current_tenant_id = {}").format(sql.Literal(str(tid))))
        yield tid


def grant_login_role(
    conn: psycopg.Connection, tenant: str, role: str, connection_limit: int | None = None
) -> LoginRole:
    """Give `role` (created with a generated password when missing) exactly one tenant, a
    connection limit (`connection_limit`; else the role's own, else the default) and the
    timeouts it has none of. Refuses a role that holds more than a per-tenant role may, and
    a limit that would leave the service roles too few connections. Needs a superuser (or
    CREATEROLE) connection: the DSN `codesift migrate` uses."""
    if role in RESERVED_ROLES or not role or len(role) > 63:
        raise CodesiftError(f"'{role}' cannot be a per-tenant role: choose another name")
    if connection_limit is not None and not 1 <= connection_limit <= MAX_CONNECTION_LIMIT:
        raise CodesiftError(
            f"--connection-limit is a number of connections from 1 to {MAX_CONNECTION_LIMIT}"
        )
    tid = tenant_id(conn, tenant)
    try:
        return _grant(conn, tenant, tid, role, connection_limit)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise CodesiftError(
            f"this DSN's role may not create, grant or alter roles ({exc.diag.message_primary}); "
            "run it with the DSN you migrate with (a superuser or CREATEROLE role)"
        ) from None


def _grant(
    conn: psycopg.Connection, tenant: str, tid: int, role: str, connection_limit: int | None
) -> LoginRole:
    existing = conn.execute(
        "select rolconnlimit, codesift.login_role_problems(rolname) from pg_roles"
        " where rolname = %s",
        (role,),
    ).fetchone()
    if existing and existing[1]:
        problems = "; it ".join(existing[1])
        raise CodesiftError(
            f"role '{role}' holds more than a per-tenant role may (membership in "
            f"{TENANT_GROUP}, nothing else): it {problems}. Remove that, or choose another role"
        )
    mapped = conn.execute(
        "select t.name from codesift.tenant_roles r join codesift.tenants t on t.id = r.tenant_id"
        " where r.role_name = %s",
        (role,),
    ).fetchone()
    if mapped and mapped[0] != tenant:
        raise CodesiftError(f"role '{role}' already belongs to tenant '{mapped[0]}'")
    if connection_limit is None:
        own = existing[0] if existing else -1
        connection_limit = own if own >= 0 else DEFAULT_CONNECTION_LIMIT
    _check_connection_budget(conn, role, connection_limit)
    password = None
    with conn.transaction():
        if not existing:
            password = secrets.token_urlsafe(24)
            conn.execute(
                sql.SQL("create role {} login inherit password {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
        conn.execute(
            sql.SQL("grant {} to {}").format(sql.Identifier(TENANT_GROUP), sql.Identifier(role))
        )
        conn.execute(
            "insert into codesift.tenant_roles (role_name, tenant_id) values (%s, %s)"
            " on conflict (role_name) do nothing",
            (role, tid),
        )
        conn.execute("select codesift._limit_login_role(%s, %s)", (role, connection_limit))
    return LoginRole(role, tenant, not existing, password, connection_limit)


def _check_connection_budget(conn: psycopg.Connection, role: str, limit: int) -> None:
    """Refuse a limit that, with every other per-tenant role's (codesift_tenant's members on
    this server, whichever database maps them), could leave codesift_app and codesift_loader
    fewer than SERVICE_RESERVE connections; unless the server keeps a reserve they may use
    (PostgreSQL 16+: reserved_connections > 0 and pg_use_reserved_connections)."""
    row = conn.execute(
        "select current_setting('max_connections')::int,"
        " current_setting('superuser_reserved_connections')::int,"
        " coalesce(current_setting('reserved_connections', true), '0')::int,"
        " to_regrole('pg_use_reserved_connections') is not null"
    ).fetchone()
    assert row is not None  # a select without from returns one row
    max_connections, superuser_reserved, reserved, has_reserve_role = row
    if reserved > 0 and has_reserve_role:
        usable = conn.execute(
            "select pg_has_role('codesift_app', 'pg_use_reserved_connections', 'USAGE')"
            " and pg_has_role('codesift_loader', 'pg_use_reserved_connections', 'USAGE')"
        ).fetchone()
        if usable and usable[0]:
            return
    others = conn.execute(
        "select a.rolname, a.rolconnlimit from pg_roles a"
        " where a.rolcanlogin and a.rolname <> %s and exists (select from pg_auth_members m"
        " where m.member = a.oid and m.roleid = %s::regrole)"
        " order by a.rolname",
        (role, TENANT_GROUP),
    ).fetchall()
    unlimited = [name for name, n in others if n < 0]
    if unlimited:
        shown = ", ".join(unlimited[:5]) + (", ..." if len(unlimited) > 5 else "")
        raise CodesiftError(
            f"per-tenant roles without a connection limit ({shown}) could take every "
            "connection from codesift_app and codesift_loader: run `codesift migrate` on the "
            "database that maps them (it gives them one), or ALTER ROLE ... CONNECTION LIMIT n"
        )
    taken = sum(n for _, n in others)
    free = max_connections - superuser_reserved - reserved
    if taken + limit > free - SERVICE_RESERVE:
        raise CodesiftError(
            f"with {limit} connections for '{role}' the per-tenant roles could hold "
            f"{taken + limit} of the {free} connections this server gives roles that are not "
            f"superusers (max_connections {max_connections}), leaving fewer than "
            f"{SERVICE_RESERVE} for codesift_app and codesift_loader ({len(others)} other "
            f"per-tenant roles hold {taken}): lower --connection-limit, raise max_connections, "
            "or on PostgreSQL 16+ set reserved_connections (codesift migrate lets the service "
            "roles use them)"
        )


def forget_repository(
    conn: psycopg.Connection, tenant: str, repo: str, ref: str | None = None
) -> int:
    """Remove one repository of the tenant, or only its indexed ref `ref`; returns the
    number of blobs no longer used."""
    try:
        with as_tenant(conn, tenant):
            row = conn.execute("select codesift.forget_repository(%s, %s)", (repo, ref)).fetchone()
            assert row is not None  # a function call returns one row
            return row[0]
    except psycopg.errors.UndefinedObject as exc:
        at = f" at ref '{ref}'" if ref else ""
        raise CodesiftError(f"tenant '{tenant}' has no repository '{repo}'{at}") from exc


def forget_tenant(conn: psycopg.Connection, tenant: str) -> None:
    """Remove the tenant and everything it owned."""
    with as_tenant(conn, tenant):
        conn.execute("select codesift.forget_tenant()")
