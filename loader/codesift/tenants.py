"""Tenants: creating them, per-tenant login roles, and forgetting what they own.

A per-tenant login role (for a psql session or a BI tool) is listed in
codesift.tenant_roles and is a member of codesift_tenant: the row-level policies
show it its own tenant and nothing else, whatever it sets, and it writes nothing.
"""

import secrets
from dataclasses import dataclass

import psycopg
from psycopg import sql

from . import db
from .errors import CodesiftError

RESERVED_ROLES = frozenset({"codesift_app", "codesift_loader", "codesift_tenant", "postgres"})
TENANT_GROUP = "codesift_tenant"


@dataclass
class LoginRole:
    role: str
    tenant: str
    created: bool
    password: str | None  # generated for a new role, shown once


def tenant_id(conn: psycopg.Connection, name: str) -> int:
    row = conn.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()
    if row is None:
        raise CodesiftError(f"unknown tenant '{name}' (codesift status lists the tenants)")
    return row[0]


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


def use_tenant(conn: psycopg.Connection, name: str) -> int:
    """Act as the tenant for the rest of the session."""
    tid = tenant_id(conn, name)
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tid),))
    return tid


def grant_login_role(conn: psycopg.Connection, tenant: str, role: str) -> LoginRole:
    """Give `role` (created with a generated password when missing) exactly one tenant.
    Needs a superuser (or CREATEROLE) connection: the DSN `codesift migrate` uses."""
    if role in RESERVED_ROLES or not role or len(role) > 63:
        raise CodesiftError(f"'{role}' cannot be a per-tenant role: choose another name")
    tid = tenant_id(conn, tenant)
    existing = conn.execute(
        "select rolsuper, rolbypassrls, rolinherit,"
        " pg_has_role(oid, 'codesift_app', 'MEMBER') or pg_has_role(oid, 'codesift_loader',"
        " 'MEMBER') from pg_roles where rolname = %s",
        (role,),
    ).fetchone()
    if existing:
        superuser, bypass, inherit, trusted = existing
        if superuser or bypass or trusted:
            raise CodesiftError(
                f"role '{role}' is a superuser, bypasses row-level security or acts as the "
                "application or loader role: it would see every tenant. Use a plain role."
            )
        if not inherit:
            raise CodesiftError(
                f"role '{role}' is NOINHERIT, so it would not get codesift_tenant's rights: "
                f"ALTER ROLE {role} INHERIT, or choose another role"
            )
    mapped = conn.execute(
        "select t.name from codesift.tenant_roles r join codesift.tenants t on t.id = r.tenant_id"
        " where r.role_name = %s",
        (role,),
    ).fetchone()
    if mapped and mapped[0] != tenant:
        raise CodesiftError(f"role '{role}' already belongs to tenant '{mapped[0]}'")
    password = None
    try:
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
    except psycopg.errors.InsufficientPrivilege as exc:
        raise CodesiftError(
            f"this DSN's role may not create or grant roles ({exc.diag.message_primary}); "
            "run it with the DSN you migrate with (a superuser or CREATEROLE role)"
        ) from None
    return LoginRole(role, tenant, not existing, password)


def forget_repository(
    conn: psycopg.Connection, tenant: str, repo: str, ref: str | None = None
) -> int:
    """Remove one repository of the tenant, or only its indexed ref `ref`; returns the
    number of blobs no longer used."""
    use_tenant(conn, tenant)
    try:
        with db.tenant_transaction(conn):
            row = conn.execute("select codesift.forget_repository(%s, %s)", (repo, ref)).fetchone()
            assert row is not None  # a function call returns one row
            return row[0]
    except psycopg.errors.UndefinedObject as exc:
        at = f" at ref '{ref}'" if ref else ""
        raise CodesiftError(f"tenant '{tenant}' has no repository '{repo}'{at}") from exc


def forget_tenant(conn: psycopg.Connection, tenant: str) -> None:
    """Remove the tenant and everything it owned."""
    use_tenant(conn, tenant)
    with db.tenant_transaction(conn):
        conn.execute("select codesift.forget_tenant()")
    conn.execute("select set_config('app.current_tenant_id', '', false)")
