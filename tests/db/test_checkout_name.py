"""A checkout indexed under a name keeps it: indexing it again without a name (codesift
index, watch, the hooks, the MCP tool sync_index) finds its repository by the checkout's
path (repositories.checkout_path) instead of adding a copy under the folder's name."""

import subprocess

import psycopg
from codesift.indexer import index_repository, indexed_name

from tests.conftest import commit, write_files
from tests.mcp.harness import CODESIFT


def _names(dsn):
    with psycopg.connect(dsn) as conn:
        return conn.execute("select distinct name from codesift.repositories").fetchall()


def test_index_without_a_name_keeps_the_checkouts_name(dsn, make_repo):
    root = make_repo({"app.py": "def main():\n    return 1\n"}, name="flask-main")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="flask", tenant="acme", embed=False, show_progress=False)
    write_files(root, {"views.py": "def view():\n    return 2\n"})
    commit(root, "views")
    out = subprocess.run(
        [CODESIFT, "index", str(root / "."), "--tenant", "acme", "--no-embed"],
        capture_output=True,
        text=True,
        env={"CODESIFT_DSN": dsn, "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert _names(dsn) == [("flask",)]
    # a name given is used as given: a second repository, on purpose
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="fork", tenant="acme", embed=False, show_progress=False)
    assert sorted(_names(dsn)) == [("flask",), ("fork",)]


def test_indexed_name_of_a_checkout(dsn, make_repo, tmp_path):
    root = make_repo({"app.py": "x = 1\n", "pkg/b.py": "y = 1\n"}, name="checkout")
    other = make_repo({"b.py": "y = 2\n"}, name="other")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="flask", tenant="acme", embed=False, show_progress=False)
        assert indexed_name(conn, "acme", root) == "flask"
        assert indexed_name(conn, "acme", root / "pkg") == "flask"  # any folder in it
        assert indexed_name(conn, "acme", other) is None  # not indexed
        assert indexed_name(conn, "nobody", root) is None  # no such tenant: nothing created
        assert indexed_name(conn, "acme", tmp_path / "nowhere") is None
        tenants = conn.execute("select name from codesift.tenants").fetchall()
    assert tenants == [("acme",)]
