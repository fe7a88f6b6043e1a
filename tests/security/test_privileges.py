"""Who may run what: nothing of codesift's is executable by PUBLIC, a role that is none of
codesift's runs nothing, and the roles keep working after `revoke ... from public`."""

import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from .two_tenants import index_two_tenants

ENTRY_POINTS = (
    "pack_context",
    "pack_context_text",
    "pack_context_flat",
    "explain_context",
    "hybrid_search",
)


def test_public_executes_nothing(db):
    rows = db.execute(
        "select p.oid::regprocedure::text from pg_proc p"
        " where p.pronamespace = 'codesift'::regnamespace"
        " and has_function_privilege('public', p.oid, 'execute')"
    ).fetchall()
    assert rows == []


def test_a_stranger_role_gets_nothing(db, dsn, make_repo):
    two = index_two_tenants(dsn, make_repo)
    role = f"stranger_{uuid.uuid4().hex[:12]}"
    db.execute(f"create role {role} login password 'pw'")
    try:
        with psycopg.connect(make_conninfo(dsn, user=role, password="pw")) as conn:
            conn.autocommit = True
            conn.execute(
                "select set_config('app.current_tenant_id', %s, false)", (str(two["acme"].id),)
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select * from codesift.pack_context('redirects', repo => 'shared')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select count(*) from codesift.blobs")
    finally:
        db.execute(f"drop role {role}")


def test_roles_work_after_public_is_revoked(db, dsn, make_repo, app_connect):
    two = index_two_tenants(dsn, make_repo)
    db.execute("revoke all on all functions in schema codesift from public")
    db.execute("revoke all on schema codesift from public")
    app = app_connect(two["acme"].id)
    for fn in ENTRY_POINTS:
        args = "'follow redirects', repo => 'shared'"
        assert app.execute(f"select count(*) from {fn}({args})").fetchone()[0] >= 1, fn
    assert app.execute("select embed_query('x') is null or true").fetchone()[0]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        conn.execute(
            "select set_config('app.current_tenant_id', %s, false)", (str(two["globex"].id),)
        )
        assert conn.execute("select resolve_edges(%s)", (two["globex"].repo_id,)).fetchone()[0]
