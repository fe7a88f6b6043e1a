"""bench/eval_metrics.py: the retrieval metrics of the evaluation harness."""

import pytest

from bench.eval_metrics import (
    METRIC_KEYS,
    GoldSymbol,
    Listed,
    Row,
    aggregate,
    context_hit_rate,
    context_recall,
    dedupe,
    first_hit_rank,
    hit_at,
    names_match,
    overlaps,
    pack_reach,
    reciprocal_rank,
    report,
    score_query,
    symbol_hit,
)


def test_dedupe_keeps_first_appearance_order():
    assert dedupe(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert dedupe([]) == []


def test_first_hit_rank_strict_and_lenient():
    ranked = ["History.md", "test/utils.js", "lib/utils.js"]
    assert first_hit_rank(ranked, ["lib/utils.js"]) == 3
    # lenient: basename match, as the peer scored (test/utils.js counts for lib/utils.js)
    assert first_hit_rank(ranked, ["lib/utils.js"], lenient=True) == 2
    assert first_hit_rank(ranked, ["lib/view.js"]) is None
    assert first_hit_rank([], ["lib/view.js"], lenient=True) is None


def test_hit_at_and_reciprocal_rank():
    assert hit_at(1, 1) and hit_at(5, 5) and not hit_at(6, 5) and not hit_at(None, 10)
    assert reciprocal_rank(None) == 0.0
    assert reciprocal_rank(4) == 0.25


def test_overlaps_inclusive_ranges():
    assert overlaps(1, 10, 10, 20)
    assert overlaps(5, 6, 1, 100)
    assert not overlaps(1, 9, 10, 20)
    assert not overlaps(21, 30, 10, 20)


def test_names_match_qualified_and_bare():
    assert names_match("Context.ClientIP", "ClientIP")
    assert names_match("ClientIP", "Context.ClientIP")
    assert names_match("a.b", "a.b")
    assert not names_match("Context.ClientIPs", "ClientIP")


GOLD = [GoldSymbol("a.py", "f", 10, 20)]


def test_symbol_hit_uses_only_symbol_rows_and_the_first_k():
    file_row = Row("a.py", 1, 100, "file")
    far = Row("a.py", 30, 40, "function", "g")
    near = Row("a.py", 18, 25, "function", "h")
    other = [Row(f"x{i}.py", 1, 5, "function", "x") for i in range(5)]
    assert symbol_hit([file_row], GOLD) is False  # a whole file is not a symbol hit
    assert symbol_hit([file_row, far, near], GOLD) is True
    assert symbol_hit([*other, near], GOLD) is False  # sixth symbol row
    assert symbol_hit([near], []) is None


def test_symbol_hit_by_name_when_gold_has_no_lines():
    gold = [GoldSymbol("a.py", "Cls.method")]
    assert symbol_hit([Row("a.py", 3, 9, "method", "Cls.method")], gold) is True
    assert symbol_hit([Row("b.py", 3, 9, "method", "Cls.method")], gold) is False
    assert symbol_hit([Row("a.py", 3, 9, "method", "Cls.other")], gold) is False


def test_context_recall_counts_files_and_symbols():
    packed = [Row("a.py", 15, 16, "function", "f", 30), Row("c.py", 1, 9, "file", None, 50)]
    # gold: files a.py (covered), b.py (not); symbol a.py:10-20 (covered) -> 2 of 3
    assert context_recall(packed, ["a.py", "b.py"], GOLD) == pytest.approx(2 / 3)
    assert context_recall(packed, ["c.py"]) == 1.0
    assert context_recall([], ["c.py"]) == 0.0
    assert context_recall(packed, [], []) is None
    # a packed row on the gold path that does not overlap the symbol covers the file only
    assert context_recall([Row("a.py", 30, 40, "function")], ["a.py"], GOLD) == 0.5


LISTED = (
    Listed(None, "header", 1, 8),
    Listed("Cls", "class", 10, 80),
    Listed("Cls.f", "method", 10, 20),
    Listed("helper", "function", 82, 90),
)
OUTLINE_A = Row("a.py", 1, 90, "outline", None, 12, LISTED)


def test_an_outline_holds_no_code_for_strict_recall():
    gold = [GoldSymbol("a.py", "Cls.f", 10, 20)]
    # the outline's lines span the gold symbol and it lists its name: still no code packed
    assert context_recall([OUTLINE_A], ["a.py"], gold) == 0.0
    assert (
        context_recall([OUTLINE_A, Row("a.py", 30, 40, "method", "Cls.g")], ["a.py"], gold) == 0.5
    )


def test_pack_reach_counts_the_names_an_outline_lists():
    gold = [GoldSymbol("a.py", "Cls.f", 10, 20), GoldSymbol("a.py", "other", 50, 60)]
    # the file (an outline is on it) and Cls.f (listed); `other` is neither packed nor listed
    assert pack_reach([OUTLINE_A], ["a.py"], gold) == pytest.approx(2 / 3)
    # a bare gold name matches the qualified one listed, and the other way round
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "f", 10, 20)]) == 1.0
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "Mod.helper", 1, 2)]) == 1.0
    # an outline of another file, or a name that only ends the same way, reaches nothing
    elsewhere = Row("b.py", 1, 90, "outline", None, 12, LISTED)
    assert pack_reach([elsewhere], ["a.py"], gold) == 0.0
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "Cls.ff", 10, 20)]) == 0.0
    # code packed reaches as it covers; without an outline reach is strict recall
    body = Row("a.py", 50, 60, "function", "other", 40)
    assert pack_reach([body, OUTLINE_A], ["a.py"], gold) == 1.0
    assert pack_reach([body], ["a.py"], gold) == context_recall([body], ["a.py"], gold)
    assert pack_reach([], [], []) is None


def test_an_outline_s_header_reaches_the_import_lines_it_holds():
    imports = GoldSymbol("a.py", "imports", 2, 6)
    assert pack_reach([OUTLINE_A], [], [imports]) == 1.0
    # lines past the header, or a gold known only by name, are not reached by it
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "imports", 2, 12)]) == 0.0
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "imports")]) == 0.0
    # a definition's span holding the gold's lines is no header: it reaches by name only
    assert pack_reach([OUTLINE_A], [], [GoldSymbol("a.py", "other", 12, 14)]) == 0.0


def test_an_outline_row_is_no_symbol_hit():
    gold = [GoldSymbol("a.py", "Cls.f", 10, 20)]
    assert symbol_hit([OUTLINE_A], gold) is False


def test_score_query_ranks_files_by_first_appearance_and_cuts_at_k():
    rows = [
        Row("x.py", 1, 2, "function"),
        Row("x.py", 5, 9, "function"),
        Row("y.py", 1, 50, "file"),
        Row("a.py", 10, 12, "function"),
    ]
    r = score_query(rows, ["a.py"], GOLD)
    assert r.files == ["x.py", "y.py", "a.py"]
    assert (r.rank, r.rank_lenient, r.symbol_hit) == (3, 3, True)
    assert r.context_recall is None and r.tokens is None
    cut = score_query(rows, ["a.py"], GOLD, k=2)
    assert cut.rank is None and cut.files == ["x.py", "y.py"]
    assert score_query(rows, ["a.py"], GOLD, symbol_level=False).symbol_hit is None


def test_score_query_packed_reports_recall_and_tokens():
    rows = [Row("a.py", 10, 12, "function", "f", 40), Row("y.py", 1, 5, "file", None, 60)]
    r = score_query(rows, ["a.py", "z.py"], [], packed=True)
    assert r.context_recall == 0.5 and r.pack_reach == 0.5
    assert r.context_hit is True
    assert r.tokens == 100
    # an outline of the missing gold file: reached, not packed; its tokens count
    mapped = score_query(
        [*rows, Row("z.py", 1, 9, "outline", None, 7)], ["a.py", "z.py"], [], packed=True
    )
    assert (mapped.context_recall, mapped.pack_reach, mapped.tokens) == (0.5, 1.0, 107)


def test_aggregate_fractions():
    results = [
        score_query([Row("g.py", kind="file")], ["g.py"]),  # rank 1
        score_query([Row("x.py", kind="file"), Row("g.py", kind="file")], ["g.py"]),  # rank 2
        score_query([Row(f"{i}.py", kind="file") for i in range(7)], ["6.py"]),  # rank 7
        score_query([Row("x.py", kind="file")], ["g.py"]),  # miss
    ]
    agg = aggregate(results)
    assert set(agg) == set(METRIC_KEYS)
    assert agg["r1"] == 0.25
    assert agg["r5"] == 0.5
    assert agg["r10"] == 0.75
    assert agg["mrr"] == pytest.approx((1 + 0.5 + 1 / 7) / 4)
    assert agg["symbol_r5"] is None and agg["context_recall"] is None and agg["tokens"] is None
    assert agg["pack_reach"] is None
    assert all(0 <= agg[k] <= 1 for k in ("r1", "r5", "r10", "mrr", "r1_lenient", "mrr_lenient"))
    assert aggregate([]) == dict.fromkeys(METRIC_KEYS)


def test_aggregate_lenient_and_pack_metrics():
    results = [
        score_query(
            [Row("test/utils.js", 1, 9, "file", None, 10), Row("lib/utils.js", 1, 9, "file")],
            ["lib/utils.js"],
            packed=True,
        ),
        score_query([Row("a.py", 1, 2, "function", "f", 5)], ["b.py"], packed=True),
    ]
    agg = aggregate(results)
    assert (agg["r1"], agg["r1_lenient"]) == (0.0, 0.5)
    assert agg["mrr"] == 0.25 and agg["mrr_lenient"] == 0.5
    assert agg["context_recall"] == 0.5 and agg["pack_reach"] == 0.5
    assert agg["tokens"] == 7.5
    assert context_hit_rate(results) == 0.5


def test_report_shape():
    per_query = {
        "q1": {"lex": score_query([Row("a.py", kind="file")], ["a.py"])},
        "q2": {"lex": score_query([Row("b.py", kind="file")], ["a.py"])},
    }
    out = report(per_query, {"q1": "semantic", "q2": "identifier"}, ["lex"])
    assert set(out) == {"arms", "by_kind", "queries"}
    assert set(out["arms"]["lex"]) == set(METRIC_KEYS)
    assert out["arms"]["lex"]["r1"] == 0.5
    assert out["by_kind"]["semantic"]["lex"]["r1"] == 1.0
    assert out["by_kind"]["identifier"]["lex"]["r1"] == 0.0
    assert out["queries"] == [
        {"id": "q1", "first_hit_rank": {"lex": 1}},
        {"id": "q2", "first_hit_rank": {"lex": None}},
    ]
