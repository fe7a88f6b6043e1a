"""`codesift index` on real temporary git repositories against a real database."""

import os
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest
from codesift.errors import IndexingError
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"

APP = '''"""The application."""
from .models import User
from . import util


class App:
    def __init__(self, name):
        self.name = name

    def greet(self, user: User) -> str:
        return util.shout(f"hello {user.name}")


def make_app():
    return App("demo")
'''
MODELS = """class User:
    def __init__(self, name):
        self.name = name
"""
UTIL = """def shout(text):
    return text.upper()


def whisper(text):
    return text.lower()
"""
ROUTER_JS = """const helpers = require('./helpers');
const { parse } = require('./lib');

function searchBlobs(query) {
  return helpers.find(parse(query));
}

module.exports = { searchBlobs };
"""
HELPERS_JS = "exports.find = function find(q) { return [q]; };\n"
LIB_INDEX_JS = "export function parse(q) { return q.trim(); }\n"
README = "# Demo\n\nSome text.\n\n## Usage\n\nRun it.\n"

FILES = {
    "pkg/__init__.py": "",
    "pkg/app.py": APP,
    "pkg/models.py": MODELS,
    "pkg/util.py": UTIL,
    "web/router.js": ROUTER_JS,
    "web/helpers.js": HELPERS_JS,
    "web/lib/index.js": LIB_INDEX_JS,
    "README.md": README,
    "notes/old.txt": "to be removed\n",
}


def _index(dsn, path, **kw):
    with psycopg.connect(dsn) as conn:
        return index_repository(conn, path, show_progress=False, **kw)


def _live(db, repo="repo"):
    return dict(
        db.execute(
            "select f.path, f.blob_sha from files f join repositories r on r.id = f.repository_id"
            " where r.name = %s and f.live",
            (repo,),
        ).fetchall()
    )


def test_incremental_reindex_touches_only_changed_content(db, dsn, make_repo):
    root = make_repo(FILES)
    first = _index(dsn, root)
    assert first.files == len(FILES)
    assert first.new_blobs == len(FILES)
    symbols_before = db.execute("select count(*) from code_symbols").fetchone()[0]
    assert first.new_symbols == symbols_before > 0
    assert first.embedded.symbols == symbols_before
    assert first.embedded.blobs == first.new_blobs
    before = _live(db)

    # change 2 files, remove 1, rename 1
    write_files(
        root,
        {
            "pkg/util.py": UTIL + "\n\ndef mumble(text):\n    return text[:3]\n",
            "web/helpers.js": HELPERS_JS + "exports.count = function count(q) { return 1; };\n",
        },
    )
    os.remove(root / "notes" / "old.txt")
    git(root, "mv", "pkg/models.py", "pkg/entities.py")
    commit(root, "change two, remove one, rename one")

    second = _index(dsn, root)
    assert second.new_blobs == 2
    new_symbols = db.execute(
        "select count(*) from code_symbols s join files f on f.blob_sha = s.blob_sha"
        " where f.live and f.path in ('pkg/util.py', 'web/helpers.js')"
    ).fetchone()[0]
    assert second.new_symbols == new_symbols
    assert second.embedded.symbols == new_symbols
    assert second.embedded.blobs == 2
    assert second.removed_paths == 2  # notes/old.txt and the rename's old path
    after = _live(db)
    assert "notes/old.txt" not in after and "pkg/models.py" not in after
    assert after["pkg/entities.py"] == before["pkg/models.py"]  # the rename reused the blob
    assert db.execute("select count(*) from files where not live").fetchone()[0] == 2

    third = _index(dsn, root)
    assert (third.new_blobs, third.new_symbols, third.embedded.symbols, third.embedded.blobs) == (
        0,
        0,
        0,
        0,
    )
    assert third.removed_paths == 0


def test_symbols_edges_and_lexemes_in_database(db, dsn, make_repo):
    root = make_repo(FILES)
    _index(dsn, root, embed=False)
    rows = db.execute(
        "select qualified_name, kind, start_line, end_line from code_symbols s"
        " join files f on f.blob_sha = s.blob_sha where f.path = 'pkg/app.py' order by start_line"
    ).fetchall()
    assert ("App", "class", 6, 11) in rows
    assert ("App.greet", "method", 10, 11) in rows
    assert ("make_app", "function", 14, 15) in rows
    edges = set(db.execute("select source_path, target_path from file_edges").fetchall())
    assert {
        ("pkg/app.py", "pkg/models.py"),
        ("pkg/app.py", "pkg/util.py"),
        ("web/router.js", "web/helpers.js"),
        ("web/router.js", "web/lib/index.js"),
    } <= edges
    names = db.execute(
        "select names from file_edges where target_path = 'pkg/models.py'"
    ).fetchone()[0]
    assert names == ["User"]
    # identifier-aware lexemes: searchBlobs matches 'search', 'blobs' and 'searchblobs'
    for term in ("search", "blobs", "searchblobs"):
        hit = db.execute(
            "select count(*) from code_symbols where lexemes @@ to_tsquery('simple', %s)"
            " and name = 'searchBlobs'",
            (term,),
        ).fetchone()[0]
        assert hit == 1, term
    path_hit = db.execute(
        "select path from files where lexemes @@ to_tsquery('simple', 'router')"
    ).fetchall()
    assert ("web/router.js",) in path_hit
    md = db.execute(
        "select qualified_name, kind from code_symbols where kind = 'section' order by start_line"
    ).fetchall()
    assert [k for _, k in md] == ["section", "section"]


def test_worktree_changes_are_indexed(db, dsn, make_repo):
    root = make_repo(FILES)
    write_files(
        root,
        {
            "pkg/util.py": UTIL + "\ndef draft():\n    return 'wip'\n",
            "pkg/new_module.py": "def brand_new():\n    return 1\n",
        },
    )
    os.remove(root / "README.md")
    summary = _index(dsn, root, worktree=True, embed=False)
    live = _live(db)
    assert "README.md" not in live
    expected = git(root, "hash-object", "pkg/new_module.py").strip()
    assert live["pkg/new_module.py"] == expected
    assert (
        db.execute(
            "select count(*) from code_symbols where name in ('draft', 'brand_new')"
        ).fetchone()[0]
        == 2
    )
    assert summary.files == len(FILES)  # +1 untracked, -1 deleted
    assert db.execute("select indexed_worktree from repositories").fetchone()[0] is True


def test_skips_are_counted_and_content_survives(db, dsn, make_repo, tmp_path):
    root = make_repo(
        {
            "ok.py": "def fine():\n    return 1\n",
            "latin1.py": "",
            "image.png": "",
            "big.txt": "",
            "oneline.js": "",
        }
    )
    (root / "latin1.py").write_bytes("def caf\xe9():\n    return 'ol\xe9'\n".encode("latin-1"))
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    (root / "big.txt").write_text("x" * 3000)
    (root / "oneline.js").write_text("var a=" + "1+" * 100_000 + "1;")
    os.symlink("ok.py", root / "link.py")
    os.symlink("loop", root / "loop")
    commit(root, "awkward files")
    summary = _index(dsn, root, max_bytes=2500, embed=False)
    assert summary.skipped["binary"] == 1
    assert summary.skipped["larger than 2,500 bytes"] == 2  # big.txt, oneline.js
    assert summary.skipped["symlink"] == 2
    live = _live(db)
    assert set(live) == {"ok.py", "latin1.py"}
    content = db.execute(
        "select content from blobs where sha = %s", (live["latin1.py"],)
    ).fetchone()[0]
    assert "caf\ufffd" in content  # decoded with replacement, not dropped


def test_bad_paths_and_refs_are_clear_errors(dsn, tmp_path, make_repo):
    with pytest.raises(IndexingError, match="not a git repository"):
        _index(dsn, tmp_path)
    with pytest.raises(IndexingError, match="does not exist"):
        _index(dsn, tmp_path / "nope")
    root = make_repo({"a.py": "x = 1\n"})
    with pytest.raises(IndexingError, match="unknown ref 'no-such-branch'"):
        _index(dsn, root, ref="no-such-branch")
    result = subprocess.run(
        [str(CODESIFT), "index", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn},
    )
    assert result.returncode == 1
    assert "not a git repository" in result.stderr and "Traceback" not in result.stderr


def test_two_tenants_store_the_same_file_apart(db, dsn, make_repo):
    root = make_repo({"a.py": "def shared():\n    return 1\n"})
    _index(dsn, root, tenant="acme", embed=False)
    _index(dsn, root, tenant="globex", embed=False)
    rows = db.execute("select tenant_id, sha from blobs").fetchall()
    assert len(rows) == 2 and rows[0][1] == rows[1][1] and rows[0][0] != rows[1][0]
    assert db.execute("select count(*) from code_symbols").fetchone()[0] == 2


def _many_files(n: int) -> dict[str, str]:
    return {
        f"mod{i:04d}.py": f"def function_{i}(x):\n    return x + {i}\n\n\nclass Thing{i}:\n"
        f"    def method(self):\n        return {i}\n"
        for i in range(n)
    }


def _consistent(db) -> None:
    orphans = db.execute(
        "select count(*) from blobs b where language = 'python'"
        " and not exists (select from code_symbols s where s.blob_sha = b.sha)"
    ).fetchone()[0]
    assert orphans == 0, "a blob without its symbols"
    dangling = db.execute(
        "select count(*) from code_symbols s"
        " where not exists (select from blobs b where b.sha = s.blob_sha)"
    ).fetchone()[0]
    assert dangling == 0


def test_killed_loader_leaves_a_consistent_index(db, dsn, make_repo):
    root = make_repo(_many_files(1500))
    proc = subprocess.Popen(
        [str(CODESIFT), "index", str(root), "--no-embed"],
        env={**os.environ, "CODESIFT_DSN": dsn},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if db.execute("select count(*) from blobs").fetchone()[0] > 0:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    pushed = db.execute("select count(*) from blobs").fetchone()[0]
    assert 0 < pushed < 1500, "the loader was not killed mid-run"
    # no half-written tree: the tree is recorded only after every blob is in
    assert db.execute("select count(*) from files").fetchone()[0] == 0
    _consistent(db)
    summary = _index(dsn, root, embed=False)
    assert summary.new_blobs == 1500 - pushed
    assert summary.files == 1500
    _consistent(db)


def test_two_loaders_at_once_serialise(db, dsn, make_repo):
    root = make_repo(_many_files(300))
    env = {**os.environ, "CODESIFT_DSN": dsn}
    procs = [
        subprocess.Popen(
            [str(CODESIFT), "index", str(root), "--no-embed"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert db.execute("select count(*) from blobs").fetchone()[0] == 300
    assert db.execute("select count(*) from files where live").fetchone()[0] == 300
    _consistent(db)


def test_status_reports_stale_heads(db, dsn, make_repo):
    root = make_repo(FILES)
    _index(dsn, root, embed=False)
    write_files(root, {"pkg/later.py": "def later():\n    return 2\n"})
    commit(root, "moved on")
    result = subprocess.run(
        [str(CODESIFT), "status"],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "repo" in line and "default" in line)
    assert "yes" in row  # stale: HEAD moved past the indexed commit
    head = git(root, "rev-parse", "HEAD").strip()
    # remembered, so that pack_context warns every client that the index is behind
    assert db.execute("select head_commit from repositories").fetchone()[0] == head
