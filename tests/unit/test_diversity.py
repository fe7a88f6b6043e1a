"""Unit tests of codesift_db.diversity (no database)."""

import copy
import math
import random

import pytest
from codesift_db.diversity import jaccard, prune, tokens

FETCH_USERS = '''def fetch_users(session, url, retries=3):
    """Fetch the users, retrying on timeouts."""
    for attempt in range(retries):
        try:
            response = session.get(url, timeout=10)
            response.raise_for_status()
            return response.json()
        except TimeoutError:
            log.warning("timeout on attempt %d", attempt)
    raise RuntimeError("gave up")'''

# Copy-pasted boilerplate: the same body under another name.
FETCH_ORDERS = FETCH_USERS.replace("fetch_users", "fetch_orders").replace("users", "orders")

PARSE_CONFIG = """def parse_config(path):
    with open(path) as fh:
        data = yaml.safe_load(fh)
    return Config(**data["codesift"])"""


def item(id_, text="", path=None, start=1, end=None, kind="function", score=1.0, **extra):
    if end is None:
        end = start + text.count("\n")
    return {
        "id": id_,
        "path": path if path is not None else f"{id_}.py",
        "start_line": start,
        "end_line": end,
        "text": text,
        "kind": kind,
        "score": score,
        **extra,
    }


def decisions(out):
    return [(o["id"], o["decision"], o.get("pruned_by")) for o in out]


# --------------------------------------------------------------------------- tokens / jaccard


def test_tokens_are_lowercased_identifiers_and_numbers():
    assert tokens("def searchBlobs(x1, 42): return SEARCH_blobs + 0.5  # é!") == {
        "def",
        "searchblobs",
        "x1",
        "42",
        "return",
        "search_blobs",
        "0",
        "5",
    }
    assert tokens("") == frozenset()
    assert tokens("+-*/ {} ()") == frozenset()
    # Non-ASCII characters separate tokens; they never glue two identifiers together.
    assert tokens("größe naïve") == {"gr", "e", "na", "ve"}
    assert isinstance(tokens("a b"), frozenset)


def test_jaccard():
    a, b = frozenset("abcd"), frozenset("cdef")
    assert jaccard(a, b) == pytest.approx(2 / 6)
    assert jaccard(a, a) == 1.0
    assert jaccard(a, frozenset("xyz")) == 0.0
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(a, frozenset()) == 0.0
    assert jaccard({"a", "b"}, ["a"]) == 0.5


# --------------------------------------------------------------------------- jaccard pruning


def test_copy_pasted_boilerplate_is_pruned_with_pruned_by():
    assert jaccard(tokens(FETCH_USERS), tokens(FETCH_ORDERS)) >= 0.88
    out = prune([item("u", FETCH_USERS), item("c", PARSE_CONFIG), item("o", FETCH_ORDERS)])
    assert decisions(out) == [
        ("u", "kept", None),
        ("c", "kept", None),
        ("o", "pruned:jaccard", "u"),
    ]
    assert "pruned_by" not in out[0]


def test_pruned_by_names_the_highest_scored_similar_item():
    # a and b are kept (J = 50/56 < 0.9); c is similar to both, more so to b: a, the
    # higher-scored, is named.
    base = " ".join(f"t{i}" for i in range(50))
    a, b, c = base + " x1 x2 x3", base + " y1 y2 y3", base + " x1 y1 y2"
    assert jaccard(tokens(b), tokens(c)) > jaccard(tokens(a), tokens(c)) >= 0.9
    out = prune([item("a", a), item("b", b), item("c", c)], threshold=0.9)
    assert decisions(out) == [
        ("a", "kept", None),
        ("b", "kept", None),
        ("c", "pruned:jaccard", "a"),
    ]


def test_threshold_boundary_is_inclusive():
    # 22 shared tokens out of 25: Jaccard is exactly 0.88, the default threshold.
    small = " ".join(f"w{i}" for i in range(22))
    big = small + " x1 x2 x3"
    assert jaccard(tokens(small), tokens(big)) == 0.88
    for first, second in [(small, big), (big, small)]:
        out = prune([item("a", first), item("b", second)])
        assert decisions(out)[1] == ("b", "pruned:jaccard", "a")
        out = prune([item("a", first), item("b", second)], threshold=0.8801)
        assert decisions(out)[1] == ("b", "kept", None)


def test_threshold_one_prunes_only_identical_token_sets():
    out = prune(
        [
            item("a", "alpha beta gamma"),
            item("b", "gamma, beta; ALPHA"),  # same token set
            item("c", "alpha beta gamma delta"),
        ],
        threshold=1,
    )
    assert decisions(out) == [
        ("a", "kept", None),
        ("b", "pruned:jaccard", "a"),
        ("c", "kept", None),
    ]


def test_threshold_zero_keeps_only_the_first_of_anything():
    out = prune([item("a", "alpha"), item("b", "beta"), item("c", ""), item("d", "{}")], 0.0)
    assert decisions(out) == [
        ("a", "kept", None),
        ("b", "pruned:jaccard", "a"),
        ("c", "pruned:jaccard", "a"),
        ("d", "pruned:jaccard", "a"),
    ]


def test_items_without_tokens_are_not_jaccard_pruned():
    out = prune([item("a", "}"), item("b", ""), item("c", ")")])
    assert [o["decision"] for o in out] == ["kept", "kept", "kept"]


@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan, math.inf, "0.8", None, True])
def test_bad_threshold_raises(bad):
    with pytest.raises(ValueError, match="threshold"):
        prune([item("a", "x")], threshold=bad)


def test_threshold_is_checked_even_without_items():
    with pytest.raises(ValueError):
        prune([], threshold=2)
    assert prune([]) == []


def _reference_prune(items, threshold):
    """The rules of the module docstring, written as plainly as possible: O(n^2)."""
    kept, out = [], []
    for it in items:
        decision, by = "kept", None
        s, e = it["start_line"], max(it["start_line"], it["end_line"])
        for k in kept:
            if k["kind"] == "file" and it["kind"] != "file" and k["path"] == it["path"]:
                decision, by = "pruned:file_in_pack", k["id"]
                break
        if decision == "kept":
            for k in kept:
                ks, ke = k["start_line"], max(k["start_line"], k["end_line"])
                shared = min(e, ke) - max(s, ks) + 1
                own = e - s + 1
                if k["path"] == it["path"] and shared > 0 and shared >= own / 2:
                    decision, by = "pruned:overlap", k["id"]
                    break
        if decision == "kept":
            for k in kept:
                if jaccard(tokens(it["text"]), tokens(k["text"])) >= threshold:
                    decision, by = "pruned:jaccard", k["id"]
                    break
        if decision == "kept":
            kept.append(it)
        out.append((it["id"], decision, by))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_matches_a_brute_force_reference(seed):
    rng = random.Random(seed)
    vocab = [f"v{i}" for i in range(rng.choice([8, 20, 60]))]
    items = []
    for i in range(rng.randint(1, 60)):
        if items and rng.random() < 0.3:  # a near copy of an earlier item
            words = rng.choice(items)["text"].split()
            words = [w for w in words if rng.random() > 0.1] + rng.sample(vocab, rng.randint(0, 2))
        else:
            words = rng.sample(vocab, rng.randint(0, len(vocab)))
        start = rng.randint(1, 80)
        items.append(
            item(
                i,
                " ".join(words),
                path=f"p{rng.randint(0, 5)}.py",
                start=start,
                end=start + rng.randint(-1, 40),
                kind=rng.choice(["file", "function", "method", "class"]),
                score=1.0 - i / 100,
            )
        )
    threshold = rng.choice([0.0, 0.3, 0.5, 0.7, 0.88, 0.95, 1.0])
    assert decisions(prune(items, threshold)) == _reference_prune(items, threshold)


# --------------------------------------------------------------------------- structural rules


def test_symbol_of_a_file_already_kept_whole_is_pruned():
    whole = item("f", "import os\n\ndef a():\n    return 1\n", path="m.py", kind="file")
    out = prune(
        [
            whole,
            item("s", "def a():\n    return 1", path="m.py", start=3, end=4),
            item("t", "def a():\n    return 1", path="other.py", start=3, end=4),
        ]
    )
    assert decisions(out) == [
        ("f", "kept", None),
        ("s", "pruned:file_in_pack", "f"),
        ("t", "kept", None),
    ]


def test_file_in_pack_wins_over_any_line_range():
    # The whole-file item's range does not even need to cover the symbol.
    out = prune(
        [
            item("f", "x = 1", path="m.py", start=1, end=1, kind="file"),
            item("s", "def zzz(): pass", path="m.py", start=90, end=90),
        ]
    )
    assert decisions(out)[1] == ("s", "pruned:file_in_pack", "f")


def test_range_contained_in_a_kept_item_is_pruned():
    out = prune(
        [
            item("cls", "class A:\n" + "    x = 1\n" * 40, path="m.py", start=10, end=50),
            item("meth", "def unique_name(self):\n    pass", path="m.py", start=20, end=21),
            item("same", "something else entirely", path="m.py", start=10, end=50),
            item("elsewhere", "def unique_name(self):\n    pass", path="n.py", start=20, end=21),
        ]
    )
    assert decisions(out) == [
        ("cls", "kept", None),
        ("meth", "pruned:overlap", "cls"),
        ("same", "pruned:overlap", "cls"),
        ("elsewhere", "kept", None),
    ]


@pytest.mark.parametrize(
    ("second", "decision"),
    [
        ((8, 30), "kept"),  # 3 of its 23 lines already kept
        ((6, 15), "pruned:overlap"),  # 5 of 10: exactly half
        ((3, 12), "pruned:overlap"),  # 8 of 10
        ((6, 20), "kept"),  # 5 of 15: mostly new
        ((11, 20), "kept"),  # adjacent, no shared line
        ((2, 9), "pruned:overlap"),  # inside the kept range
        ((1, 200), "kept"),  # contains the kept range, 190 new lines
    ],
)
def test_partial_overlap_rule(second, decision):
    start, end = second
    out = prune(
        [
            item("a", "alpha", path="m.py", start=1, end=10),
            item("b", "beta", path="m.py", start=start, end=end),
        ]
    )
    assert out[1]["decision"] == decision


def test_the_engine_before_judged_overlap_by_the_smaller_range():
    items = [
        item("a", "alpha", path="m.py", start=1, end=10),
        item("b", "beta", path="m.py", start=1, end=200),
    ]
    assert prune(items)[1]["decision"] == "kept"
    assert prune(items, own_lines=False)[1]["decision"] == "pruned:overlap"


def test_kept_symbol_prunes_a_later_whole_file_containing_it():
    out = prune(
        [
            item("s", "def a():\n    return 1", path="m.py", start=3, end=4),
            item("f", "import os\n\ndef a():\n    return 1", path="m.py", kind="file"),
        ]
    )
    assert decisions(out)[1] == ("f", "pruned:overlap", "s")


# --------------------------------------------------------------------------- contract


def test_order_and_extra_keys_are_preserved_and_input_untouched():
    items = [
        item("u", FETCH_USERS, score=0.9, repository="r", blob_sha="abc", why={"rank": 1}),
        item("o", FETCH_ORDERS, score=0.8, blob_sha="def", why={"rank": 2}),
        item(("tuple", 3), PARSE_CONFIG, score=0.7, why=None),
    ]
    before = copy.deepcopy(items)
    out = prune(items)
    assert items == before
    assert [o["id"] for o in out] == ["u", "o", ("tuple", 3)]
    for original, result in zip(items, out, strict=True):
        assert result is not original
        added = set(result) - set(original)
        assert added <= {"decision", "pruned_by"}
        assert {k: result[k] for k in original} == original


def test_a_previous_decision_is_overwritten():
    out = prune([item("a", "x", decision="stale"), item("b", "x")])
    assert decisions(out) == [("a", "kept", None), ("b", "pruned:jaccard", "a")]
