"""The calls the best candidates make (pipeline/callees.py) and the pack's fill
(pipeline/fill.py): pure functions, no database."""

from codesift_db import diversity, packing
from codesift_db.pipeline import callees, fill


def test_calls_are_counted_bare_or_as_methods_most_called_first():
    text = (
        "def send(self, request):\n"
        "    proxies = merge_setting(request.proxies, self.proxies)\n"
        "    if len(proxies):\n"
        "        self.rebuild_auth(request)\n"
        "    return merge_setting(proxies, send(request))\n"
    )
    # send( is the symbol itself; if and len are not calls of the code's own
    assert callees.calls(text, "Session.send") == [("merge_setting", True), ("rebuild_auth", False)]


def test_a_decorator_is_not_a_call():
    assert callees.calls("@fixture(scope='session')\ndef tmp(): return make_tmp()", "tmp") == [
        ("make_tmp", True)
    ]


def test_the_calls_read_are_bounded():
    text = "\n".join(f"helper_{i}(x)" for i in range(500))
    assert len(callees.calls(text, None)) == callees.MAX_CALLS


def _row(symbol_id, path, name, kind="function", qualified=None):
    qualified = qualified or (f"owner.{name}" if kind == "method" else name)
    return {
        "symbol_id": symbol_id,
        "repository_id": 1,
        "path": path,
        "name": name,
        "qualified_name": qualified,
        "kind": kind,
    }


def test_a_call_reaches_methods_and_functions_not_nested_ones_or_classes():
    seed = {"key": ("s", 1), "path": "app/a.py"}
    rows = [
        _row(2, "app/b.py", "walk", qualified="outer.walk"),  # local to outer
        _row(3, "app/c.py", "walk", kind="class"),
    ]
    assert callees._resolve(("walk", True), seed, rows) == []
    assert callees.callable_kind(_row(4, "app/d.py", "walk"))
    assert callees.callable_kind(_row(5, "app/d.py", "walk", kind="method"))


def test_a_call_means_the_definition_in_the_callers_file_first():
    seed = {"key": ("s", 1), "path": "app/sessions.py"}
    rows = [_row(2, "app/utils.py", "merge"), _row(3, "app/sessions.py", "merge", "method")]
    assert [r["symbol_id"] for r in callees._resolve(("merge", True), seed, rows)] == [3]


def test_a_method_call_never_reaches_another_file():
    seed = {"key": ("s", 1), "path": "app/sessions.py"}
    rows = [_row(2, "app/utils.py", "merge")]
    assert callees._resolve(("merge", False), seed, rows) == []
    assert [r["symbol_id"] for r in callees._resolve(("merge", True), seed, rows)] == [2]


def test_a_bare_call_of_a_common_name_means_nothing():
    seed = {"key": ("s", 1), "path": "app/sessions.py"}
    rows = [_row(10 + i, f"app/m{i}.py", "run") for i in range(callees.AMBIGUOUS + 1)]
    assert callees._resolve(("run", True), seed, rows) == []
    assert len(callees._resolve(("run", True), seed, rows[:-1])) == callees.AMBIGUOUS


def test_code_never_calls_a_tests_helper():
    rows = [_row(2, "tests/helpers.py", "build_fixture")]
    assert (
        callees._resolve(("build_fixture", True), {"key": ("s", 1), "path": "app/a.py"}, rows) == []
    )
    in_tests = {"key": ("s", 1), "path": "tests/test_a.py"}
    assert len(callees._resolve(("build_fixture", True), in_tests, rows)) == 1


def test_a_symbol_does_not_call_itself():
    seed = {"key": ("s", 1), "path": "app/a.py"}
    assert callees._resolve(("walk", True), seed, [_row(1, "app/a.py", "walk")]) == []


def _cand(path, kind, score, text="def f(): g()"):
    return {"path": path, "kind": kind, "text": text, "score": score}


def test_seeds_are_each_best_files_best_symbols_not_files_or_headers():
    items = {
        1: _cand("a.py", "file", 9.0),
        2: _cand("a.py", "header", 8.0),
        3: _cand("a.py", "function", 0.9),
        4: _cand("a.py", "method", 0.8),
        5: _cand("a.py", "method", 0.7),  # a third symbol of the same file
        6: _cand("b.py", "function", 0.6),
        7: _cand("c.py", "function", 0.5, text=None),  # no text: nothing to read calls from
        8: _cand("d.py", "function", 0.4),
        9: _cand("e.py", "function", 0.3),  # a fourth file
    }
    chosen = [(s["path"], s["score"]) for s in callees.seeds(items)]
    assert chosen == [("a.py", 0.9), ("a.py", 0.8), ("b.py", 0.6), ("d.py", 0.4)]


def _item(n, path, start, end, text, kind="method"):
    return {
        "id": f"s:{n}",
        "path": path,
        "start_line": start,
        "end_line": end,
        "kind": kind,
        "text": text,
        "score": 1.0 / n,
    }


def test_an_item_the_budget_left_out_prunes_nothing():
    big_first = _item(1, "a.py", 1, 400, "\n".join(f"first = {i}" for i in range(400)))
    # a class too big for what the first item leaves, holding the method that fits
    klass = _item(2, "b.py", 1, 300, "\n".join(f"chunk = {i}" for i in range(300)), "class")
    method = _item(3, "b.py", 10, 20, "def helper():\n    return 1")
    budget = packing.estimate_tokens(big_first["text"]) + 40
    out = {i["id"]: i for i in fill.fill([big_first, klass, method], budget, 0.88, True)}
    assert out["s:2"]["decision"] == packing.NOT_PACKED_BUDGET and not out["s:2"]["packed"]
    assert out["s:3"]["packed"] and out["s:3"]["decision"] == packing.KEPT
    assert len(out) == 3


def test_a_packed_class_still_prunes_its_methods():
    klass = _item(1, "b.py", 1, 30, "\n".join(f"chunk = {i}" for i in range(30)), "class")
    method = _item(2, "b.py", 10, 20, "def helper():\n    return 1")
    out = {i["id"]: i for i in fill.fill([klass, method], 4000, 0.88, True)}
    assert out["s:1"]["packed"] and out["s:2"]["decision"] == "pruned:overlap"


def test_the_fill_reads_each_candidates_tokens_once_over_its_rounds(monkeypatch):
    # copies of a file too big for what the best item leaves: each round leaves one out and
    # the next copy takes its place; every token set is computed once, not once a round
    small = _item(1, "small.py", 1, 2, "def helper():\n    return 1")
    body = "\n".join(f"value_{i} = compute({i})" for i in range(200))
    copies = [_item(n, f"copy{n}/big.py", 1, 200, body, "file") for n in range(2, 7)]
    calls = []
    real = diversity.tokens
    monkeypatch.setattr(diversity, "tokens", lambda text: calls.append(text) or real(text))
    out = {i["id"]: i for i in fill.fill([small, *copies], 200, 0.88, True)}
    assert out["s:1"]["packed"]
    assert all(out[c["id"]]["decision"] == packing.NOT_PACKED_BUDGET for c in copies)
    assert len(calls) == 1 + len(copies)


def test_a_name_read_to_the_lookups_bound_means_nothing():
    # sql/called_symbols.sql reads at most BARE_READ of a name called bare: at the bound
    # the code's one may be among those left out, so whichever were read decide nothing
    seed = {"key": ("s", 1), "path": "app/a.py"}
    code = _row(2, "app/helpers.py", "settle")
    tests = [_row(10 + i, f"tests/test_{i}.py", "settle") for i in range(callees.BARE_READ)]
    assert callees._resolve(("settle", True), seed, [code, *tests[:-2]]) == [code]
    assert callees._resolve(("settle", True), seed, [code, *tests[:-1]]) == []
