"""changed_symbols and diff_context against a real repository indexed at two refs
(tests/db/change_repos.py), and diff_context from the same change given as a git diff: the
changed definitions (added, modified, deleted), their direct callers and the tests that
reach them, packed under the budget with citations; refs and tenants kept apart; budgets,
diff sizes and hostile diff paths refused cleanly."""

import pytest
from psycopg import errors

from tests.db.change_repos import index_change_repos


@pytest.fixture
def change(db, dsn, make_repo, snapshots):
    return snapshots.load("change", index_change_repos, dsn, make_repo)


def _tenant(db, name):
    return db.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()[0]


@pytest.fixture
def conn(db, change, app_connect):
    return app_connect(_tenant(db, "t1"))


def _context(conn, **kw):
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    return conn.execute(
        "select role, ref, path, symbol, reason, tokens, citation, text"
        f" from codesift.diff_context({args})",
        kw,
    ).fetchall()


def test_changed_symbols_between_two_refs(conn):
    rows = conn.execute(
        "select ref, path, symbol, kind, change, changed_lines, citation"
        " from codesift.changed_symbols('py', 'base', 'head')"
    ).fetchall()
    assert rows == [
        # deleted: cited at the base, where it still is
        (
            "base",
            "pkg/client.py",
            "Client.post",
            "method",
            "deleted",
            [8, 9],
            "py:pkg/client.py:8-9",
        ),
        (
            "head",
            "pkg/transport.py",
            "encode",
            "function",
            "modified",
            [5],
            "py:pkg/transport.py:4-5",
        ),
        # only the line it gained, not its class or file
        (
            "head",
            "pkg/transport.py",
            "send_request",
            "function",
            "modified",
            [10],
            "py:pkg/transport.py:8-11",
        ),
        (
            "head",
            "pkg/transport.py",
            "new_helper",
            "function",
            "added",
            [14, 15],
            "py:pkg/transport.py:14-15",
        ),
    ]
    # the other way round, the same change reversed
    back = conn.execute(
        "select symbol, change from codesift.changed_symbols('py', 'head', 'base')"
    ).fetchall()
    assert ("Client.post", "added") in back and ("new_helper", "deleted") in back


def test_diff_context_packs_changes_callers_and_tests_under_the_budget(conn):
    rows = _context(conn, repo="py", base_ref="base", head_ref="head", token_budget=4000)
    by_role = {}
    for r in rows:
        by_role.setdefault(r[0], []).append(r)
    assert [r[3] for r in by_role["change"]] == [
        "encode",
        "send_request",
        "new_helper",
        "Client.post",
    ]
    assert by_role["change"][-1][1:3] == ("base", "pkg/client.py")  # the deleted one's text
    assert "def post(self, url):" in by_role["change"][-1][7]
    # the import added at the top of client.py, outside any definition
    hunk = by_role["hunk"][0]
    assert hunk[2] == "pkg/client.py" and "import os" in hunk[7]
    # the direct caller of send_request at head, and the test that reaches it
    assert [(r[3], r[6]) for r in by_role["caller"]] == [("Client.get", "py:pkg/client.py:6-7")]
    assert [r[3] for r in by_role["test"]] == ["test_get"]
    # each item's text starts with its citation; the tokens sum to at most the budget
    for r in rows:
        assert r[7].startswith("# " + r[6])
    assert sum(r[5] for r in rows) <= 4000


def test_a_small_budget_keeps_the_changes_first(conn):
    rows = _context(conn, repo="py", base_ref="base", head_ref="head", token_budget=120)
    assert sum(r[5] for r in rows) <= 120
    assert rows and rows[0][0] == "change"
    assert _context(conn, repo="py", base_ref="base", head_ref="head", token_budget=1) == []


def test_the_same_change_as_a_diff(conn, change):
    rows = _context(conn, repo="py", diff=change["diff"], token_budget=4000)
    hunks = [r for r in rows if r[0] == "hunk"]
    assert len(hunks) == 3 and all(r[1] == "base" for r in hunks)
    assert any("+    assert body" in r[7] for r in hunks)
    # the base's definitions the hunks touch, callers and tests as the base has them
    changed = {r[3] for r in rows if r[0] == "change"}
    assert changed == {"encode", "send_request", "Client.post"}
    assert {r[3] for r in rows if r[0] == "caller"} == {"Client.get"}
    assert {r[3] for r in rows if r[0] == "test"} == {"test_get"}
    assert sum(r[5] for r in rows) <= 4000
    # ref names the base explicitly
    assert _context(conn, repo="py", diff=change["diff"], ref="base") == _context(
        conn, repo="py", diff=change["diff"]
    )


def test_a_diff_of_a_file_the_ref_does_not_have(conn):
    diff = (
        "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+def brand_new():\n+    return 1\n"
    )
    rows = _context(conn, repo="py", diff=diff)
    assert [(r[0], r[2]) for r in rows] == [("hunk", "pkg/new.py")]
    assert "+def brand_new():" in rows[0][7]


@pytest.mark.parametrize("budget", [0, -1, 200_001, 2**31 - 1])
def test_budgets_out_of_range_are_refused(conn, budget):
    with pytest.raises(errors.InvalidParameterValue, match="token_budget must be between"):
        _context(conn, repo="py", base_ref="base", head_ref="head", token_budget=budget)


def test_missing_or_mixed_arguments_are_refused(conn, change):
    with pytest.raises(errors.NullValueNotAllowed, match="token_budget"):
        _context(conn, repo="py", base_ref="base", head_ref="head", token_budget=None)
    with pytest.raises(errors.NullValueNotAllowed, match="head_ref must not be null"):
        _context(conn, repo="py", base_ref="base")
    with pytest.raises(errors.InvalidParameterValue, match="either head_ref or diff"):
        _context(conn, repo="py", base_ref="base", head_ref="head", diff=change["diff"])
    with pytest.raises(errors.InvalidParameterValue, match="not a unified diff"):
        _context(conn, repo="py", diff="--- a/x\n+++ b/x\n@@ nonsense @@\n")
    with pytest.raises(errors.InvalidParameterValue, match="changes no file"):
        _context(conn, repo="py", diff="just some text\n")


def test_a_ten_megabyte_diff_fails_cleanly(conn, change):
    huge = change["diff"] * (10_000_000 // len(change["diff"]) + 1)
    with pytest.raises(errors.InvalidParameterValue, match="at most 5,000,000"):
        _context(conn, repo="py", diff=huge)
    # the connection is still usable
    assert _context(conn, repo="py", diff=change["diff"])


@pytest.mark.parametrize(
    "path, why",
    [
        ("../../etc/passwd", "goes up a folder"),
        ("pkg/../../../etc/passwd", "goes up a folder"),
        ("/etc/passwd", "is absolute"),
        ("pkg/\x1b[2Jx.py", "control characters"),
        ('"pkg/\\001x.py"', "control characters"),  # git's quoted form
    ],
)
def test_hostile_paths_in_a_diff_are_refused(conn, path, why):
    a = path if path.startswith(('"', "/")) else "a/" + path
    b = path if path.startswith(('"', "/")) else "b/" + path
    diff = f"--- {a}\n+++ {b}\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(errors.InvalidParameterValue, match=why):
        _context(conn, repo="py", diff=diff)


def test_refs_and_tenants_are_kept_apart(db, change, app_connect, conn):
    with pytest.raises(errors.UndefinedObject, match="no indexed ref 'nope'"):
        conn.execute("select * from codesift.changed_symbols('py', 'base', 'nope')")
    other = app_connect(_tenant(db, "t2"))
    # t2 has a repository named py too, at base only: t1's head is not its ref
    with pytest.raises(errors.UndefinedObject, match="no indexed ref 'head'"):
        _context(other, repo="py", base_ref="base", head_ref="head")
    with pytest.raises(errors.UndefinedObject, match="no indexed ref 'head'"):
        other.execute("select * from codesift.changed_symbols('py', 'base', 'head')")
    # t1's diff read as t2: t2's own file, never t1's text
    rows = _context(other, repo="py", diff=change["diff"])
    assert rows
    # its file has no definition at those lines: the hunks alone, no t1 definition
    assert {r[0] for r in rows} == {"hunk"}
    own = (
        "--- a/pkg/transport.py\n+++ b/pkg/transport.py\n@@ -1,2 +1,2 @@\n"
        " def send_request():\n-    return 'other tenant'\n+    return 1\n"
    )
    rows = _context(other, repo="py", diff=own)
    change_rows = [r for r in rows if r[0] == "change"]
    assert [(r[3], r[6]) for r in change_rows] == [("send_request", "py:pkg/transport.py:1-2")]
    assert "other tenant" in change_rows[0][7]
    assert not any("json" in r[7] or "Client" in r[7] for r in rows)
