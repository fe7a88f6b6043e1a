"""navigation.py without a server: reading a cited path, nesting stored symbols, PageRank and
packing map blocks under a budget."""

import pytest
from codesift_db import navigation
from codesift_db.navigation import Reading
from codesift_db.tokens import estimate_tokens


def _sym(qname, kind, start, end, parent=None, part=0, signature=None):
    return {
        "name": qname.rsplit(".", 1)[-1],
        "qualified_name": qname,
        "kind": kind,
        "start_line": start,
        "end_line": end,
        "parent": parent,
        "part": part,
        "signature": signature,
        "doc": "",
    }


@pytest.mark.parametrize(
    "text, first",
    [
        ("pkg/a.py", Reading(None, "pkg/a.py")),
        ("app:pkg/a.py", Reading("app", "pkg/a.py")),
        ("app:pkg/a.py:10-20", Reading("app", "pkg/a.py")),
        ("pkg/a.py:7", Reading(None, "pkg/a.py")),
        ("app/pkg/a.py:3-4", Reading("app", "pkg/a.py")),
        ("./pkg/a.py", Reading(None, "pkg/a.py")),
    ],
)
def test_a_path_is_read_as_the_tools_cite_it(text, first):
    options = navigation.readings(text, ["app"])
    assert options[0] == Reading(None, text)  # the literal path is always tried first
    assert first in options


def test_a_prefix_that_is_no_repository_stays_part_of_the_path():
    assert navigation.readings("other:pkg/a.py", ["app"]) == [Reading(None, "other:pkg/a.py")]
    # a folder named like a repository: both readings, the literal one first
    assert navigation.readings("app/x.py", ["app"]) == [
        Reading(None, "app/x.py"),
        Reading("app", "x.py"),
    ]


@pytest.mark.parametrize(
    "path, why",
    [
        ("/etc/passwd", "absolute"),
        ("C:\\x.py", "absolute"),
        ("~/x.py", "absolute"),
        ("../x.py", ".."),
        ("pkg/../../x.py", ".."),
        ("pkg\\..\\x.py", ".."),
    ],
)
def test_paths_outside_a_repository_are_unsafe(path, why):
    assert why in navigation.unsafe_path(path)


def test_safe_paths():
    for path in ("pkg/a.py", "a..b.py", ".github/x.yml", "dir/...py", "~x.py", "tab\tname.py"):
        assert navigation.unsafe_path(path) is None


@pytest.mark.parametrize(
    "doc, line",
    [
        ("", None),
        (None, None),
        ("Greets people. */", "Greets people."),
        ("\n\n  The area.\nMore text.", "The area."),
        ("* a list item", "a list item"),
        ("x" * 500, "x" * navigation.MAX_DOC_LINE_CHARS),
    ],
)
def test_first_doc_line(doc, line):
    assert navigation.first_doc_line(doc) == line


def test_nesting_follows_parents_that_enclose():
    rows = [
        _sym("Shape", "class", 3, 14),
        _sym("Shape.area", "method", 5, 9, parent="Shape"),
        _sym("Shape.area.unit", "function", 6, 7, parent="Shape.area"),
        _sym("Shape.name", "method", 11, 14, parent="Shape"),
        _sym("make", "function", 16, 17),
        # a Go method of a type declared elsewhere: its parent does not enclose it
        _sym("T.M", "method", 19, 20, parent="T"),
    ]
    got = [(s["qualified_name"], s["depth"]) for s in navigation.nest(rows)]
    assert got == [
        ("Shape", 0),
        ("Shape.area", 1),
        ("Shape.area.unit", 2),
        ("Shape.name", 1),
        ("make", 0),
        ("T.M", 0),
    ]


def test_a_definition_stored_in_parts_is_one_entry_around_its_methods():
    rows = [
        _sym("Big", "class", 1, 111, part=1),
        _sym("Big.m0", "method", 2, 10, parent="Big"),
        _sym("Big", "class", 112, 200, part=2),
        _sym("Big.m11", "method", 112, 120, parent="Big"),
        _sym("Big.m19", "method", 192, 200, parent="Big"),
        _sym("after", "function", 202, 203),
    ]
    got = [
        (s["qualified_name"], s["start_line"], s["end_line"], s["depth"])
        for s in navigation.nest(rows)
    ]
    assert got == [
        ("Big", 1, 200, 0),
        ("Big.m0", 2, 10, 1),
        ("Big.m11", 112, 120, 1),
        ("Big.m19", 192, 200, 1),
        ("after", 202, 203, 0),
    ]


def test_two_definitions_of_one_name_stay_two():
    rows = [
        _sym("f", "function", 1, 150, part=1),
        _sym("f", "function", 151, 300, part=2),
        _sym("f", "function", 302, 450, part=1),
        _sym("f", "function", 451, 600, part=2),
    ]
    got = [(s["start_line"], s["end_line"]) for s in navigation.nest(rows)]
    assert got == [(1, 300), (302, 600)]


def test_pagerank_favours_the_file_everything_imports():
    # 0 is imported by 1, 2, 3 and 4; 4 is a leaf nobody imports
    edges = [(1, 0, 1.0), (2, 0, 1.0), (3, 0, 1.0), (4, 0, 1.0), (4, 1, 1.0)]
    rank = navigation.pagerank(5, edges)
    assert sum(rank) == pytest.approx(1.0)
    assert rank[0] == max(rank)
    assert rank[0] > rank[1] > rank[4]
    assert navigation.pagerank(0, []) == []
    assert navigation.pagerank(3, []) == pytest.approx([1 / 3] * 3)


def test_graph_weighs_kinds_and_reads_co_change_both_ways():
    edges = [
        {
            "repository_id": 1,
            "source_path": "a",
            "target_path": "b",
            "relation": "import",
            "weight": 1,
        },
        {
            "repository_id": 1,
            "source_path": "t",
            "target_path": "a",
            "relation": "tests",
            "weight": 0.8,
        },
        {
            "repository_id": 1,
            "source_path": "a",
            "target_path": "c",
            "relation": "co_change",
            "weight": 0.4,
        },
    ]
    nodes, weighted = navigation.graph([(1, "a"), (1, "b")], edges)
    assert nodes == [(1, "a"), (1, "b"), (1, "t"), (1, "c")]
    assert weighted == [
        (0, 1, 1.0),
        (2, 0, pytest.approx(0.4)),
        (0, 3, pytest.approx(0.1)),
        (3, 0, pytest.approx(0.1)),
    ]


def test_a_block_fits_whole_or_cut_to_what_fits():
    symbols = navigation.nest(
        [
            _sym(f"f{i}", "function", 2 * i + 1, 2 * i + 2, signature=f"def f{i}(x):")
            for i in range(20)
        ]
    )
    lines = navigation.block("app:pkg/a.py", symbols, cut=False)
    assert lines[:2] == ["app:pkg/a.py", "  def f0(x):"]
    whole = "\n".join(lines)
    assert navigation.fit(lines, 10_000) == (whole, estimate_tokens(whole))
    budget = estimate_tokens(whole) // 2
    text, tokens = navigation.fit(lines, budget)
    assert tokens == estimate_tokens(text) <= budget
    assert text.startswith("app:pkg/a.py\n  def f0(x):") and text.endswith("\n  ...")
    # one more symbol line would not have fitted
    shown = text.split("\n")[1:-1]
    more = "\n".join([lines[0], *shown, lines[len(shown) + 1], "  ..."])
    assert estimate_tokens(more) > budget
    assert navigation.fit(lines, 3) is None
    assert navigation.fit(["app:pkg/empty.py"], 2) is None
    header = navigation.fit(["app:pkg/empty.py"], 100)
    assert header is not None and header[0] == "app:pkg/empty.py"


def test_nearest_paths_same_name_first():
    paths = [("app", "pkg/client.py"), ("app", "lib/client.py"), ("app", "pkg/clients.py")]
    assert navigation.nearest_paths(["src/client.py"], paths)[:2] == [
        "app:pkg/client.py",
        "app:lib/client.py",
    ]
    assert navigation.nearest_paths(["zzz/qqq.rs"], paths) == []


def test_random_jumps_favour_code():
    assert navigation.teleport("pkg/a.py") == 1.0
    assert navigation.teleport("tests/test_a.py") < 1.0
    assert navigation.teleport("docs/guide.md") < navigation.teleport("tests/test_a.py")
    # two files imported alike: the one the jumps favour ranks higher
    rank = navigation.pagerank(3, [(2, 0, 1.0), (2, 1, 1.0)], teleport=[1.0, 0.1, 1.0])
    assert sum(rank) == pytest.approx(1.0)
    assert rank[0] > rank[1]


def test_a_text_files_map_block_drops_its_fallback_chunks():
    chunks = [_sym("lines 1-60", "block", 1, 60), _sym("Intro", "section", 1, 9)]
    assert [s["kind"] for s in navigation.map_symbols("notes.txt", chunks)] == ["section"]
    assert navigation.map_symbols("run.sh", chunks) == chunks


def test_a_repository_name_may_hold_the_separators():
    options = navigation.readings("org/app:pkg/a.py:3-9", ["org/app", "org"])
    assert Reading("org/app", "pkg/a.py") in options
    assert Reading("org", "app:pkg/a.py") in options  # tried, and finds no such path
    assert options.index(Reading("org/app", "pkg/a.py")) < options.index(
        Reading("org", "app:pkg/a.py")
    )
