"""The learned ranker's parts that need no database: the features of a candidate, a stored
model's parsing (hostile values refused, never trusted), the pairwise training, and the
commit message and diff readers of history mining."""

import json
import math

import numpy as np
import pytest
from codesift import learn
from codesift.history import changed_definitions, old_ranges, question_of
from codesift_db.ranker import features, order, train
from codesift_db.ranker.model import FORMAT, VERSION, ModelError, parse

VIEWS = [
    {"path": "pkg/cart.py", "symbol": "Cart.total", "kind": "method", "start_line": 10,
     "end_line": 20, "score": 0.05, "lexical_rank": 1, "lexical_score": 3.0, "rrf": 0.03},
    {"path": "pkg/cart.py", "symbol": "Cart", "kind": "class", "start_line": 1,
     "end_line": 40, "score": 0.04, "dense_rank": 2, "dense_distance": 0.4},
    {"path": "tests/test_cart.py", "symbol": None, "kind": "file", "start_line": 1,
     "end_line": 30, "score": 0.01, "mention_rank": 2},
]  # fmt: skip


def _model(**over) -> dict:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "features": ["log_lines", "is_file"],
        "mean": [0.0, 0.0],
        "scale": [1.0, 1.0],
        "weights": [1.0, -2.0],
    }
    return {**doc, **over}


def test_vectors_have_every_feature_in_order():
    vs = features.vectors("total of the `Cart` is wrong", VIEWS)
    assert len(vs) == 3 and all(len(v) == len(features.NAMES) for v in vs)
    row = dict(zip(features.NAMES, vs[0], strict=True))
    assert row["lexical_inv_rank"] == 1.0 and row["is_method"] == 1.0
    assert row["name_in_question"] == 1.0  # "total"
    assert row["inv_rank_in_file"] == 1.0 and row["inv_file_rank"] == 1.0
    second = dict(zip(features.NAMES, vs[1], strict=True))
    assert second["inv_rank_in_file"] == 0.5 and second["name_in_question"] == 1.0
    third = dict(zip(features.NAMES, vs[2], strict=True))
    assert third["is_test"] == 1.0 and third["mention_inv_rank"] == 0.5
    assert third["inv_file_rank"] == 0.5


def test_view_renames_the_pipeline_keys():
    v = features.view({"path": "a.py", "prior": 0.3, "score": 1.0})
    assert v["path_prior"] == 0.3 and v["score"] == 1.0


def test_model_round_trips_and_scores():
    m = parse(json.dumps(_model()))
    assert parse(m.to_json()) == m
    scores = m.score(features.vectors("q", VIEWS))
    assert scores[1] > scores[0] > scores[2]  # the most lines first; a file last


@pytest.mark.parametrize(
    "raw",
    [
        "not json {",
        "[1, 2]",
        json.dumps(_model(format="other")),
        json.dumps(_model(version=2)),
        json.dumps(_model(features=["no_such_feature", "is_file"])),
        json.dumps(_model(features=["is_file", "is_file"])),
        json.dumps(_model(features=[])),
        json.dumps(_model(weights=[1.0])),
        json.dumps(_model(weights=[1.0, "x"])),
        json.dumps(_model(weights=[1.0, True])),
        json.dumps(_model(scale=[0.0, 1.0])),
        json.dumps(_model(mean=[1e300, 0.0])),
        "[" * 100_000,
    ],
)
def test_hostile_models_are_refused(raw):
    with pytest.raises(ModelError):
        parse(raw)


def _groups(seed: int = 0):
    """Questions whose gold candidate is the one with the most lines, never ranked first."""
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(40):
        views = [
            {"path": f"f{i}.py", "symbol": f"s{i}", "kind": "function", "start_line": 1,
             "end_line": int(rng.integers(1, 50)), "score": 1.0 / (i + 1)}
            for i in range(8)
        ]  # fmt: skip
        gold = max(range(1, 8), key=lambda i: views[i]["end_line"])
        views[gold]["end_line"] = 100
        x = np.array(features.vectors("question", views))
        y = np.array([int(i == gold) for i in range(8)])
        groups.append((x, y))
    return groups


def test_training_learns_the_signal_and_is_deterministic():
    a, b = train.fit(_groups()), train.fit(_groups())
    assert a == b and a is not None
    held_out = _groups(seed=1)
    hits = 0
    for x, y in held_out:
        scores = a.score(x.tolist())
        hits += int(y[int(np.argmax(scores))] == 1)
    assert hits / len(held_out) > 0.9
    assert all(math.isfinite(w) for w in a.weights)


def test_training_with_a_group_left_out_uses_only_the_rest():
    kept = [n for n, g in features.FEATURES if g != "size"]
    m = train.fit(_groups(), kept)
    assert m is not None and "log_lines" not in m.features


def test_no_model_without_a_question_with_gold_and_other():
    x = np.ones((3, len(features.NAMES)))
    assert train.fit([(x, np.zeros(3))]) is None
    assert train.fit([(x, np.ones(3))]) is None
    assert train.fit([]) is None


def test_question_of_drops_trailers_and_bounds():
    msg = "Fix the total\n\n\n\nIt was off by one.\nSigned-off-by: A <a@b>\n"
    assert question_of(msg) == "Fix the total\n\nIt was off by one."
    assert len(question_of("x" * 100_000)) == 4000


def test_old_ranges_and_changed_definitions():
    diff = (
        b"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
        b"@@ -7 +7 @@ class K:\n-        return 1\n+        return 2\n"
        b"@@ -10,0 +11,2 @@\n+x\n+y\n"
        b"diff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+z\n"
    )
    ranges = old_ranges(diff)
    assert ranges == {"m.py": [(7, 7), (11, 10)]}
    text = (
        "def alpha():\n    pass\n\n\nclass K:\n    def m(self):\n        return 1\n"
        "\n\ndef omega():\n    return 3\n"
    )
    gold = changed_definitions("m.py", text, ranges["m.py"])
    # the method (not also its class); lines added after omega's `def` line are inside it
    assert [g["symbol"] for g in gold] == ["K.m", "omega"]
    # lines added after the last line of a definition are not in it
    assert changed_definitions("m.py", text, [(12, 11)]) == []


def test_the_model_reorders_inside_each_file_only():
    files = ["a.py", "a.py", "b.py", "a.py", "b.py"]
    base = [0.9, 0.8, 0.7, 0.6, 0.5]
    model = [0.0, 1.0, 0.0, 2.0, 5.0]
    new = order.within_files(files, base, model)
    # a.py's scores 0.9, 0.8, 0.6 handed out by the model: a[3] (2.0), a[1] (1.0), a[0]
    assert new == [0.6, 0.8, 0.5, 0.9, 0.7]
    # each file keeps its scores, so a file still ranks by its best one
    for f in ("a.py", "b.py"):
        mine = [n for n, g in enumerate(files) if g == f]
        assert sorted(new[n] for n in mine) == sorted(base[n] for n in mine)
    # ties in the model keep the base order; one candidate per file changes nothing
    assert order.within_files(files, base, [0.0] * 5) == base
    assert order.within_files(["a", "b", "c"], [3.0, 2.0, 1.0], [1.0, 2.0, 3.0]) == [3.0, 2.0, 1.0]
    assert order.within_files([], [], []) == []


def test_training_pairs_are_drawn_inside_a_file():
    views = [
        {"path": p, "symbol": s, "kind": "function", "start_line": 1, "end_line": 9, "score": 1.0}
        for p, s in [("a.py", "x"), ("b.py", "y"), ("a.py", "z"), ("c.py", "w"), ("c.py", "v")]
    ]
    ex = learn.Example("sha", "2026-01-01", "question", views, [0, 1, 1, 0, 0])
    found = learn.groups([ex])
    # a.py holds a gold candidate and another; b.py has only gold, c.py none: left out
    assert len(found) == 1
    x, y = found[0]
    assert y.tolist() == [0, 1] and x.shape == (2, len(features.NAMES))
