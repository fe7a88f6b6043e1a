"""Unit tests of codesift_db.packing (no database)."""

import copy
import random

import pytest
from codesift_db.packing import estimate_tokens, format_header, pack

CODE_LINES = [
    "def resolve_redirects(self, resp, req, stream=False, timeout=None):",
    '    """Receives a Response. Returns a generator of Responses or Requests."""',
    "    hist = []  # keep track of history",
    "    url = self.get_redirect_target(resp)",
    "    previous_fragment = urlparse(req.url).fragment",
    "    while url:",
    "        prepared_request = req.copy()",
    "        hist.append(resp)",
    "        resp.history = hist[1:]",
    "        if len(resp.history) >= self.max_redirects:",
    '            raise TooManyRedirects(f"Exceeded {self.max_redirects} redirects.")',
    "        resp.close()",
    "        url = self.get_redirect_target(resp)",
    "        yield resp",
    "    return None",
    "",
    "const router = express.Router();",
    "router.get('/users/:id', async (req, res) => { res.json(await db.user(req.params.id)); });",
    "    for (let i = 0; i < 10; i++) { total += values[i] * 0.5; }",
    "// ─── naïve café: non-ASCII in comments ───",
]


def item(id_, n_lines=5, start=1, decision="kept", **extra):
    lines = [CODE_LINES[(id_ * 7 + i) % len(CODE_LINES)] for i in range(n_lines)]
    return {
        "id": id_,
        "path": f"src/mod{id_}.py",
        "start_line": start,
        "end_line": start + n_lines - 1,
        "text": "\n".join(lines),
        "kind": "function",
        "score": 1.0 / (id_ + 1),
        "repository": "requests",
        "blob_sha": f"{id_:040x}",
        "decision": decision,
        **extra,
    }


def cost(it):
    return estimate_tokens(format_header(it) + "\n" + it["text"])


# --------------------------------------------------------------------------- estimate_tokens


def test_estimate_tokens_basics():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("}") >= 1
    code = "\n".join(CODE_LINES)
    # A BPE tokenizer reads code at roughly 3 to 4.5 characters per token.
    assert len(code) / 6 < estimate_tokens(code) < len(code) / 2
    assert estimate_tokens("x = 1\n" * 100) > estimate_tokens("x = 1\n" * 10)
    assert estimate_tokens("日本語のコメント") >= 8  # non-ASCII text is token-hungry
    assert estimate_tokens("\ud800") >= 1  # a lone surrogate does not raise


def test_estimate_tokens_never_shrinks_when_text_is_appended():
    rng = random.Random(7)
    pieces = [*CODE_LINES, "\n", " ", "_", "A", "a", "9", "é", "-->", "camelCase", "x_y"]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        more = text + "".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        assert estimate_tokens(more) >= estimate_tokens(text)


# --------------------------------------------------------------------------- format_header


def test_format_header():
    it = {
        "repository": "requests",
        "path": "src/requests/sessions.py",
        "start_line": 12,
        "end_line": 40,
        "symbol": "SessionRedirectMixin.resolve_redirects",
        "blob_sha": "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
    }
    assert format_header(it) == (
        "# requests:src/requests/sessions.py:12-40 "
        "(SessionRedirectMixin.resolve_redirects) @ blob 1a2b3c4d5e6f"
    )
    assert format_header({"path": "a.py", "start_line": 1, "end_line": 1}) == "# a.py:1-1"
    bare = {"path": "a.py", "start_line": 3, "end_line": 9, "repository": None, "symbol": ""}
    assert format_header(bare) == "# a.py:3-9"
    odd = {"path": "a\nb.py", "start_line": 1, "end_line": 2, "symbol": "f\r\ng"}
    assert "\n" not in format_header(odd) and "\r" not in format_header(odd)


# --------------------------------------------------------------------------- pack: contract


@pytest.mark.parametrize("bad", [0, -5, 1.5, 4000.0, "4000", None, True])
def test_bad_budget_raises(bad):
    with pytest.raises(ValueError, match="budget"):
        pack([item(0)], bad)
    with pytest.raises(ValueError):
        pack([], bad)


def test_everything_fits():
    items = [item(0), item(1), item(2, decision=None)]
    out = pack(items, 10_000)
    assert [o["packed"] for o in out] == [True, True, True]
    assert [o["decision"] for o in out] == ["kept", "kept", "kept"]
    for it, o in zip(items, out, strict=True):
        assert o["packed_text"] == format_header(it) + "\n" + it["text"]
        assert o["tokens"] == estimate_tokens(o["packed_text"]) == cost(it)
        assert o["truncated"] is False


def test_budget_equal_to_the_cost_is_enough():
    it = item(0)
    assert pack([it], cost(it))[0]["packed"] is True
    assert pack([it], cost(it) - 1)[0]["truncated"] is True


def test_items_that_do_not_fit_are_skipped_and_smaller_later_ones_packed():
    first, big, small = item(0, 3), item(1, 60), item(2, 2)
    budget = cost(first) + cost(small) + 5
    assert cost(big) > budget
    out = pack([first, big, small], budget)
    assert [o["packed"] for o in out] == [True, False, True]
    assert [o["decision"] for o in out] == ["kept", "not_packed:budget", "kept"]
    assert out[1]["tokens"] == 0 and out[1]["packed_text"] is None
    assert out[1]["truncated"] is False  # only the first item is ever truncated
    assert sum(o["tokens"] for o in out) <= budget


def test_pruned_items_are_never_packed_and_keep_their_decision():
    items = [
        item(0, decision="pruned:jaccard", pruned_by=9),
        item(1, decision="pruned:overlap", pruned_by=0),
        item(2, decision="kept"),
    ]
    out = pack(items, 10_000)
    assert [o["packed"] for o in out] == [False, False, True]
    assert [o["decision"] for o in out] == ["pruned:jaccard", "pruned:overlap", "kept"]
    assert out[0]["pruned_by"] == 9 and out[0]["tokens"] == 0 and out[0]["packed_text"] is None


def test_order_and_extra_keys_preserved_input_untouched():
    items = [item(i, why={"rank": i}, score=1.0 - i / 10) for i in range(6)]
    before = copy.deepcopy(items)
    out = pack(items, 200)
    assert items == before
    assert [o["id"] for o in out] == list(range(6))
    for it, o in zip(items, out, strict=True):
        assert o is not it
        assert set(o) - set(it) == {"packed", "tokens", "truncated", "packed_text"}
        for key in set(it) - {"decision", "end_line"}:
            assert o[key] == it[key]


# --------------------------------------------------------------------------- truncation


def test_oversized_first_item_is_truncated_at_a_line_boundary_and_marked():
    big = item(0, 200, start=100)
    lines = big["text"].split("\n")
    budget = 300
    assert cost(big) > budget
    out = pack([big, item(1, 3)], budget)
    first = out[0]
    assert first["packed"] and first["truncated"]
    assert first["tokens"] == estimate_tokens(first["packed_text"]) <= budget
    header, *body, marker = first["packed_text"].split("\n")
    k = len(body)
    assert 1 <= k < len(lines)
    assert body == lines[:k]  # whole leading lines only
    assert first["end_line"] == 100 + k - 1
    assert header == format_header({**big, "end_line": first["end_line"]})
    assert marker == f"# … truncated at line {first['end_line']} of {big['end_line']}"
    # As many lines as fit: one more line would not.
    longer = "\n".join(
        [
            format_header({**big, "end_line": first["end_line"] + 1}),
            *lines[: k + 1],
            f"# … truncated at line {first['end_line'] + 1} of {big['end_line']}",
        ]
    )
    assert estimate_tokens(longer) > budget
    assert sum(o["tokens"] for o in out) <= budget


def test_first_item_whose_first_line_does_not_fit_is_not_packed():
    huge_line = "x = [" + ", ".join(str(i) for i in range(2000)) + "]"
    first = {**item(0), "text": huge_line + "\nprint(x)", "end_line": 2}
    small = item(1, 1)
    budget = cost(small) + 2
    out = pack([first, small], budget)
    assert out[0]["packed"] is False and out[0]["decision"] == "not_packed:budget"
    assert out[0]["truncated"] is False and out[0]["end_line"] == 2
    assert out[1]["packed"] is True


def test_single_line_first_item_cannot_be_truncated():
    first = {**item(0), "text": "y = " + "+".join(["1"] * 3000), "end_line": 1}
    out = pack([first], 100)
    assert out[0]["packed"] is False and out[0]["decision"] == "not_packed:budget"


def test_first_candidate_is_the_first_not_pruned_item():
    items = [item(0, 3, decision="pruned:jaccard", pruned_by=5), item(1, 200), item(2, 200)]
    out = pack(items, 250)
    assert [o["packed"] for o in out] == [False, True, False]
    assert out[1]["truncated"] is True
    assert out[2]["truncated"] is False and out[2]["decision"] == "not_packed:budget"


# --------------------------------------------------------------------------- property


def _random_items(rng):
    items = []
    for i in range(rng.randint(0, 40)):
        n = rng.choice([1, 2, 3, 5, 10, 30, 80, 200])
        it = item(i, n, start=rng.randint(1, 500))
        it["decision"] = rng.choice(["kept"] * 6 + [None, "pruned:jaccard", "pruned:overlap"])
        if rng.random() < 0.2:
            it["symbol"] = rng.choice(["Session.send", "handler", "α.β"])
        if rng.random() < 0.2:
            it["text"] = "\n".join(
                rng.choice(CODE_LINES) + rng.choice(["", "  ", " # é", "\t"]) for _ in range(n)
            )
        items.append(it)
    return items


@pytest.mark.parametrize("seed", range(40))
def test_budget_is_never_exceeded_and_lines_are_never_cut(seed):
    rng = random.Random(seed)
    items = _random_items(rng)
    budget = rng.choice([1, 5, 20, 50, 100, 300, 1000, 4000, 20_000])
    out = pack(items, budget)
    assert len(out) == len(items)
    assert sum(o["tokens"] for o in out) <= budget

    remaining = budget
    first = True
    for it, o in zip(items, out, strict=True):
        eligible = it["decision"] in (None, "kept")
        if not eligible:
            assert o["decision"] == it["decision"] and not o["packed"]
        if not o["packed"]:
            assert o["tokens"] == 0 and o["packed_text"] is None and not o["truncated"]
            assert o["end_line"] == it["end_line"]
            if eligible:
                assert o["decision"] == "not_packed:budget"
                assert cost(it) > remaining  # greedy: it really did not fit
            first = first and not eligible
            continue
        assert o["decision"] == "kept"
        assert o["tokens"] == estimate_tokens(o["packed_text"])
        header, _, body = o["packed_text"].partition("\n")
        assert header == format_header(o)
        lines = it["text"].split("\n")
        if o["truncated"]:
            assert first, "only the first candidate may be truncated"
            *kept_lines, marker = body.split("\n")
            assert marker.startswith("# … truncated at line ")
            assert kept_lines == lines[: len(kept_lines)] and 0 < len(kept_lines) < len(lines)
            assert o["end_line"] == it["start_line"] + len(kept_lines) - 1
        else:
            assert body == it["text"] and o["end_line"] == it["end_line"]
        remaining -= o["tokens"]
        first = False


# --------------------------------------------------------------------------- no line twice


def _class_and_method():
    lines = [
        "class Session:",
        '    """A session."""',
        "    def send(self, request):",
        "        return self.adapter.send(request)",
        "",
        "    def close(self):",
        "        self.adapter.close()",
    ]
    cls = {**item(0), "start_line": 10, "end_line": 16, "text": "\n".join(lines), "kind": "class"}
    cls["symbol"] = "Session"
    method = {**cls, "id": 1, "start_line": 12, "end_line": 13, "kind": "method"}
    method.update(text="\n".join(lines[2:4]), symbol="Session.send")
    return cls, method


def _packed_lines(result: dict) -> list[str]:
    """The lines a packed item carries below its citation header."""
    return result["packed_text"].split("\n")[1:]


def test_a_class_packed_after_its_method_does_not_repeat_the_method():
    cls, method = _class_and_method()
    out = pack([method, cls], 10_000)
    assert [o["packed"] for o in out] == [True, True]
    assert _packed_lines(out[1]) == [
        "class Session:",
        '    """A session."""',
        "    # … lines 12-13 (Session.send) packed on their own",
        "",
        "    def close(self):",
        "        self.adapter.close()",
    ]
    assert out[1]["start_line"] == 10 and out[1]["end_line"] == 16  # it still cites the class
    assert out[1]["tokens"] == estimate_tokens(out[1]["packed_text"]) < cost(cls)


def test_a_cost_cache_serves_whole_items_and_never_an_elided_one():
    cls, method = _class_and_method()
    items = [method, cls, item(2, 30), item(3, 4)]
    plain = pack(items, 10_000)
    costs: dict = {}
    for _ in range(2):  # the fill calls pack again over the same items with the same cache
        assert pack(items, 10_000, costs) == plain
    # the class was elided: its cost is counted from what was packed, not served from the cache
    assert sorted(costs) == [1, 2, 3]
    assert costs[2] == cost(items[2])
    # a cached cost is what decides: one larger than the budget leaves the item out
    costs[3] = 10_001
    assert pack(items, 10_000, costs)[3]["decision"] == "not_packed:budget"


def test_lines_are_elided_only_for_what_was_packed_of_the_same_file_version():
    cls, method = _class_and_method()
    other_version = {**method, "blob_sha": "f" * 40}
    other_path = {**method, "path": "src/other.py"}
    unfit = {**method, "id": 2, "decision": "pruned:jaccard"}
    for before in (other_version, other_path, unfit):
        out = pack([before, cls], 10_000)
        assert out[1]["packed_text"] == format_header(cls) + "\n" + cls["text"]
    # the class first: it is packed whole and the method inside it is left to pruning
    out = pack([cls, method], 10_000)
    assert out[0]["packed_text"] == format_header(cls) + "\n" + cls["text"]


def test_nested_packed_spans_leave_one_marker():
    cls, method = _class_and_method()
    inner = {**method, "id": 2, "start_line": 13, "end_line": 13, "symbol": None}
    inner["text"] = "        return self.adapter.send(request)"
    out = pack([inner, method, cls], 10_000)
    markers = [line for line in _packed_lines(out[2]) if "packed on their own" in line]
    assert markers == ["    # … lines 12-13 (Session.send) packed on their own"]
    # the method holds the one-line item packed before it: its line is elided there
    assert _packed_lines(out[1])[1] == "        # … lines 13-13 packed on their own"


def test_a_partly_overlapping_span_is_elided_where_it_overlaps():
    cls, method = _class_and_method()
    # packed first: lines 14-17, of which 14-16 are the class's last lines
    tail = {**method, "id": 2, "start_line": 14, "end_line": 17, "symbol": "after"}
    tail["text"] = "\n".join(["", "    def close(self):", "        self.adapter.close()", "x = 1"])
    # packed second: lines 8-11, overlapping the class's first two
    head = {**method, "id": 3, "start_line": 8, "end_line": 11, "symbol": "before"}
    head["text"] = "\n".join(["import os", "", "class Session:", '    """A session."""'])
    out = pack([tail, head, cls], 10_000)
    assert out[1]["packed_text"] == format_header(head) + "\n" + head["text"]  # no overlap
    assert _packed_lines(out[2]) == [
        "# … lines 10-11 (before) packed on their own",
        "    def send(self, request):",
        "        return self.adapter.send(request)",
        "# … lines 14-16 (after) packed on their own",
    ]
    assert out[2]["start_line"] == 10 and out[2]["end_line"] == 16
