"""`codesift index` extracts the references of blobs stored before references were (an
index made by an older version): on a re-index of an unchanged commit and on one with new
commits, for the indexing tenant only, and does nothing when nothing is pending."""

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from codesift.indexer import index_repository

from tests.conftest import commit, write_files

CODESIFT = Path(sys.executable).with_name("codesift")
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def helper(x):\n    return x\n",
    "pkg/use.py": "from pkg.core import helper\n\n\ndef run():\n    return helper(1)\n",
}


def _index(dsn, root, name, tenant):
    with psycopg.connect(dsn) as conn:
        return index_repository(
            conn, root, name=name, tenant=tenant, embed=False, show_progress=False
        )


def _tenant(db, name):
    return db.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()[0]


def _forget_references(db, tenant):
    """As on a database indexed before references were extracted."""
    db.execute(
        "update codesift.blobs set references_extracted = false where tenant_id = %s", (tenant,)
    )
    db.execute("delete from codesift.code_references where tenant_id = %s", (tenant,))


def _pending(db, tenant):
    return db.execute(
        "select count(*) from codesift.blobs where tenant_id = %s and not references_extracted",
        (tenant,),
    ).fetchone()[0]


def _uses(app_connect, tenant):
    conn = app_connect(tenant)
    conn.add_notice_handler(lambda n: None)
    return conn.execute(
        "select path, line, resolution from codesift.find_references('helper', repo => 'r')"
    ).fetchall()


def test_a_reindex_of_the_same_commit_extracts_pending_references(db, dsn, make_repo, app_connect):
    root = make_repo(FILES, name="r")
    _index(dsn, root, "r", "acme")
    _index(dsn, make_repo(FILES, name="r2"), "r", "globex")  # the same blobs, another tenant
    acme, globex = _tenant(db, "acme"), _tenant(db, "globex")
    expected = _uses(app_connect, acme)
    assert ("pkg/use.py", 5, "resolved") in expected
    _forget_references(db, acme)
    _forget_references(db, globex)
    assert _uses(app_connect, acme) == []

    summary = _index(dsn, root, "r", "acme")
    assert summary.unchanged  # nothing new to index, the references still come back
    assert summary.references_backfilled == len(FILES)
    assert _pending(db, acme) == 0
    assert _uses(app_connect, acme) == expected
    # the other tenant's blobs are its own: untouched until it indexes
    assert _pending(db, globex) == len(FILES)
    assert _uses(app_connect, globex) == []

    again = _index(dsn, root, "r", "acme")
    assert again.unchanged and again.references_backfilled == 0


def test_an_index_of_new_commits_also_extracts_pending_references(db, dsn, make_repo, app_connect):
    root = make_repo(FILES, name="r")
    _index(dsn, root, "r", "acme")
    acme = _tenant(db, "acme")
    _forget_references(db, acme)
    write_files(
        root, {"pkg/more.py": "from pkg import core\n\n\ndef more():\n    return core.helper(2)\n"}
    )
    commit(root, "more")

    summary = _index(dsn, root, "r", "acme")
    assert not summary.unchanged and summary.new_blobs == 1
    assert summary.references_backfilled == len(FILES)
    assert _pending(db, acme) == 0
    assert {r[:2] for r in _uses(app_connect, acme)} >= {("pkg/use.py", 5), ("pkg/more.py", 5)}


def test_the_cli_says_how_many_blobs_it_backfilled(db, dsn, make_repo):
    root = make_repo(FILES, name="r")
    env = {**os.environ, "CODESIFT_DSN": dsn}

    def index():
        return subprocess.run(
            [str(CODESIFT), "index", str(root), "--name", "r", "--tenant", "acme"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    first = index()
    assert first.returncode == 0, first.stderr
    _forget_references(db, _tenant(db, "acme"))
    second = index()
    assert second.returncode == 0, second.stderr
    assert f"references extracted for {len(FILES)} stored blob(s)" in second.stderr
    assert "up to date" in second.stderr
    third = index()
    assert "references extracted" not in third.stderr
