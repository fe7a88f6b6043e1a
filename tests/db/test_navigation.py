"""file_outline and repo_map against real repositories indexed by the real loader."""

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift_db.tokens import estimate_tokens

from tests.watching import run_codesift

CORE = (
    '"""Core helpers."""\n'  # 1
    "\n\n"  # 2-3
    "# Base of every shape.\n"  # 4
    "class Shape:\n"  # 5
    "    # The area of the shape.\n"  # 6
    "    # Second line of the doc.\n"  # 7
    "    def area(self):\n"  # 8
    "        def unit():\n"  # 9
    "            return 1\n"  # 10
    "        return unit()\n"  # 11
    "\n"  # 12
    "    def name(self):\n"  # 13
    "        return 'shape'\n"  # 14
    "\n\n"  # 15-16
    "def make_shape():\n"  # 17
    "    return Shape()\n"  # 18
)
GREETER = (
    "/** Greets people. */\n"  # 1
    "export class Greeter {\n"  # 2
    "  // Says hello.\n"  # 3
    "  hello(name: string): string {\n"  # 4
    "    return `hi ${name}`;\n"  # 5
    "  }\n"  # 6
    "}\n"  # 7
    "\n"  # 8
    "// Builds a greeter.\n"  # 9
    "export function makeGreeter(): Greeter {\n"  # 10
    "  return new Greeter();\n"  # 11
    "}\n"  # 12
)
BIG = "class Big:\n" + "".join(
    f"    def method_{i}(self):\n" + "        x = 1\n" * 8 + "\n" for i in range(20)
)
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE,
    "pkg/circle.py": (
        "from pkg.core import Shape\n\n\nclass Circle(Shape):\n    def area(self):\n"
        "        return 3\n"
    ),
    "pkg/square.py": (
        "from pkg.core import Shape, make_shape\n\n\nclass Square(Shape):\n    pass\n\n\n"
        "def unit_square():\n    return make_shape()\n"
    ),
    "pkg/leaf.py": (
        "from pkg.circle import Circle\nfrom pkg.core import make_shape\n\n\n"
        "def leaf_shapes():\n    return [Circle(), make_shape()]\n"
    ),
    "pkg/big.py": BIG,
    "tests/test_core.py": (
        "from pkg.core import make_shape\n\n\ndef test_make_shape():\n"
        "    assert make_shape().name() == 'shape'\n"
    ),
    "web/greeter.ts": GREETER,
    "web/main.ts": "import { makeGreeter } from './greeter';\n\nmakeGreeter().hello('x');\n",
    "README.md": "# Shapes\n\nAbout.\n\n## Usage\n\nCall make_shape.\n",
}
OUTLINE = (
    "select ordinal, depth, kind, name, qualified_name, signature, doc, start_line, end_line"
    " from codesift.file_outline(%s, repo => %s, ref => %s)"
)


def _index(dsn, make_repo):
    root = make_repo(FILES, name="nav")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="nav", tenant="t1", embed=False, show_progress=False)


@pytest.fixture
def nav(db, dsn, make_repo, app_connect, snapshots):
    """nav indexed for t1 (once per session), the application role acting as t1."""
    snapshots.load("navigation", _index, dsn, make_repo)
    tenant = db.execute("select id from codesift.tenants where name = 't1'").fetchone()[0]
    return app_connect(tenant)


def _outline(conn, path, repo=None, ref=None):
    return conn.execute(OUTLINE, (path, repo, ref)).fetchall()


def test_a_python_outline_is_in_file_order_and_nested(nav):
    rows = _outline(nav, "pkg/core.py", "nav")
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        (1, 0, "class", "Shape"),
        (2, 1, "method", "Shape.area"),
        (3, 2, "function", "Shape.area.unit"),
        (4, 1, "method", "Shape.name"),
        (5, 0, "function", "make_shape"),
    ]
    by_name = {r[4]: r for r in rows}
    assert by_name["Shape"][5:] == ("class Shape:", "Base of every shape.", 5, 14)
    # the first line of a doc comment of several lines
    assert by_name["Shape.area"][5:] == ("def area(self):", "The area of the shape.", 8, 11)
    assert by_name["make_shape"][5:] == ("def make_shape():", None, 17, 18)


def test_a_typescript_outline_with_its_doc_comments(nav):
    rows = _outline(nav, "web/greeter.ts")
    assert [(r[1], r[2], r[4], r[6], r[7]) for r in rows] == [
        (0, "class", "Greeter", "Greets people.", 2),
        (1, "method", "Greeter.hello", "Says hello.", 4),
        (0, "function", "makeGreeter", "Builds a greeter.", 10),
    ]


def test_a_definition_stored_in_parts_is_one_row(nav):
    rows = _outline(nav, "pkg/big.py")
    assert rows[0][4] == "Big" and (rows[0][7], rows[0][8]) == (1, 200)
    assert [r[4] for r in rows[1:]] == [f"Big.method_{i}" for i in range(20)]
    assert {r[1] for r in rows[1:]} == {1}
    # the stored rows: the class in parts, around its methods
    parts = nav.execute(
        "select count(*) from codesift.code_symbols s join codesift.files f"
        " on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha"
        " where f.path = 'pkg/big.py' and s.qualified_name = 'Big'"
    ).fetchone()[0]
    assert parts >= 2


def test_markdown_sections_nest(nav):
    rows = _outline(nav, "README.md")
    assert [(r[1], r[3]) for r in rows] == [(0, "Shapes"), (1, "Usage")]


@pytest.mark.parametrize(
    "cited, repo",
    [
        ("pkg/core.py", None),
        ("pkg/core.py", "nav"),
        ("nav:pkg/core.py", None),
        ("nav:pkg/core.py", "nav"),
        ("nav:pkg/core.py:8-11", None),
        ("pkg/core.py:8", None),
        ("nav/pkg/core.py:5-14", None),  # pack_context_text's header
        ("./pkg/core.py", None),
        ("  pkg/core.py\n", None),
    ],
)
def test_every_citation_form_is_accepted(nav, cited, repo):
    rows = nav.execute(
        "select file_path, qualified_name, citation from codesift.file_outline(%s, repo => %s)",
        (cited, repo),
    ).fetchall()
    assert rows[0] == ("pkg/core.py", "Shape", "nav:pkg/core.py:5-14")
    assert len(rows) == 5


def _error(conn, path, repo=None, ref=None) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(OUTLINE, (path, repo, ref))
    return info.value


def test_an_unknown_file_says_what_is_near(nav):
    error = _error(nav, "pkg/cores.py", "nav")
    assert error.sqlstate == "42704"
    assert "no live file 'pkg/cores.py'" in error.diag.message_primary
    assert "nav:pkg/core.py" in error.diag.message_hint
    # the same file name in another folder
    error = _error(nav, "src/greeter.ts")
    assert "nav:web/greeter.ts" in error.diag.message_hint
    # nothing near: the hint does not say to cite it as it was cited
    error = _error(nav, "nav:zzz/qqqqqq.rs")
    assert error.sqlstate == "42704"
    assert "zzz/qqqqqq.rs" not in error.diag.message_hint
    assert "find_symbol" in error.diag.message_hint
    # a folder is not a file
    assert _error(nav, "pkg").sqlstate == "42704"


def test_an_unknown_repository_or_ref(nav):
    error = _error(nav, "pkg/core.py", "nope")
    assert error.sqlstate == "42704" and "unknown repository" in error.diag.message_primary
    assert "nav" in error.diag.message_hint
    error = _error(nav, "pkg/core.py", "nav", "feature")
    assert error.sqlstate == "42704" and "no indexed ref 'feature'" in error.diag.message_primary


def test_a_bare_path_in_two_repositories_needs_the_repository(db, nav, dsn, make_repo):
    root = make_repo({"pkg/core.py": "def other_core():\n    return 2\n"}, name="other")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="other", tenant="t1", embed=False, show_progress=False)
    error = _error(nav, "pkg/core.py")
    assert error.sqlstate == "22023"
    assert "2 repositories: nav, other" in error.diag.message_primary
    assert "repo => 'nav'" in error.diag.message_hint
    assert [r[4] for r in _outline(nav, "pkg/core.py", "other")] == ["other_core"]
    assert [r[4] for r in _outline(nav, "other:pkg/core.py")] == ["other_core"]
    assert _outline(nav, "nav:pkg/core.py")[0][4] == "Shape"


MAP = "select rank, repository, path, centrality, tokens, text from codesift.repo_map({})"


def _map(conn, args="", params=None):
    return conn.execute(MAP.format(args), params).fetchall()


def test_the_map_ranks_a_file_imported_by_many_above_a_leaf(nav):
    rows = _map(nav, "repo => 'nav', token_budget => 100000")
    paths = [r[2] for r in rows]
    assert set(paths) == set(FILES)  # a big budget: every live file
    assert paths[0] == "pkg/core.py"
    assert paths.index("pkg/core.py") < paths.index("pkg/leaf.py")
    assert paths.index("web/greeter.ts") < paths.index("web/main.ts")
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    centrality = {r[2]: r[3] for r in rows}
    assert centrality["pkg/core.py"] > centrality["pkg/leaf.py"]
    assert sum(centrality.values()) == pytest.approx(1.0)
    core = rows[0]
    assert core[5].split("\n") == [
        "nav:pkg/core.py",
        "  class Shape:",
        "    def area(self):",
        "      def unit():",
        "    def name(self):",
        "  def make_shape():",
    ]
    assert core[4] == estimate_tokens(core[5])


def test_the_stored_ranks_give_the_order_a_map_ranked_now_gives(db, nav):
    # indexing stored every live file's rank (codesift.rank_files)
    unranked = db.execute(
        "select count(*) from codesift.files where live and centrality is null"
    ).fetchone()[0]
    assert unranked == 0
    stored = _map(nav, "repo => 'nav', token_budget => 100000")
    db.execute("update codesift.files set centrality = null")  # as indexed before 026
    now = _map(nav, "repo => 'nav', token_budget => 100000")
    assert [r[2] for r in stored] == [r[2] for r in now]
    assert [r[3] for r in stored] == pytest.approx([r[3] for r in now], rel=1e-6)
    folder = _map(nav, "repo => 'nav', path_prefix => 'pkg/', token_budget => 100000")
    assert {r[2] for r in folder} == {p for p in FILES if p.startswith("pkg/")}


def test_the_map_respects_the_budget_exactly(nav):
    full = _map(nav, "token_budget => 100000")
    assert all(r[4] == estimate_tokens(r[5]) for r in full)
    # a budget of exactly the first k blocks packs exactly those blocks
    for k in (1, 2, 3):
        budget = sum(r[4] for r in full[:k])
        rows = _map(nav, "token_budget => %s", (budget,))
        assert [(r[2], r[5]) for r in rows] == [(r[2], r[5]) for r in full[:k]]
    # one token short: the k-th block is cut to the lines that fit, never over the budget
    for budget in range(1, sum(r[4] for r in full[:4])):
        rows = _map(nav, "token_budget => %s", (budget,))
        assert sum(r[4] for r in rows) <= budget, budget
        assert all(r[4] == estimate_tokens(r[5]) for r in rows)
    budget = full[0][4] - 1
    cut = _map(nav, "token_budget => %s", (budget,))
    assert cut[0][2] == full[0][2] and cut[0][5].endswith("\n  ...")
    assert full[0][5].startswith(cut[0][5][: -len("\n  ...")])


def test_the_map_of_a_folder(nav):
    rows = _map(nav, "path_prefix => 'web/'")
    assert [r[2] for r in rows] == ["web/greeter.ts", "web/main.ts"]
    pkg = [r[2] for r in _map(nav, "path_prefix => 'pkg/', token_budget => 100000")]
    assert pkg[0] == "pkg/core.py" and all(p.startswith("pkg/") for p in pkg)
    error = None
    with pytest.raises(psycopg.Error) as info:
        _map(nav, "path_prefix => 'nowhere/'")
    error = info.value
    assert error.sqlstate == "42704" and "under 'nowhere/'" in error.diag.message_primary
    assert "nowhere" not in (error.diag.message_hint or "")


def test_the_cli_prints_the_outline_and_the_map(nav, dsn):
    done = run_codesift(dsn, "outline", "nav:pkg/core.py:8-11", "--tenant", "t1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "nav:pkg/core.py",
        " 5-14  class Shape:  — Base of every shape.",
        " 8-11    def area(self):  — The area of the shape.",
        " 9-10      def unit():",
        "13-14    def name(self):",
        "17-18  def make_shape():",
    ]
    empty = run_codesift(dsn, "outline", "pkg/__init__.py", "--tenant", "t1")
    assert empty.returncode == 0 and empty.stdout == ""
    assert "no symbol" in empty.stderr
    done = run_codesift(dsn, "repo-map", "--repo", "nav", "--budget", "60", "--tenant", "t1")
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.rstrip("\n").split("\n\n")
    assert blocks[0].startswith("nav:pkg/core.py\n  class Shape:")
    assert sum(estimate_tokens(b) for b in blocks) <= 60
    missing = run_codesift(dsn, "outline", "pkg/cores.py", "--tenant", "t1")
    assert missing.returncode == 1
    assert "no live file 'pkg/cores.py'" in missing.stderr
    assert "hint: live files with a similar path: nav:pkg/core.py" in missing.stderr


DOCUMENTED = {
    "pkg/service.py": (
        "class Service:\n"  # 1
        '    """Serve requests.\n'  # 2
        "\n"  # 3
        "    Thread-safe.\n"  # 4
        '    """\n'  # 5
        "\n"  # 6
        "    # Cached: computed once.\n"  # 7
        "    @property\n"  # 8
        "    @functools.cache\n"  # 9
        "    def size(self):\n"  # 10
        '        """The number of workers."""\n'  # 11
        "        return 4\n"  # 12
    ),
    "docs/guide.rst": (
        "=====\n"  # 1
        "Guide\n"  # 2
        "=====\n"  # 3
        "\n"  # 4
        "Install\n"  # 5
        "-------\n"  # 6
        "\n"  # 7
        "-   pip install\n"  # 8
        "    service\n"  # 9
    ),
}


def test_an_outline_has_name_lines_and_docstrings(db, dsn, make_repo, app_connect):
    root = make_repo(DOCUMENTED, name="documented")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="documented", tenant="t2", embed=False, show_progress=False
        )
    tenant = db.execute("select id from codesift.tenants where name = 't2'").fetchone()[0]
    conn = app_connect(tenant)
    rows = conn.execute(
        "select qualified_name, doc, start_line, end_line, name_line"
        " from codesift.file_outline('documented:pkg/service.py')"
    ).fetchall()
    assert rows == [
        ("Service", "Serve requests.", 1, 12, 1),
        ("Service.size", "The number of workers.", 8, 12, 10),
    ]
    columns = conn.execute("select * from codesift.file_outline('pkg/service.py')").description
    assert [c.name for c in columns][-2:] == ["citation", "name_line"]
    rows = conn.execute(
        "select qualified_name, kind, start_line, end_line, name_line"
        " from codesift.file_outline('docs/guide.rst')"
    ).fetchall()
    assert rows == [("Guide", "section", 1, 9, 2), ("Guide > Install", "section", 5, 9, 5)]
