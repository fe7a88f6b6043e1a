"""impact against a real repository indexed at two refs (tests/db/change_repos.py): what
depends on a definition or a file (callers and theirs, importers, co-changes, the tests that
reach it), each row saying how it is reached; refs and tenants kept apart; depth, rows and
paths bounded."""

import psycopg
import pytest
from psycopg import errors

from tests.db.change_repos import index_change_repos

COLUMNS = "path, symbol, relation, hops, via, is_test, citation"


@pytest.fixture
def change(db, dsn, make_repo, snapshots):
    return snapshots.load("change", index_change_repos, dsn, make_repo)


def _tenant(db, name):
    return db.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()[0]


@pytest.fixture
def conn(db, change, app_connect):
    return app_connect(_tenant(db, "t1"))


def _impact(conn, target, **kw):
    args = "".join(f", {k} => %({k})s" for k in kw)
    return conn.execute(
        f"select {COLUMNS} from codesift.impact(%(target)s{args})", {"target": target, **kw}
    ).fetchall()


def test_callers_and_their_callers_with_the_tests_that_reach_them(conn):
    rows = _impact(conn, "send_request", repo="py", ref="head", depth=2)
    got = {(r[0], r[1]): r for r in rows}
    # hop 1: the resolved callers, cited with their lines, reached from the definition
    assert got[("pkg/client.py", "Client.get")][2:5] == (
        "calls",
        1,
        "py:pkg/transport.py:8-11",
    )
    # hop 2: the callers' callers (Client().get is a member of an expression: by name), and
    # the test that calls it, marked
    assert got[("pkg/api.py", "fetch")][2:4] == ("calls_by_name", 2)
    test = got[("tests/test_client.py", "test_get")]
    assert test[2:4] == ("calls_by_name", 2) and test[5] is True
    assert test[4] == "py:pkg/client.py:6-7"  # via Client.get
    # the files importing its name, and the test file that tests a caller's file
    assert got[("pkg/__init__.py", None)][2:4] == ("imports", 1)
    assert got[("tests/test_client.py", None)][2] == "tests"
    # nothing that does not depend on it
    assert not any(r[0] == "pkg/unrelated.py" for r in rows)
    # ranked: the direct callers first
    assert rows[0][2:4] == ("calls", 1)


def test_each_row_carries_its_chain_from_the_target(conn):
    row = conn.execute(
        "select chain, hops from codesift.impact('send_request', repo => 'py', ref => 'head')"
        " where symbol = 'test_get'"
    ).fetchone()
    chain, hops = row
    assert len(chain) == hops + 1
    assert chain[0] == "py:pkg/transport.py:8-11 (send_request)"
    assert chain[1] == "calls py:pkg/client.py:6-7 (Client.get)"
    assert chain[2] == "calls_by_name py:tests/test_client.py:4-5 (test_get)"


def test_a_citation_names_the_same_definition(conn):
    by_name = _impact(conn, "send_request", repo="py", ref="head")
    assert _impact(conn, "py:pkg/transport.py:9", ref="head") == by_name
    assert _impact(conn, "py:pkg/transport.py:8-11", ref="head") == by_name


def test_a_file_gives_its_importers_transitively(conn):
    rows = _impact(conn, "py:pkg/client.py", depth=1)
    assert {(r[0], r[2], r[3]) for r in rows} >= {
        ("pkg/api.py", "imports", 1),
        ("tests/test_client.py", "imports", 1),
    }
    assert not any(r[3] > 1 for r in rows)
    deeper = _impact(conn, "pkg/client.py", depth=2)
    api_test = [r for r in deeper if r[0] == "tests/test_api.py"]
    assert api_test and api_test[0][3] == 2 and api_test[0][5] is True
    assert api_test[0][4] == "py:pkg/api.py"


def test_refs_are_kept_apart(conn):
    base = {r[1] for r in _impact(conn, "send_request", repo="py")}  # the default: base
    head = {r[1] for r in _impact(conn, "send_request", repo="py", ref="head")}
    assert "Client.post" in base  # deleted at head
    assert "Client.post" not in head
    # new_helper only exists at head
    assert {r[1] for r in _impact(conn, "encode", ref="head")} >= {"new_helper"}
    assert "new_helper" not in {r[1] for r in _impact(conn, "encode")}


def test_another_tenant_sees_only_its_own(db, change, app_connect):
    other = app_connect(_tenant(db, "t2"))
    rows = _impact(other, "send_request", repo="py")
    assert rows == []  # t2's send_request has no caller; t1's are never read
    with pytest.raises(errors.UndefinedObject, match="no indexed ref 'head'"):
        _impact(other, "send_request", repo="py", ref="head")
    assert _impact(other, "py:pkg/client.py") == []  # t1's file is no file of t2
    # no tenant set: nothing
    with pytest.raises(psycopg.Error, match="no tenant"):
        _impact(app_connect(), "send_request")


def test_depth_is_clamped_and_absurd_depths_refused(conn):
    notices = []
    conn.add_notice_handler(lambda n: notices.append(n.message_primary))
    clamped = _impact(conn, "encode", ref="head", depth=50)
    assert any("4 are followed" in n for n in notices)
    assert clamped == _impact(conn, "encode", ref="head", depth=4)
    for depth in (10**9, 0, -1):
        with pytest.raises(errors.InvalidParameterValue, match="depth must be between 1 and 4"):
            _impact(conn, "encode", depth=depth)
    with pytest.raises(errors.NullValueNotAllowed):
        _impact(conn, "encode", depth=None)
    for n in (0, 1001):
        with pytest.raises(errors.InvalidParameterValue, match="max_rows"):
            _impact(conn, "encode", max_rows=n)
    assert len(_impact(conn, "send_request", repo="py", max_rows=2)) == 2


@pytest.mark.parametrize(
    "target",
    ["../etc/passwd", "/etc/passwd", "py:../../etc/passwd", "C:\\windows\\x.py"],
)
def test_paths_leaving_the_repository_are_refused(conn, target):
    with pytest.raises(errors.InvalidParameterValue, match="absolute|goes up"):
        _impact(conn, target)


def test_bad_text_is_refused_and_unknown_targets_give_a_notice(conn):
    with pytest.raises(errors.InvalidParameterValue, match="control characters"):
        _impact(conn, "send\x1b[2Jrequest")
    with pytest.raises(errors.InvalidParameterValue, match="characters; at most"):
        _impact(conn, "x" * 10_000)
    with pytest.raises(errors.InvalidParameterValue, match="must not be empty"):
        _impact(conn, "  ")
    notices = []
    conn.add_notice_handler(lambda n: notices.append(n.message_primary))
    assert _impact(conn, "no_such_name") == []
    assert any("no definition or live file 'no_such_name'" in n for n in notices)


@pytest.mark.parametrize("role", ["codesift_app", "codesift_loader", "codesift_tenant"])
def test_every_query_role_may_run_the_new_functions_and_public_may_not(db, role):
    for fn in (
        "codesift.impact(text, text, text, integer, integer)",
        "codesift.changed_symbols(text, text, text, integer)",
        "codesift.diff_context(text, text, text, integer, text, text)",
    ):
        assert db.execute(
            "select has_function_privilege(%s, %s, 'execute')", (role, fn)
        ).fetchone()[0]
        assert not db.execute(
            "select bool_or(a.grantee = 0) from pg_proc p, aclexplode(p.proacl) a"
            " where p.oid = %s::regprocedure",
            (fn,),
        ).fetchone()[0]


TYPED = {
    "shop/client.py": (
        "class Client:\n"
        "    def __enter__(self):\n        return self\n\n"
        "    def __exit__(self, *exc):\n        return False\n\n"
        "    def send(self, what):\n        return what\n\n\n"
        "class Other:\n"
        "    def send(self, what):\n        return None\n"
    ),
    "shop/api.py": (
        "from shop.client import Client\n\n\n"
        "def order(item):\n"
        "    with Client() as client:\n"
        "        return client.send(item)\n"
    ),
    "tests/test_api.py": (
        "from shop.api import order\n\n\ndef test_order():\n    assert order('x') == 'x'\n"
    ),
}


def test_a_method_called_on_an_object_of_a_known_class_is_followed(db, dsn, make_repo):
    """`with Client() as client: client.send()` calls Client.send, as callers() resolves
    it: the walk follows it to the tests that reach it, not stopping at a name match."""
    from codesift.indexer import index_repository

    root = make_repo(TYPED, name="typed")
    with psycopg.connect(dsn) as c:
        index_repository(c, root, name="typed", tenant="typed", embed=False, show_progress=False)
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("set role codesift_app")
    conn.execute(
        "select set_config('app.current_tenant_id', %s, false)", (str(_tenant(db, "typed")),)
    )
    callers = conn.execute(
        "select caller, resolution from codesift.callers('Client.send', repo => 'typed')"
    ).fetchall()
    assert callers == [("order", "resolved")]
    rows = _impact(conn, "Client.send", repo="typed", depth=2)
    got = {(r[0], r[1]): r for r in rows}
    assert got[("shop/api.py", "order")][2:4] == ("calls", 1)
    assert got[("tests/test_api.py", "test_order")][2:4] == ("calls", 2)
    assert got[("tests/test_api.py", "test_order")][5] is True
    conn.close()


def test_the_typed_resolution_reads_only_the_tenants_own_classes(db, dsn, make_repo):
    """Two tenants hold a Client with send(): each one's walk resolves and follows its own
    callers only (the classes' uses and definitions are read as the session's tenant)."""
    from codesift.indexer import index_repository

    theirs = {
        path: text.replace("order", "steal").replace("test_order", "test_steal")
        for path, text in TYPED.items()
    }
    with psycopg.connect(dsn) as c:
        for tenant, files in (("typed-a", TYPED), ("typed-b", theirs)):
            root = make_repo(files, name=tenant)
            index_repository(c, root, name="typed", tenant=tenant, embed=False, show_progress=False)
    for tenant, own, other in (("typed-a", "order", "steal"), ("typed-b", "steal", "order")):
        conn = psycopg.connect(dsn, autocommit=True)
        conn.execute("set role codesift_app")
        conn.execute(
            "select set_config('app.current_tenant_id', %s, false)", (str(_tenant(db, tenant)),)
        )
        rows = _impact(conn, "Client.send", repo="typed", depth=2)
        symbols = {r[1] for r in rows}
        assert own in symbols and f"test_{own}" in symbols, tenant
        assert other not in symbols and f"test_{other}" not in symbols, tenant
        conn.close()
