"""find_symbol, related_files and repository_status against real indexed repositories."""

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift_db import plans

FILES = {
    "pkg/__init__.py": "",
    "pkg/client.py": (
        "from pkg.transport import send_request, Transport\n\n\n"
        "class Client:\n"
        '    """A client."""\n\n'
        "    def get(self, url):\n"
        "        return send_request('GET', url)\n\n"
        "    def Get(self, url):\n"
        "        return self.get(url)\n\n\n"
        "def make_client():\n    return Client()\n"
    ),
    "pkg/transport.py": (
        "class Transport:\n    pass\n\n\ndef send_request(method, url):\n    return (method, url)\n"
    ),
    "tests/test_client.py": (
        "from pkg.client import make_client\n\n\n"
        "def test_get():\n    assert make_client().get('x')\n"
    ),
}


def _index_lookups(dsn, make_repo):
    root = make_repo(FILES, name="lookups")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="lookups", tenant="t1", embed=False, show_progress=False)


@pytest.fixture
def indexed(db, dsn, make_repo, app_connect, snapshots):
    """lookups indexed for t1 (once per session, copied into this test's database)."""
    snapshots.load("lookups", _index_lookups, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    return app_connect(tenant)


def test_find_symbol_exact_then_case_insensitive(indexed):
    rows = indexed.execute(
        "select path, start_line, end_line, symbol, symbol_kind, match, citation"
        " from codesift.find_symbol('get', repo => 'lookups')"
    ).fetchall()
    assert rows == [
        ("pkg/client.py", 7, 8, "Client.get", "method", "exact", "lookups:pkg/client.py:7-8")
    ]
    # qualified names match too
    rows = indexed.execute("select symbol from codesift.find_symbol('Client.Get')").fetchall()
    assert rows == [("Client.Get",)]
    # no exact spelling: ignoring case, and says so
    rows = indexed.execute(
        "select symbol, match from codesift.find_symbol('MAKE_CLIENT')"
    ).fetchall()
    assert rows == [("make_client", "case-insensitive")]


def test_find_symbol_absent_name_is_empty_with_notice(indexed):
    notices = []
    indexed.add_notice_handler(lambda d: notices.append(d.message_primary))
    rows = indexed.execute("select * from codesift.find_symbol('make_clinet')").fetchall()
    assert rows == []
    assert any("no symbol named 'make_clinet'" in n and "make_client" in n for n in notices)


def test_find_symbol_filters_and_bounds(indexed):
    assert indexed.execute(
        "select count(*) from codesift.find_symbol('Transport', kind => 'function')"
    ).fetchone() == (0,)
    assert indexed.execute(
        "select count(*) from codesift.find_symbol('Transport', path_prefix => 'pkg/')"
    ).fetchone() == (1,)
    for call in (
        "select * from codesift.find_symbol('')",
        "select * from codesift.find_symbol(repeat('x', 513))",
        "select * from codesift.find_symbol('x', max_results => 0)",
        "select * from codesift.find_symbol('x', max_results => 201)",
        "select * from codesift.find_symbol('x', path_prefix => repeat('a', 5000))",
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
            indexed.execute(call)
        assert exc.value.diag.message_hint


def test_related_files_both_directions_and_tests(indexed):
    rows = indexed.execute(
        "select related_path, relation, hop, names, is_test"
        " from codesift.related_files('pkg/client.py', repo => 'lookups')"
    ).fetchall()
    got = {r[:2]: r[2:] for r in rows}
    assert got["pkg/transport.py", "imports"][0] == 1
    assert set(got["pkg/transport.py", "imports"][1]) >= {"send_request", "Transport"}
    assert got["tests/test_client.py", "imported by"] == (1, ["make_client"], True)
    two = indexed.execute(
        "select related_path, hop, via from codesift.related_files('pkg/transport.py', depth => 2)"
    ).fetchall()
    assert ("tests/test_client.py", 2, "pkg/client.py") in two


def test_related_files_names_each_edge_by_its_kind(indexed, db):
    """A test edge is 'tests' / 'tested by', a reference 'references' / 'referenced by', a
    co-change 'changes with' (both ways), never 'imports' or 'imported by'."""
    db.execute(
        "insert into codesift.file_edges"
        " (tenant_id, repository_id, source_path, target_path, relation, weight)"
        " select tenant_id, id, s, t, k, 0.5 from codesift.repositories,"
        " (values ('pkg/client.py', 'pkg/__init__.py', 'references'),"
        "  ('pkg/transport.py', 'pkg/__init__.py', 'co_change')) as e (s, t, k)"
    )
    pairs = {
        (path, other): sorted(
            r
            for p, r in indexed.execute(
                "select related_path, relation from codesift.related_files(%s)", (path,)
            ).fetchall()
            if p == other
        )
        for path, other in (
            ("pkg/client.py", "tests/test_client.py"),
            ("tests/test_client.py", "pkg/client.py"),
            ("pkg/__init__.py", "pkg/client.py"),
            ("pkg/client.py", "pkg/__init__.py"),
            ("pkg/__init__.py", "pkg/transport.py"),
            ("pkg/transport.py", "pkg/__init__.py"),
        )
    }
    assert pairs == {
        ("pkg/client.py", "tests/test_client.py"): ["imported by", "tested by"],
        ("tests/test_client.py", "pkg/client.py"): ["imports", "tests"],
        ("pkg/__init__.py", "pkg/client.py"): ["referenced by"],
        ("pkg/client.py", "pkg/__init__.py"): ["references"],
        ("pkg/__init__.py", "pkg/transport.py"): ["changes with"],
        ("pkg/transport.py", "pkg/__init__.py"): ["changes with"],
    }


@pytest.mark.parametrize(
    "cited",
    [
        "pkg/client.py",
        "./pkg/client.py",
        "pkg/client.py:7-8",
        "lookups:pkg/client.py",
        "lookups:pkg/client.py:7-8",
        "lookups:pkg/client.py:7",
        "lookups/pkg/client.py",  # pack_context's headers before citations were one format
        " lookups:pkg/client.py ",
    ],
)
def test_related_files_takes_every_citation_form(indexed, cited):
    want = indexed.execute(
        "select related_path, relation from codesift.related_files('pkg/client.py')"
    ).fetchall()
    assert want
    got = indexed.execute(
        "select related_path, relation from codesift.related_files(%s)", (cited,)
    ).fetchall()
    assert got == want


def test_related_files_unknown_path_suggests_live_files(indexed):
    """The notice for a path that names no file suggests live files (as citations), never
    to pass a path as results cite it: that is what the caller just did."""
    notices = []
    indexed.add_notice_handler(lambda d: notices.append(d.message_primary))
    for path in (
        "pkg/clinet.py",
        "lookups:pkg/clinet.py:1-3",
        "nothing/here.txt",
        "pkg/client.py\x1b[31m",
    ):
        assert indexed.execute("select * from codesift.related_files(%s)", (path,)).fetchall() == []
    assert len(notices) == 4
    assert all("as search results cite it" not in n for n in notices)
    assert "lookups:pkg/client.py" in notices[0] and "lookups:pkg/client.py" in notices[1]
    assert "no live file has a similar path" in notices[2]
    # a path the loader could not have stored is quoted with its escape shown, not obeyed
    assert "pkg/client.py\\x1b[31m" in notices[3] and "\x1b" not in notices[3]


def test_related_files_unsafe_paths_and_bounds(indexed):
    for path in (
        "../../etc/passwd",
        "/etc/passwd",
        "pkg/../pkg/client.py",
        "lookups:/etc/passwd",
        "lookups:../lookups/pkg/client.py",
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
            indexed.execute("select * from codesift.related_files(%s)", (path,))
        assert exc.value.diag.message_hint
    for call in (
        "select * from codesift.related_files('pkg/client.py', depth => 4)",
        "select * from codesift.related_files('pkg/client.py', max_results => 501)",
        "select * from codesift.related_files(repeat('a/', 3000))",
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            indexed.execute(call)


def test_repository_status(indexed, db):
    rows = indexed.execute(
        "select repository, stale, live_files, symbols, edges, embedding_backlog"
        " from codesift.repository_status()"
    ).fetchall()
    assert len(rows) == 1
    name, stale, files, symbols, edges, backlog = rows[0]
    assert (name, stale, files) == ("lookups", False, 4)
    assert symbols >= 7 and edges >= 2 and backlog > 0  # embed=False: all of it is backlog
    db.execute("update codesift.repositories set head_commit = repeat('a', 40)")
    stale = indexed.execute("select stale from codesift.repository_status('lookups')")
    assert stale.fetchone() == (True,)
    none = indexed.execute("select count(*) from codesift.repository_status('nope')")
    assert none.fetchone() == (0,)


def test_no_tenant_sees_nothing(db, indexed, app_connect):
    other = app_connect()
    assert other.execute("select count(*) from codesift.repository_status()").fetchone() == (0,)
    with pytest.raises(psycopg.Error):
        other.execute("select * from codesift.find_symbol('get')")


def test_a_name_lookup_reads_the_name_index_under_row_level_security(indexed):
    """What a question names and what the best candidates call (pipeline/mentions.py,
    pipeline/callees.py) are looked up by name. An index on lower(name) is out of reach
    under RLS (lower() is not leakproof): the lookup read every symbol of the tenant.
    name_key is a plain column."""
    indexed.execute("set enable_seqscan = off")  # the plans the planner can choose, not costs
    statement = plans.load("mentioned_symbols")
    indexed.execute(f"prepare lookup (bigint[], text[], bigint) as {statement}")
    plan = "\n".join(
        r[0]
        for r in indexed.execute(
            "explain execute lookup(array[1]::bigint[], array['send_request', 'get']::text[],"
            " current_tenant_id())"
        ).fetchall()
    )
    assert "code_symbols_name_key" in plan


DOCUMENTED = {
    "app/views.py": (
        '"""Views."""\n'  # 1
        "import functools\n"  # 2
        "\n\n"  # 3-4
        "# Routes are registered at import.\n"  # 5
        "@functools.lru_cache()\n"  # 6
        "@app.get(\n"  # 7
        "    '/items',\n"  # 8
        ")\n"  # 9
        "def list_items(page):\n"  # 10
        '    """List the items of a page.\n'  # 11
        "\n"  # 12
        "    Pages start at 1.\n"  # 13
        '    """\n'  # 14
        "    return []\n"  # 15
    ),
    "docs/CHANGES.rst": (
        "Changes\n"  # 1
        "=======\n"  # 2
        "\n"  # 3
        "Unreleased\n"  # 4
        "----------\n"  # 5
        "\n"  # 6
        "-   Removed the legacy\n"  # 7
        "    adapter.\n"  # 8
    ),
    "README.md": "Items\n=====\n\n- Paginate\n  everything.\n",
}


def test_find_symbol_jumps_to_the_name_and_reads_the_docstring(db, dsn, make_repo, app_connect):
    root = make_repo(DOCUMENTED, name="documented")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="documented", tenant="t1", embed=False, show_progress=False
        )
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    conn = app_connect(tenant)
    row = conn.execute(
        "select start_line, end_line, name_line, doc, citation"
        " from codesift.find_symbol('list_items', repo => 'documented')"
    ).fetchone()
    # the span holds the decorators; name_line is the def; the docstring, then the comment
    assert row == (
        6,
        15,
        10,
        "List the items of a page.\n\nPages start at 1.\n\nRoutes are registered at import.",
        "documented:app/views.py:6-15",
    )
    # name_line is the last column, after the citation
    names = [
        c.name for c in conn.execute("select * from codesift.find_symbol('list_items')").description
    ]
    assert names[-2:] == ["citation", "name_line"]
    # rst and setext sections by their titles; a bullet's first word names nothing
    found = conn.execute(
        "select symbol, symbol_kind, start_line, name_line from codesift.find_symbol('Unreleased')"
    ).fetchall()
    assert found == [("Changes > Unreleased", "section", 4, 4)]
    assert conn.execute("select symbol from codesift.find_symbol('Items')").fetchall() == [
        ("Items",)
    ]
    for word in ("Removed", "Paginate"):
        assert conn.execute("select * from codesift.find_symbol(%s)", (word,)).fetchall() == []
