"""Forgetting a repository or a tenant removes everything it owned, counted in every table,
and leaves BM25 statistics exactly as if the rest had been indexed alone."""

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from codesift.embedder import embed_pending
from codesift.indexer import index_repository
from codesift.tenants import forget_repository, forget_tenant

from .two_tenants import COMMON, counts, index_two_tenants, secret_files

CODESIFT = Path(sys.executable).with_name("codesift")
OTHER = {
    "lib/other.py": "from app.redirects import follow_redirects\n\n\ndef other_thing(x):\n"
    "    return follow_redirects(x, 2)\n",
    "app/redirects.py": COMMON["app/redirects.py"],  # shared with 'shared'
}


def _stats(db, tenant_id):
    terms = db.execute(
        "select tier, term, df from term_stats where tenant_id = %s order by 1, 2", (tenant_id,)
    ).fetchall()
    corpus = db.execute(
        "select tier, docs, total_terms from corpus_stats where tenant_id = %s order by 1",
        (tenant_id,),
    ).fetchall()
    return terms, corpus


def _index(dsn, root, name, tenant):
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name=name, tenant=tenant, embed=False, show_progress=False)


def test_forget_repository_leaves_what_others_use_and_exact_statistics(db, dsn, make_repo):
    two = index_two_tenants(dsn, make_repo)
    acme, globex = two["acme"], two["globex"]
    other = make_repo(OTHER, name="other")
    _index(dsn, other, "other", "acme")
    _index(dsn, other, "other", "fresh")  # the same repository alone, for the statistics
    fresh = db.execute("select id from tenants where name = 'fresh'").fetchone()[0]
    globex_before = counts(db, globex.id)
    shared_blob = db.execute(
        "select blob_sha from files where tenant_id = %s and path = 'app/redirects.py'",
        (acme.id,),
    ).fetchone()[0]

    with psycopg.connect(dsn, autocommit=True) as conn:
        removed = forget_repository(conn, "acme", "shared")
    assert removed == len(COMMON) + len(secret_files("acme")) - 1  # redirects.py stays

    after = counts(db, acme.id)
    assert after["repositories"] == 1
    assert after["files"] == len(OTHER)
    assert after["file_edges"] == 1
    assert after["blobs"] == len(OTHER)
    assert (
        db.execute(
            "select count(*) from blobs where tenant_id = %s and sha = %s", (acme.id, shared_blob)
        ).fetchone()[0]
        == 1
    )
    # nothing of 'shared' is left anywhere (symbols, postings, imports of its blobs)
    assert after == counts(db, fresh) | {"tenant_roles": after["tenant_roles"]}
    assert _stats(db, acme.id) == _stats(db, fresh)
    assert counts(db, globex.id) == globex_before


def test_forget_tenant_removes_every_row_it_owned(db, dsn, make_repo):
    two = index_two_tenants(dsn, make_repo)
    acme, globex = two["acme"], two["globex"]
    # what the index does not fill: a token and a login-role mapping of each tenant
    for tenant in (acme, globex):
        db.execute(
            "insert into mcp_tokens (tenant_id, token_hash) values (%s, %s)",
            (tenant.id, f"{tenant.id:064x}"),
        )
        db.execute(
            "insert into tenant_roles (role_name, tenant_id) values (%s, %s)",
            (f"role_of_{tenant.name}", tenant.id),
        )
        # and what `codesift learn` stores: a mined commit and a model of a repository
        repository = db.execute(
            "select id from repositories where tenant_id = %s limit 1", (tenant.id,)
        ).fetchone()[0]
        db.execute(
            "insert into history_pairs (tenant_id, repository_id, commit_sha, committed_at,"
            " question, gold) values (%s, %s, %s, now(), 'fix it', '[]')",
            (tenant.id, repository, "a" * 40),
        )
        db.execute(
            "insert into ranker_models (tenant_id, repository_id, model, trained_through,"
            " pairs) values (%s, %s, '{}', %s, 1)",
            (tenant.id, repository, "a" * 40),
        )
        # and vectors, which the two tenants compute for the same texts each
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("set role codesift_loader")
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant.id),))
            embed_pending(conn, tenant.id, show_progress=False)
    globex_before = counts(db, globex.id)
    globex_stats = _stats(db, globex.id)
    assert all(n > 0 for n in counts(db, acme.id).values())
    with psycopg.connect(dsn, autocommit=True) as conn:
        forget_tenant(conn, "acme")
    assert set(counts(db, acme.id).values()) == {0}
    assert counts(db, globex.id) == globex_before
    assert _stats(db, globex.id) == globex_stats


def test_forget_runs_for_the_sessions_tenant_only(db, dsn, make_repo, app_connect):
    two = index_two_tenants(dsn, make_repo)
    acme, globex = two["acme"], two["globex"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(acme.id),))
        # the loader acting as acme: globex's repository of the same name is not its to remove
        conn.execute("select forget_repository('shared')")
        conn.execute("select forget_tenant()")
        conn.execute("select set_config('app.current_tenant_id', '', false)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no tenant"):
            conn.execute("select forget_tenant()")
    assert counts(db, globex.id)["files"] == len(COMMON) + 1
    # the application role may not forget at all
    app = app_connect(globex.id)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("select forget_repository('shared')")


def test_forget_cli(db, dsn, make_repo):
    two = index_two_tenants(dsn, make_repo)
    env = {**os.environ, "CODESIFT_DSN": dsn}

    def cli(*args):
        return subprocess.run(
            [str(CODESIFT), "forget", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    refused = cli("shared", "--tenant", "acme")
    assert refused.returncode == 1 and "without --yes" in refused.stderr
    assert "Traceback" not in refused.stderr
    missing = cli("nope", "--tenant", "acme", "--yes")
    assert missing.returncode == 1 and "has no repository 'nope'" in missing.stderr
    done = cli("shared", "--tenant", "acme", "--yes")
    assert done.returncode == 0, done.stderr
    assert counts(db, two["acme"].id)["repositories"] == 0
    gone = cli("--whole-tenant", "--tenant", "globex", "--yes")
    assert gone.returncode == 0, gone.stderr
    assert db.execute("select count(*) from tenants where name = 'globex'").fetchone()[0] == 0
