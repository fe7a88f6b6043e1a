"""The loops of edge resolution tick a budget.Ticker once per item: it runs the statement
that lets PostgreSQL act on a cancel (whose error must end the loop, not be swallowed as a
bad import is), and its True (the time budget of resolve_edges is spent) stops the loop
with what was found so far."""

import pytest
from codesift_db import budget
from codesift_db.ingest import derived_edges as d
from codesift_db.ingest.import_resolution import resolve_imports


class Canceled(Exception):
    """What plpy raises when a statement meets a pending cancel (an Exception, like it)."""


def _stop_after(n: int):
    calls = []

    def tick() -> bool:
        calls.append(1)
        return len(calls) > n

    return tick, calls


def test_the_ticker_runs_its_statement_at_most_every_interval_and_stops_when_out_of_time():
    ran = []
    always = budget.Ticker(budget.Budget(seconds=None), lambda: ran.append(1), every=0)
    assert [always() for _ in range(5)] == [False] * 5 and len(ran) == 5
    ran.clear()
    rarely = budget.Ticker(budget.Budget(seconds=None), lambda: ran.append(1), every=3600)
    assert not any(rarely() for _ in range(1000)) and ran == [] and rarely.ticks == 1000
    spent = budget.Budget(seconds=0).phase("tests by name")
    out_of_time = budget.Ticker(spent)
    assert out_of_time() and out_of_time()
    assert spent.reason() == "time budget 0 s: tests by name incomplete"

    def cancel():
        raise Canceled("canceling statement due to statement timeout")

    with pytest.raises(Canceled):
        budget.Ticker(None, cancel, every=0)()


def test_a_cancel_ends_import_resolution_which_swallows_bad_imports():
    paths = frozenset({"app.py", "pkg/__init__.py", "pkg/a.py"})
    imports = [
        {"module": m, "names": [], "relation": "import", "line": 1} for m in ("pkg", "pkg.a")
    ]
    imports.insert(1, {"module": None, "names": None})  # bad: skipped, not raised
    assert [e["target"] for e in resolve_imports("app.py", imports, "python", paths)] == [
        "pkg/__init__.py",
        "pkg/a.py",
    ]
    tick, calls = _stop_after(1)
    assert [
        e["target"] for e in resolve_imports("app.py", imports, "python", paths, None, tick)
    ] == ["pkg/__init__.py"]
    assert len(calls) == 2

    def cancel() -> bool:
        raise Canceled

    with pytest.raises(Canceled):
        resolve_imports("app.py", imports, "python", paths, None, cancel)


def test_each_loop_of_the_derived_edges_ticks_and_stops():
    tests = [f"tests/test_m{i}.py" for i in range(10)]
    paths = tests + [f"m{i}.py" for i in range(10)]
    tick, calls = _stop_after(3)
    assert len(d.naming_edges(paths, None, tick)) == 3 and len(calls) == 4
    definitions = [(f"m{i}.py", f"name_{i}") for i in range(10)]
    tick, calls = _stop_after(3)
    assert len(d.definers(definitions, tick)) == 3 and len(calls) == 4
    used = d.definers([("lib.py", "alpha_one"), ("lib.py", "alpha_two")])
    texts = {t: "alpha_one(); alpha_two()" for t in tests}
    assert len(d.usage_edges(texts, used)) == 10
    tick, calls = _stop_after(3)
    assert len(d.usage_edges(texts, used, tick)) == 3 and len(calls) == 4
    imports = [("app.py", "pkg/__init__.py", [f"name_{i}"]) for i in range(10)]
    defined = d.definers([(f"pkg/m{i}.py", f"name_{i}") for i in range(10)])
    assert len(d.reference_edges(imports, defined)) == 10
    tick, calls = _stop_after(3)
    assert len(d.reference_edges(imports, defined, tick)) == 3 and len(calls) == 4

    def cancel() -> bool:
        raise Canceled

    for loop in (
        lambda: d.naming_edges(paths, None, cancel),
        lambda: d.definers(definitions, cancel),
        lambda: d.usage_edges(texts, used, cancel),
        lambda: d.reference_edges(imports, defined, cancel),
    ):
        with pytest.raises(Canceled):
            loop()
