"""The pipeline's pure functions (plpython/codesift_db/pipeline/): fusion, priors, age and
recency, query shaping, graph seeds, and the statements' texts (plans.load, dense.py)."""

import math
import re

import pytest
from codesift_db import dense, plans
from codesift_db.pipeline import fusion, graph, query, recency, request


def test_rrf_sums_weighted_reciprocal_ranks():
    weights = {"lexical": 1.0, "dense": 0.5}
    assert fusion.rrf({"lexical": 1, "dense": 1}, weights) == pytest.approx(1 / 61 + 0.5 / 61)
    assert fusion.rrf({"lexical": 3, "dense": None}, weights) == pytest.approx(1 / 63)
    assert fusion.rrf({"lexical": None, "dense": None}, weights) == 0.0
    assert fusion.rrf({"lexical": 1}, weights, k=0) == 1.0


def test_fuse_keys_symbols_and_files_with_each_legs_rank():
    legs = {
        "lex_sym": [{"symbol_id": 7, "score": 9.0}, {"symbol_id": 8, "score": 4.0}],
        "dense_sym": [{"symbol_id": 8, "distance": 0.1}],
        "lex_file": [{"repository_id": 1, "path": "a.py", "score": 3.0}],
        "dense_file": [{"repository_id": 1, "path": "b.py", "distance": 0.2}],
    }
    items = fusion.fuse(legs, lexical_weight=1.0, dense_weight=2.0)
    assert set(items) == {("s", 7), ("s", 8), ("f", 1, "a.py"), ("f", 1, "b.py")}
    both = items[("s", 8)]
    assert (both["lexical_rank"], both["dense_rank"]) == (2, 1)
    assert (both["lexical_score"], both["dense_distance"]) == (4.0, 0.1)
    assert both["rrf"] == pytest.approx(1 / 62 + 2 / 61)
    only_dense = items[("f", 1, "b.py")]
    assert only_dense["lexical_rank"] is None and only_dense["lexical_score"] is None
    assert only_dense["rrf"] == pytest.approx(2 / 61)
    # found by both legs beats found by one at the same rank
    assert items[("s", 8)]["rrf"] > items[("s", 7)]["rrf"]


def test_fuse_of_no_legs_is_empty():
    assert (
        fusion.fuse({"lex_sym": [], "dense_sym": [], "lex_file": [], "dense_file": []}, 1, 1) == {}
    )


@pytest.mark.parametrize(
    ("path", "prior"),
    [
        ("lib/router/index.js", 1.0),
        ("tests/test_router.py", recency.TEST_PRIOR),
        ("test/app.router.js", recency.TEST_PRIOR),
        ("src/router_test.go", recency.TEST_PRIOR),
        ("src/Router.spec.ts", recency.TEST_PRIOR),
        ("src/RouterTests.cs", recency.TEST_PRIOR),
        ("spec/router_spec.rb", recency.TEST_PRIOR),
        ("CHANGELOG.md", recency.CHANGELOG_PRIOR),
        ("docs/History.md", recency.CHANGELOG_PRIOR),
        ("tests/changes.txt", recency.CHANGELOG_PRIOR),  # a changelog first
        ("lib/contest.py", 1.0),
        ("lib/latest/feed.py", 1.0),
        ("lib/news_feed.py", recency.CHANGELOG_PRIOR),  # by its name alone
    ],
)
def test_path_prior(path, prior):
    assert recency.path_prior(path) == prior


def test_age_days_and_recency():
    day = 86400.0
    assert recency.age_days(None, 10 * day) == 0.0
    assert recency.age_days(10 * day, None) == 0.0
    assert recency.age_days(4 * day, 10 * day) == pytest.approx(6.0)
    assert recency.age_days(11 * day, 10 * day) == 0.0  # never negative
    assert recency.recency(100.0, 0.0) == 1.0
    assert recency.recency(100.0, 0.01) == pytest.approx(math.exp(-1.0))
    assert recency.recency(0.0, 0.5) == 1.0


def test_terms_are_the_identifier_split_query_terms():
    assert query.terms("Where are redirects followed?") == ["redirects", "followed", "redirect"]
    assert query.terms("the a is of") == []


def test_two_terms_query_pairs_every_two_terms():
    assert query.two_terms_query(["a", "b", "c"]) == "('a' & 'b') | ('a' & 'c') | ('b' & 'c')"
    assert query.two_terms_query(["x"]) == "'x' & !'x'"  # fewer than two: matches nothing
    assert query.two_terms_query([]) == "'x' & !'x'"
    assert query.two_terms_query(["it's", "a\\b"]) == "('it''s' & 'a\\\\b')"
    many = [f"t{i}" for i in range(30)]
    n = query.PAIR_TERMS
    assert query.two_terms_query(many).count("&") == n * (n - 1) // 2
    assert "'t12'" not in query.two_terms_query(many)


def test_vector_literal():
    assert query.vector_literal([0.5, -1.0, 1 / 3]) == "[0.5,-1,0.3333333]"


def test_graph_seeds_are_the_best_distinct_paths():
    items = {
        1: {"path": "a.py", "score": 0.9},
        2: {"path": "a.py", "score": 0.8},
        3: {"path": "b.py", "score": 0.7},
        4: {"path": "c.py", "score": 0.6},
        5: {"path": "d.py", "score": 0.5},
    }
    paths, scores = graph.seeds(items)
    assert paths == ["a.py", "b.py", "c.py"][: graph.GRAPH_SEEDS]
    assert scores["a.py"] == 0.9


def test_file_tokens_is_a_share_of_the_budget():
    assert request.file_tokens(4000) == 1000
    assert request.file_tokens(1) == 0


def _stand_in_rule(name: str, param: str) -> str:
    text = re.sub(r"\s+", " ", plans.load(name))
    match = re.search(r"\(s\.token_count <= \$(\d) and not \((.*?)\)\)", text)
    assert match, name
    assert match.group(1) == param
    return match.group(2)


def test_the_stand_in_rule_is_the_same_in_hydration_and_in_the_stand_in_statement():
    assert _stand_in_rule("hydrate_symbols", "3") == _stand_in_rule("stand_in_symbols", "4")


def _code(statement: str) -> str:
    return "\n".join(line.split("--")[0].rstrip() for line in statement.splitlines()) + "\n"


def test_dense_statements_keep_only_the_filters_in_use():
    plain = _code(dense.symbols_query(40))
    assert "limit 40\n" in plain and "{" not in plain
    assert "$5" not in plain and "$6" not in plain and "$7" not in plain
    assert "-- only with" not in dense.symbols_query(40)
    filtered = _code(
        dense.symbols_query(7, path_prefix="src/", language="python", kinds=["function"])
    )
    for param in ("starts_with(v.path, $5)", "v.language = $6", "s.kind = any($7)"):
        assert param in filtered
    assert "limit 7\n" in filtered
    files = _code(dense.files_query(30, path_prefix="src/"))
    assert files.count("starts_with(v.path, $5)") == 2 and "$6" not in files
    assert "$5" not in _code(dense.files_query(30, language="go"))
    # a walk over a whole tenant: its files probed per row the walk reaches
    walks = (dense.symbols_query(40, tenant_walk=True), dense.files_query(30, tenant_walk=True))
    for walk in walks:
        assert "offset 0\n" in _code(walk)
    assert "offset 0" not in plain + filtered + files


def test_dense_statements_walk_the_index_or_sort_exactly():
    walk, exact = _code(dense.symbols_query(40)), _code(dense.symbols_query(40, exact=True))
    assert "order by s.embedding <=> $1\n" in walk and "{" not in walk
    # exact: the scope's blobs drive a lookup of their rows, and only those are sorted
    files = _code(dense.files_query(30, exact=True))
    for text in (exact, files):
        assert "cross join" in text and "order by distance\n" in text and "{" not in text


def test_a_tenant_with_a_small_share_of_the_index_is_sorted_exactly():
    assert dense.exact_is_cheaper(800, 240_000, 40)  # the walk would visit ~12,000 rows
    assert not dense.exact_is_cheaper(60_000, 240_000, 40)
    assert not dense.exact_is_cheaper(100_000, 100_000, 40)  # one tenant: the walk
    assert not dense.exact_is_cheaper(0, 240_000, 40)  # no statistics yet
    assert not dense.exact_is_cheaper(500, 0, 40)  # a Citus coordinator's empty shell table


def test_a_scope_is_sorted_exactly_below_a_bound_on_its_live_files():
    # 1M rows in the table, 900k of them the tenant's in 9,000 files: at most sqrt(40M) =
    # 6,324 rows are sorted exactly, so a scope of fewer than 64 of the tenant's files
    bound = dense.scope_files_bound(900_000, 9_000, 1_000_000, 40)
    assert bound == 64
    rows_per_file = 900_000 / 9_000
    assert dense.exact_is_cheaper((bound - 1) * rows_per_file, 1_000_000, 40)
    assert not dense.exact_is_cheaper((bound + 1) * rows_per_file, 1_000_000, 40)
    # the file leg: the tenant's rows are its files
    assert dense.scope_files_bound(9_000, 9_000, 1_000_000, 40) == 6_325


def test_a_walk_over_a_large_table_searches_wider_in_proportion():
    reference = dense.REFERENCE_ROWS
    assert dense.wider_ef_search(200, 0) == 200  # no statistics (a Citus coordinator)
    assert dense.wider_ef_search(200, reference) == 200
    assert dense.wider_ef_search(100, reference / 2) == 100  # never narrower
    assert dense.wider_ef_search(200, reference * 1.5) == 300
    assert dense.wider_ef_search(100, reference * 3) == 300
    assert dense.wider_ef_search(200, reference * 100) == dense.MOST_EF_SEARCH  # pgvector's bound
    assert dense.wider_ef_search(1000, reference * 2) == 1000


@pytest.mark.parametrize("k", [0, -1, True, 2.5, "3", None])
def test_dense_k_must_be_a_positive_integer(k):
    with pytest.raises(ValueError):
        dense.symbols_query(k)
