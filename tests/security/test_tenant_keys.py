"""Attacks on tenant-blind keys, as the application role with tenant A (acme) set against
tenant B (globex), both holding a repository named 'shared' with overlapping content.

Foreign-key and unique checks ignore row-level security: with keys on repository_id or
symbol_id alone, A could probe B's paths, plant rows in B's repository and have B's own
queries pack them. Every such key now leads with tenant_id."""

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from .two_tenants import index_two_tenants

CODESIFT = Path(sys.executable).with_name("codesift")


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


def _error(conn, statement, params):
    with pytest.raises(psycopg.Error) as info:
        conn.execute(statement, params)
    return info.value.sqlstate, info.value.diag.message_primary


def test_every_key_reaching_tenant_data_leads_with_tenant_id(db):
    # every foreign key between tenant tables carries tenant_id on both sides
    rows = db.execute(
        """
        select c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text,
            array(select a.attname from pg_attribute a
                  where a.attrelid = c.conrelid and a.attnum = any(c.conkey)) as cols
        from pg_constraint c
        where c.contype = 'f' and c.connamespace = 'codesift'::regnamespace
            and c.confrelid <> 'codesift.tenants'::regclass
        """
    ).fetchall()
    assert rows
    for name, table, target, cols in rows:
        assert "tenant_id" in cols, (name, table, target)
    # and every primary or unique key of a tenant table leads with it (an identity column
    # alone aside: it names no tenant data, and (tenant_id, id) is unique where referenced)
    keys = db.execute(
        """
        select c.conname, a.attname, a.attidentity <> '' and cardinality(c.conkey) = 1
        from pg_constraint c
        join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
        where c.contype in ('p', 'u') and c.connamespace = 'codesift'::regnamespace
            and exists (select from pg_attribute t where t.attrelid = c.conrelid
                        and t.attname = 'tenant_id' and not t.attisdropped)
        """
    ).fetchall()
    assert len(keys) > 5
    for name, first, identity in keys:
        if name == "tenant_roles_pkey":
            continue  # a login role belongs to one tenant; only a superuser writes it
        assert first == "tenant_id" or identity, name


def test_a_cannot_learn_whether_a_path_exists_in_b(two, app_connect):
    acme, globex = two["acme"], two["globex"]
    conn = app_connect(acme.id)
    sha = conn.execute("select blob_sha from files where path = 'app/session.py'").fetchone()[0]
    insert = "insert into files (repository_id, tenant_id, path, blob_sha) values (%s, %s, %s, %s)"
    # B's repository id under A's tenant: the same refusal whether B has the path or not
    present = _error(conn, insert, (globex.repo_id, acme.id, "app/secret_globex.py", sha))
    absent = _error(conn, insert, (globex.repo_id, acme.id, "app/no_such_file.py", sha))
    assert present[0] == absent[0] == "23503"  # no such repository for this tenant
    assert present == absent
    # under B's tenant id: row-level security refuses, again identically
    present = _error(conn, insert, (globex.repo_id, globex.id, "app/secret_globex.py", sha))
    absent = _error(conn, insert, (globex.repo_id, globex.id, "app/no_such_file.py", sha))
    assert present[0] == absent[0] == "42501"
    assert present == absent


def test_a_cannot_plant_rows_in_bs_repository(two, app_connect, db, dsn):
    acme, globex = two["acme"], two["globex"]
    conn = app_connect(acme.id)
    sha = conn.execute("select blob_sha from files where path = 'app/secret_acme.py'").fetchone()[0]
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "insert into files (repository_id, tenant_id, path, blob_sha)"
            " values (%s, %s, 'app/planted.py', %s)",
            (globex.repo_id, acme.id, sha),
        )
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "insert into file_edges (tenant_id, repository_id, source_path, target_path,"
            " relation) values (%s, %s, 'app/session.py', 'app/secret_acme.py', 'import')",
            (acme.id, globex.repo_id),
        )
    symbol = db.execute(
        "select id from code_symbols where tenant_id = %s limit 1", (globex.id,)
    ).fetchone()[0]
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "insert into symbol_terms (tenant_id, symbol_id, term, tf) values (%s, %s, 'x', 1)",
            (acme.id, symbol),
        )
    # resolve_edges of B's repository id from A's session: B's repository is not there
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("select resolve_edges(%s)", (globex.repo_id,))
    before = db.execute(
        "select count(*) from files where tenant_id = %s and live", (acme.id,)
    ).fetchone()[0]
    # B re-indexes and asks: nothing of A's, and A's rows are untouched
    env = {**os.environ, "CODESIFT_DSN": dsn}
    index = subprocess.run(
        [
            str(CODESIFT),
            "index",
            str(globex.root),
            "--name",
            "shared",
            "--tenant",
            "globex",
            "--no-embed",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert index.returncode == 0, index.stderr
    ask = subprocess.run(
        [
            str(CODESIFT),
            "ask",
            "token vault zebra follow redirects",
            "--repo",
            "shared",
            "--tenant",
            "globex",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ask.returncode == 0, ask.stderr
    assert "globexzebra" in ask.stdout
    assert "acme" not in ask.stdout
    after = db.execute(
        "select count(*) from files where tenant_id = %s and live", (acme.id,)
    ).fetchone()[0]
    assert after == before


def test_migration_removes_rows_planted_across_tenants(db, two):
    # rows planted before the keys existed (the owner bypasses them here only to build one)
    acme, globex = two["acme"], two["globex"]
    db.execute("set session_replication_role = replica")  # skip FK triggers for the setup
    db.execute(
        "insert into files (repository_id, tenant_id, path, blob_sha)"
        " select %s, %s, 'app/planted.py', blob_sha from files where tenant_id = %s limit 1",
        (globex.repo_id, acme.id, acme.id),
    )
    db.execute("set session_replication_role = origin")
    migration = (
        Path(__file__).resolve().parents[2] / "sql" / "incremental" / "008-tenant-keys.sql"
    ).read_text()
    cleanup = migration.split("alter table", 1)[0]  # the deletes that precede the new keys
    cleanup = cleanup.replace("codesift.code_symbol_edges", "codesift.file_edges")  # 022
    db.execute(cleanup)
    planted = db.execute("select count(*) from files where path = 'app/planted.py'").fetchone()
    assert planted[0] == 0


def test_owner_statements_name_the_tenant(two, db):
    # the pipeline's statements carry the tenant even where RLS does not apply (a superuser)
    acme = two["acme"]
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(acme.id),))
    rows = db.execute(
        "select path, text from pack_context('token vault zebra', repo => 'shared')"
    ).fetchall()
    assert rows
    joined = " ".join(p + t for p, t in rows)
    assert "acmezebra" in joined and "globex" not in joined
