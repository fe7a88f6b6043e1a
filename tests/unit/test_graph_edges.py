"""The edges beyond imports as pure functions: tests and references (derived_edges.py, in the
database) and co-change from a git history (loader/codesift/cochange.py)."""

from datetime import UTC, datetime, timedelta

from codesift import cochange
from codesift_db.ingest import derived_edges as d
from codesift_db.pipeline import graph


def test_subject_strips_the_test_markers_of_each_convention():
    assert d.subject("tests/test_client.py") == "client"
    assert d.subject("pkg/client_test.go") == "client"
    assert d.subject("test/client.test.js") == "client"
    assert d.subject("src/ClientTest.java") == "client"
    assert d.subject("spec/client_spec.rb") == "client"
    assert d.subject("testing/python/fixtures.py") == "fixtures"
    assert d.subject("tests/__init__.py") is None
    assert d.subject("tests/test.py") is None


def test_a_test_reaches_the_code_file_its_name_names_nearest_first():
    paths = [
        "src/app/client.py",
        "src/other/client.py",
        "src/app/server.py",
        "tests/app/test_client.py",
        "tests/test_server.py",
        "tests/test_nothing.py",
        "docs/client.md",
        "src/app/cache/__init__.py",
        "tests/test_cache.py",
    ]
    edges = {(s, t) for s, t, rel, w in d.naming_edges(paths)}
    assert ("tests/app/test_client.py", "src/app/client.py") in edges
    assert ("tests/app/test_client.py", "src/other/client.py") not in edges
    assert ("tests/test_server.py", "src/app/server.py") in edges
    assert ("tests/test_cache.py", "src/app/cache/__init__.py") in edges
    assert not any(s == "tests/test_nothing.py" or t == "docs/client.md" for s, t in edges)
    only = d.naming_edges(paths, frozenset({"tests/test_server.py"}))
    assert [(s, t) for s, t, _, _ in only] == [("tests/test_server.py", "src/app/server.py")]


def test_a_test_reaches_the_files_defining_the_names_it_uses():
    defined = d.definers(
        [
            ("lib/response.js", "send_file"),
            ("lib/response.js", "set_header"),
            ("lib/request.js", "accepts"),
            ("lib/utils.js", "tmp"),  # too short to say anything
            ("a.js", "render"),
            ("b.js", "render"),
            ("c.js", "render"),  # defined in three files: says nothing
        ]
    )
    assert "render" not in defined and "tmp" not in defined
    text = "res.send_file('x'); res.set_header('a'); req.accepts('json'); render(); tmp()"
    edges = d.usage_edges({"test/res.send.js": text}, defined)
    assert [(s, t) for s, t, _, _ in edges] == [("test/res.send.js", "lib/response.js")]
    assert 0 < edges[0][3] <= 1


def test_an_imported_name_reaches_the_file_that_defines_it_behind_a_package():
    defined = d.definers([("pkg/sessions.py", "Session"), ("pkg/models.py", "Request")])
    imports = [
        ("app.py", "pkg/__init__.py", ["Session", "Request", "missing"]),
        ("pkg/api.py", "pkg/sessions.py", ["Session"]),  # defined where it resolved: no edge
        ("other/x.py", "lib/__init__.py", ["Session"]),  # not under the target's folder
    ]
    edges = {(s, t) for s, t, rel, w in d.reference_edges(imports, defined)}
    assert edges == {("app.py", "pkg/sessions.py"), ("app.py", "pkg/models.py")}


def _history(*commits):
    newest = datetime(2026, 1, 1, tzinfo=UTC)
    return [(newest - timedelta(days=age), list(paths)) for age, paths in commits]


def test_co_change_links_files_changed_together_in_commits_of_a_bounded_size():
    sweep = [f"gen/f{i}.py" for i in range(cochange.MAX_FILES_PER_COMMIT + 1)]
    history = _history(
        (0, ["a.py", "b.py"]),
        (10, ["a.py", "b.py", "c.py"]),
        (20, ["c.py", "gone.py"]),
        (30, ["c.py", "gone.py"]),
        (40, sweep),
        (50, sweep),
    )
    live = ["a.py", "b.py", "c.py", *sweep]
    edges = {(a, b): w for a, b, w in cochange.edges(history, live)}
    assert set(edges) == {("a.py", "b.py")}  # c.py shares one commit; gone.py is not live
    assert 0 < edges[("a.py", "b.py")] <= 1


def test_co_change_decays_with_age_and_reads_a_bounded_history():
    recent = _history((0, ["a.py", "b.py"]), (1, ["a.py", "b.py"]), (2, ["a.py", "c.py"]))
    old = recent[:2] + [(recent[0][0] - timedelta(days=2000), ["a.py", "c.py"])]
    w_recent = dict(((a, b), w) for a, b, w in cochange.edges(recent, ["a.py", "b.py", "c.py"]))
    w_old = dict(((a, b), w) for a, b, w in cochange.edges(old, ["a.py", "b.py", "c.py"]))
    assert w_old[("a.py", "b.py")] > w_recent[("a.py", "b.py")]
    n = cochange.MAX_COMMITS
    beyond = _history(*[(i, ["x.py", "y.py"] if i < n else ["p.py", "q.py"]) for i in range(n + 9)])
    assert [e[:2] for e in cochange.edges(beyond, ["p.py", "q.py", "x.py", "y.py"])] == [
        ("x.py", "y.py")
    ]


def test_the_walk_follows_imports_and_only_the_edge_kinds_switched_on():
    class Off:
        def __init__(self, *names):
            self.names = names

        def on(self, name):
            return name not in self.names

    assert graph.relations(Off()) == [*graph.IMPORT_RELATIONS, *graph.EDGE_KINDS]
    assert graph.relations(Off(*graph.EDGE_KINDS)) == list(graph.IMPORT_RELATIONS)
    assert graph.edge_weight([]) == 1.0


def test_the_tests_read_for_usage_edges_are_bounded():
    paths = [f"tests/test_m{i}.py" for i in range(d.MAX_TEST_FILES + 100)] + ["src/m.py"]
    wanted = d.wanted_tests(paths, None)
    assert len(wanted) == d.MAX_TEST_FILES and "src/m.py" not in wanted
    assert d.wanted_tests(paths, frozenset({"tests/test_m7.py"})) == ["tests/test_m7.py"]
    huge = {"tests/test_big.py": "charge_card " * 1_000_000}
    edges = d.usage_edges(huge, {"charge_card": ["pay.py"]})
    assert edges == []  # one name used, however often, is not enough
