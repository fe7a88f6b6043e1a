"""The scale-out entry points refuse cleanly: `codesift migrate --citus` on a server without
Citus changes nothing, the tenant repeated for Citus is quoted, never spliced, and a read
DSN that is not a database fails before any work."""

import os
import subprocess
from pathlib import Path

import psycopg
from codesift import db as codesift_db

from tests.db.test_migrations import _codesift

ROOT = Path(__file__).resolve().parents[2]


def test_migrate_citus_on_a_server_without_citus_changes_nothing(blank_postgresql):
    dsn = blank_postgresql.info.dsn
    done = _codesift("migrate", "--citus", dsn=dsn)
    # no Citus package, or Citus not preloaded (the embedded cluster): refused with the fix
    assert done.returncode != 0
    assert "Citus" in done.stderr or "citus" in done.stderr
    assert "Traceback" not in done.stderr
    assert blank_postgresql.execute("select to_regnamespace('codesift')").fetchone()[0] is None


def test_the_shared_tenant_is_a_quoted_literal(db):
    """share_tenant repeats the session's tenant as SET LOCAL when Citus propagates it; a
    hostile setting is passed as one quoted value (here on one node, with the placeholder
    setting that makes share_tenant act as under Citus)."""
    hostile = "1'; drop table codesift.blobs; --"
    db.autocommit = True
    db.execute("set citus.propagate_set_commands = 'local'")
    db.execute("select set_config('app.current_tenant_id', %s, false)", (hostile,))
    with codesift_db.tenant_transaction(db):
        inside = db.execute("select current_setting('app.current_tenant_id')").fetchone()[0]
    assert inside == hostile
    assert db.execute("select to_regclass('codesift.blobs')").fetchone()[0] is not None


def test_tenant_transaction_sets_nothing_without_a_tenant(db):
    db.autocommit = True
    db.execute("set citus.propagate_set_commands = 'local'")
    with codesift_db.tenant_transaction(db):
        value = db.execute("select current_setting('app.current_tenant_id', true)").fetchone()[0]
    assert not value


def test_ask_with_a_bad_read_dsn_fails_cleanly(dsn):
    env = {
        **os.environ,
        "CODESIFT_DSN": dsn,
        "CODESIFT_READ_DSN": "postgresql://nobody@/nowhere?host=/nonexistent&port=1",
    }
    done = subprocess.run(
        [str(ROOT / ".venv/bin/codesift"), "ask", "anything", "--tenant", "acme"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "cannot connect" in done.stderr and "Traceback" not in done.stderr


def test_the_replica_script_never_takes_the_primarys_folder(tmp_path):
    """The replica's folder is its own: the script refuses the primary's, so a base backup can
    never overwrite the primary (writes on the standby: tests/db/test_replica.py)."""
    base = tmp_path / "same"
    env = {**os.environ, "CODESIFT_DB_DIR": str(base), "CODESIFT_REPLICA_DIR": str(base)}
    done = subprocess.run(
        [str(ROOT / "scripts/replica.sh"), "start"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "must differ" in done.stderr


def test_app_role_cannot_distribute_tables(app_connect):
    """Sharding is the migrating superuser's step: the application role may not call the
    distribution step's statements (create_distributed_table exists only under Citus; the
    DDL it needs is refused to codesift_app everywhere)."""
    conn = app_connect()
    try:
        conn.execute("alter table codesift.blobs drop constraint blobs_pkey")
    except psycopg.errors.InsufficientPrivilege:
        return
    raise AssertionError("codesift_app altered a table")
