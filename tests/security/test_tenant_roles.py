"""Per-tenant login roles (psql sessions, BI tools): a role sees exactly one tenant whatever
it sets, and writes nothing. Two tenants share a repository name and most content."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from codesift.errors import CodesiftError
from codesift.tenants import grant_login_role
from psycopg.conninfo import make_conninfo

from .two_tenants import index_two_tenants, tenant_tables

CODESIFT = Path(sys.executable).with_name("codesift")


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


@pytest.fixture
def login_role(db, dsn):
    """A per-tenant role for acme, made by the real grant path; dropped afterwards."""
    made: list[str] = []
    opened: list[psycopg.Connection] = []

    def make(tenant: str = "acme"):
        role = f"bi_{uuid.uuid4().hex[:12]}"
        made.append(role)
        granted = grant_login_role(db, tenant, role)
        assert granted.created and granted.password
        conn = psycopg.connect(
            make_conninfo(dsn, user=role, password=granted.password), autocommit=True
        )
        opened.append(conn)
        return conn

    yield make
    for conn in opened:
        conn.close()
    for role in made:
        db.execute(f"drop owned by {role}")
        db.execute(f"drop role if exists {role}")


def test_sees_only_its_tenant_whatever_it_sets(two, login_role):
    conn = login_role("acme")
    acme, globex = two["acme"], two["globex"]
    for setting in (None, str(globex.id), str(acme.id), "", "999999"):
        if setting is not None:
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (setting,))
        assert conn.execute("select array_agg(id) from tenants").fetchone()[0] == [acme.id]
        for table in ("repositories", "blobs", "files", "code_symbols", "symbol_terms"):
            ids = conn.execute(f"select array_agg(distinct tenant_id) from {table}").fetchone()[0]
            assert ids == [acme.id], (table, setting)
        rows = conn.execute(
            "select path, text from pack_context('token vault zebra', repo => 'shared')"
        ).fetchall()
        text = " ".join(p + t for p, t in rows)
        assert "acmezebra" in text and "globex" not in text, setting
        # a leg asked for the other tenant by id returns nothing
        leg = (
            "select count(*) from _bm25_symbols(%s::bigint, array['token', 'vault'],"
            " %s::bigint[], null, null, null, 10, 1.2, 0.75)"
        )
        assert conn.execute(leg, (globex.id, [globex.repo_id])).fetchone()[0] == 0
        assert conn.execute(leg, (acme.id, [acme.repo_id])).fetchone()[0] > 0


def test_writes_nothing_and_cannot_become_another_role(two, login_role):
    conn = login_role("acme")
    acme = two["acme"]
    for statement in (
        "delete from files",
        "update repositories set name = 'x'",
        "insert into tenants (name) values ('mine')",
        f"insert into repositories (tenant_id, name) values ({acme.id}, 'x')",
        f"select resolve_edges({acme.repo_id})",
        "select forget_tenant()",
        "select forget_repository('shared')",
        "insert into tenant_roles values (current_user, 1)",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
    for role in ("codesift_app", "codesift_loader", "postgres"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"set role {role}")
    # its group role has no tenant of its own: as it, nothing at all
    conn.execute("set role codesift_tenant")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(acme.id),))
    assert conn.execute("select count(*) from blobs").fetchone()[0] == 0


def test_refuses_roles_that_would_see_every_tenant(two, db):
    for role in ("codesift_app", "codesift_loader", "postgres"):
        with pytest.raises(CodesiftError, match="cannot be a per-tenant role"):
            grant_login_role(db, "acme", role)
    strong = f"strong_{uuid.uuid4().hex[:12]}"
    db.execute(f"create role {strong} login bypassrls")
    try:
        with pytest.raises(CodesiftError, match="bypasses row-level security"):
            grant_login_role(db, "acme", strong)
    finally:
        db.execute(f"drop role {strong}")
    with pytest.raises(CodesiftError, match="unknown tenant"):
        grant_login_role(db, "no-such-tenant", f"bi_{uuid.uuid4().hex[:12]}")


def test_one_role_one_tenant(two, db, login_role):
    conn = login_role("acme")
    role = conn.execute("select current_user").fetchone()[0]
    with pytest.raises(CodesiftError, match="already belongs to tenant 'acme'"):
        grant_login_role(db, "globex", role)
    # granting the same tenant again is a no-op
    assert not grant_login_role(db, "acme", role).created


def test_tenant_create_cli_prints_a_working_login(dsn, two, db):
    role = f"bi_{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "CODESIFT_DSN": dsn}
    try:
        out = subprocess.run(
            [str(CODESIFT), "tenant", "create", "acme", "--login-role", role],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        password = out.stdout.strip()
        assert "already exists" in out.stderr and f"user={role}" in out.stderr
        with psycopg.connect(make_conninfo(dsn, user=role, password=password)) as conn:
            seen = conn.execute("select array_agg(name) from tenants").fetchone()[0]
            assert seen == ["acme"]
    finally:
        db.execute(f"drop owned by {role}")
        db.execute(f"drop role if exists {role}")


def test_every_tenant_table_has_forced_policies(db):
    tables = tenant_tables(db)
    assert {"files", "blobs", "code_symbols", "term_stats", "tenant_roles"} <= set(tables)
    for table in tables:
        forced, policies = db.execute(
            "select c.relrowsecurity and c.relforcerowsecurity,"
            " (select count(*) from pg_policy p where p.polrelid = c.oid)"
            " from pg_class c where c.oid = %s::regclass",
            (f"codesift.{table}",),
        ).fetchone()
        assert forced and policies >= 1, table
