"""diff_context's listing: the callers and tests whose bodies did not fit the budget, each
named on one line, so that a review or fix-the-build agent learns every test that reaches
the change (and can read one with find_symbol) even when only a few bodies fit.

    pack_with_listing(bodies, neighbours, token_budget) -> packed items, listings last

`bodies` are the items offered whole (the changes, then the callers and tests the budget
may hold); `neighbours` every caller and test found, best first, each with a `_key`. When
the bodies leave some neighbour out, they are packed again, the callers' before the
tests', under the budget less what listing those left out takes (at most LIST_SHARE of the
budget; a body that no longer fits is listed too, so this repeats, ROUNDS times at most).
The neighbours left out are listed in what remains: one item per role and file, the
best first, headed by the file's citation as packed items are ('# repo:path:A-B (N tests
not packed: lines and name of each) @ blob 1a2b3c4d5e6f'), then one line per definition
('120-135 TestClient.test_get'). The sum of the tokens never exceeds the budget."""

from __future__ import annotations

from .packing import format_header, one_line, pack
from .tokens import estimate_tokens

LIST_SHARE = 0.25  # of the budget the listings may take from the bodies at most
ROUNDS = 4  # packings to find the room the listings need (each frees more than it adds)
LISTED = {"caller": "caller_list", "test": "test_list"}  # a listing's role


def entry(n: dict) -> str:
    """One listed definition: '120-135 TestClient.test_get'."""
    return f"{n['start_line']}-{n['end_line']} {one_line(n.get('symbol') or '')}".rstrip()


def _header(first: dict, start: int, end: int, count: int) -> str:
    """The listing's first line, headed as packed items are (packing.format_header)."""
    what = f"{count} {first['role']}{'s' if count != 1 else ''} not packed: lines and name of each"
    return format_header({**first, "start_line": start, "end_line": end, "symbol": what})


def _span(members: list[dict]) -> tuple[int, int]:
    return min(n["start_line"] for n in members), max(n["end_line"] for n in members)


def _listing(members: list[dict]) -> dict:
    """The listing item of one role and file."""
    first, count = members[0], len(members)
    start, end = _span(members)
    text = "\n".join([_header(first, start, end, count)] + [entry(n) for n in members])
    return {
        "role": LISTED[first["role"]],
        "repository": first["repository"],
        "ref": first["ref"],
        "path": first["path"],
        "symbol": None,
        "start_line": start,
        "end_line": end,
        "reason": (
            f"{count} {first['role']}{'s' if count != 1 else ''} of this file "
            "did not fit whole: the lines and name of each (find_symbol reads one)"
        ),
        "tokens": estimate_tokens(text),
        "packed_text": text,
        "packed": True,
        "listed": count,
    }


def _plan(left_out: list[dict], limit: int) -> tuple[list[list[dict]], int]:
    """The members of each listing within `limit` tokens (the most definitions that fit,
    best first; a file's listing comes where its best one does), and the tokens they take
    at most. A listing's cost is bounded by its header's plus each line's (a line break
    ends every run the estimate counts, and each part rounds up), so one pass decides."""
    groups: dict[tuple, list[dict]] = {}
    heads: dict[tuple, tuple[int, int, int]] = {}  # each group's span and header tokens
    total = 0
    for n in left_out:
        key = (n["role"], n["repository"], n["ref"], n["path"])
        members = groups.get(key, [])
        start, end, head_was = heads.get(key, (n["start_line"], n["end_line"], 0))
        start, end = min(start, n["start_line"]), max(end, n["end_line"])
        head = estimate_tokens(_header(members[0] if members else n, start, end, len(members) + 1))
        cost = head - head_was + estimate_tokens("\n" + entry(n))
        if total + cost > limit:
            continue  # a shorter line of a listed file may still fit
        groups.setdefault(key, []).append(n)
        heads[key] = (start, end, head)
        total += cost
    return list(groups.values()), total


def listings(left_out: list[dict], limit: int) -> list[dict]:
    """The listing items of `left_out` (best first) within `limit` tokens (_plan)."""
    return [_listing(m) for m in _plan(left_out, limit)[0]]


def _cost(left_out: list[dict], token_budget: int) -> int:
    """The tokens listing every one of `left_out` takes at most (a budget's worth)."""
    return _plan(left_out, token_budget)[1]


def _missing(packed: list[dict], neighbours: list[dict]) -> list[dict]:
    held = {p["_key"] for p in packed if p.get("_key") is not None}
    return [n for n in neighbours if n["_key"] not in held]


def pack_with_listing(bodies: list[dict], neighbours: list[dict], token_budget: int) -> list:
    """The packed bodies, then the listings of the neighbours they leave out (module
    docstring)."""
    packed = [p for p in pack(bodies, token_budget) if p["packed"]]
    left_out = _missing(packed, neighbours)
    # once some must be listed, the callers' bodies go before the tests': a test is as
    # useful listed (what to run), a caller's code shows how the change is used
    callers_first = sorted(bodies, key=lambda b: b.get("role") == "test")
    reserve = 0
    for _ in range(ROUNDS):
        need = min(_cost(left_out, token_budget), int(LIST_SHARE * token_budget))
        if need <= reserve:
            break
        reserve = need
        packed = [p for p in pack(callers_first, token_budget - reserve) if p["packed"]]
        left_out = _missing(packed, neighbours)
    used = sum(p["tokens"] for p in packed)
    return packed + listings(left_out, token_budget - used)
