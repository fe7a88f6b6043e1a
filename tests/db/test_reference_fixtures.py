"""find_references of a pytest fixture lists the test and fixture functions pytest passes it
to (plpython/codesift_db/reference_fixtures.py): its scope (the conftest.py's folder, or its
own module), less where a closer fixture of the name overrides it; only the live files of
the tenant's repository at the ref asked."""

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

FILES = {
    "a_b/conftest.py": (
        "import pytest\n"  # 1
        "\n"
        "\n"
        "@pytest.fixture\n"  # 4
        "def client(app):\n"  # 5: uses the fixture app
        "    return app.client()\n"  # 6
        "\n"
        "\n"
        "@pytest.fixture()\n"  # 9
        "def app():\n"  # 10
        "    return object()\n"
        "\n"
        "\n"
        "def helper(client):\n"  # 14: neither a test nor a fixture
        "    return client\n"
    ),
    "a_b/test_a.py": (
        "def test_one(client):\n"  # 1
        '    assert client.get("/")\n'  # 2
        "    x = dict(client=1)\n"  # 3: a keyword, no use
        "    return x.client\n"  # 4: an attribute, no use
        "\n"
        "\n"
        "class TestGroup:\n"
        "    def test_two(self, client, other):\n"  # 8
        "        # client in a comment\n"
        "        return client\n"  # 10
        "\n"
        "\n"
        "def not_a_test(client):\n"  # 13
        "    return client\n"
    ),
    "a_b/sub/conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef client():\n    return 2\n"  # overrides
    ),
    "a_b/sub/test_b.py": "def test_three(client):\n    return client\n",
    "a_b/test_own.py": (
        "import pytest\n\n\n@pytest.fixture\ndef client():\n    return 3\n\n\n"
        "def test_four(client):\n    return client\n"
    ),
    # a folder the LIKE pattern a_b/% would match if _ were not escaped
    "axb/test_c.py": "def test_five(client):\n    return client\n",
    "other/test_d.py": "def test_six(client):\n    return client\n",
}


def _index_all(dsn, make_repo):
    with psycopg.connect(dsn) as conn:
        root = make_repo(FILES, name="fx")
        index_repository(conn, root, name="fx", tenant="t1", embed=False, show_progress=False)
        git(root, "checkout", "-q", "-b", "feature")
        write_files(root, {"a_b/test_branch.py": "def test_b(client):\n    return client\n"})
        commit(root, "feature")
        git(root, "checkout", "-q", "main")
        index_repository(
            conn, root, name="fx", tenant="t1", ref="feature", embed=False, show_progress=False
        )
        theirs = make_repo(
            {**FILES, "a_b/test_theirs.py": "def test_t(client):\n    return client\n"},
            name="fx-t2",
        )
        index_repository(conn, theirs, name="fx", tenant="t2", embed=False, show_progress=False)


@pytest.fixture
def conn(db, dsn, make_repo, app_connect, snapshots):
    snapshots.load("reference-fixtures", _index_all, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    c = app_connect(tenant)
    c.add_notice_handler(lambda n: None)
    return c


def _refs(conn, name, **kw):
    args = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(
        "select path, line, symbol, resolution, definition"
        f" from codesift.find_references(%(name)s{args})",
        {"name": name, **kw},
    ).fetchall()
    # members named like the fixture (`x.client`) are by_name uses of any `client`
    return {(r[0], r[1]): r[2:] for r in rows if r[3] == "resolved"}


def test_the_tests_and_fixtures_a_fixture_is_passed_to(conn):
    got = _refs(conn, "fx:a_b/conftest.py:5")
    assert set(got) == {
        ("a_b/test_a.py", 1),
        ("a_b/test_a.py", 2),
        ("a_b/test_a.py", 8),
        ("a_b/test_a.py", 10),
    }  # not line 3 (a keyword), 4 (an attribute), 9 (a comment), 14 (not a test)
    assert all(r[1:] == ("resolved", "fx:a_b/conftest.py:4-6") for r in got.values())
    assert got[("a_b/test_a.py", 10)][0] == "TestGroup.test_two"
    # another fixture asking for it is a use too
    app = _refs(conn, "fx:a_b/conftest.py:10")
    assert {("a_b/conftest.py", 5), ("a_b/conftest.py", 6)} <= set(app)


def test_a_plain_function_is_no_fixture(conn):
    assert not any(p == "a_b/test_a.py" for p, _ in _refs(conn, "fx:a_b/conftest.py:14"))


def test_a_closer_fixture_has_its_own_tests(conn):
    sub = _refs(conn, "fx:a_b/sub/conftest.py:5")
    assert set(sub) == {("a_b/sub/test_b.py", 1), ("a_b/sub/test_b.py", 2)}
    own = _refs(conn, "fx:a_b/test_own.py:5")
    assert set(own) == {("a_b/test_own.py", 9), ("a_b/test_own.py", 10)}


def test_the_fixture_stays_in_its_ref_and_tenant(conn, db, app_connect):
    on_branch = _refs(conn, "fx:a_b/conftest.py:5", ref="feature")
    assert ("a_b/test_branch.py", 1) in on_branch
    assert not any(p == "a_b/test_theirs.py" for p, _ in on_branch)
    t2 = db.execute("select id from codesift.tenants where name = 't2'").fetchone()[0]
    other = app_connect(t2)
    other.add_notice_handler(lambda n: None)
    theirs = _refs(other, "fx:a_b/conftest.py:5")
    assert ("a_b/test_theirs.py", 1) in theirs
    assert not any(p == "a_b/test_branch.py" for p, _ in theirs)
