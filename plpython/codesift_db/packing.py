"""Token packing: fill a token budget with the kept candidates, best first, citing each one.

Server-free: the PL/Python shim of the retrieval pipeline (stage 4) imports this module.

    format_header(item) -> str       '# repo:path:12-40 (Class.method) @ blob 1a2b3c4d5e6f'
    citation(repo, path, start, end) -> str   'repo:path:12-40' (citations.py; the rows' column)
    pack(items, budget) -> items with packed, tokens, truncated, packed_text (and decision)

pack takes candidate dicts in descending score order (normally the output of
diversity.prune), with `path`, `start_line`, `end_line` (1-based, inclusive), `text` (those
lines joined by '\\n') and optionally `repository`, `symbol`, `blob_sha`, `decision`. It
returns every item, in input order, as a new dict with every input key kept and these added:

* `packed`: whether the item is in the pack; `packed_text`: its header line, '\\n', and the
  text included (None when not packed); `tokens`: tokens.estimate_tokens(packed_text), 0 when not
  packed; `truncated`: whether only leading lines of the item were included.
* `decision`: items whose decision is missing or 'kept' are candidates; one that does not fit
  becomes 'not_packed:budget' (a packed item without a decision gets 'kept'). Any other
  decision ('pruned:...') is left as it is and the item is never packed.

Rules: greedy in input order under an exact budget: the sum of `tokens` over packed items
never exceeds `budget` (headers and truncation markers included). An item that does not fit
is skipped and later, smaller items may still fit. Text is never cut inside a line. Only the
first candidate, when it alone exceeds the budget, is truncated: it keeps as many whole
leading lines as fit together with its header and a last line
'# … truncated at line N of M' (N the last included line, M the original end_line, both file
line numbers); its `end_line` becomes N. If not even its first line fits, it is not packed.
The pack never holds the same lines twice: an item whose lines hold an item packed before it
(a class after one of its methods, in the same file version), or overlaps one, has those
lines replaced by one line '# … lines A-B (Class.method) packed on their own', indented as
the first of them.
"""

from __future__ import annotations

from .citations import citation as citation  # re-exported: pipeline/rows.py
from .tokens import estimate_tokens

NOT_PACKED_BUDGET = "not_packed:budget"
KEPT = "kept"
BLOB_SHA_CHARS = 12
TRUNCATION_MARKER = "# … truncated at line {last} of {end}"
ELIDED_MARKER = "# … lines {first}-{last}{what} packed on their own"
# what an item the pack leaves out carries
NOT_PACKED = {"packed": False, "tokens": 0, "truncated": False, "packed_text": None}


def one_line(value: object) -> str:
    """A value as one line: its line breaks become spaces (headers, citations, names)."""
    return " ".join(str(value).splitlines())


def format_header(item: dict) -> str:
    """The citation line of an item.

    '# {repository}:{path}:{start_line}-{end_line} ({symbol}) @ blob {blob_sha[:12]}' (its
    citation, citations.py); the repository prefix, the symbol and the blob part are left out
    when missing or empty. Line breaks inside values become spaces, so the header is always
    one line.
    """
    path = one_line(item["path"])
    repository = item.get("repository")
    where = f"{one_line(repository)}:{path}" if repository else path
    header = f"# {where}:{item['start_line']}-{item['end_line']}"
    symbol = item.get("symbol")
    if symbol:
        header += f" ({one_line(symbol)})"
    blob_sha = item.get("blob_sha")
    if blob_sha:
        header += f" @ blob {one_line(blob_sha)[:BLOB_SHA_CHARS]}"
    return header


def _check_budget(budget: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(
            f"budget must be a positive integer number of tokens (e.g. 4000), got {budget!r}"
        )
    return budget


def longest_prefix(n: int, fits) -> int:
    """The largest k in 0..n for which fits(k) holds, fits being true up to some k and false
    after it (a cost that only grows with k, checked against a budget): a binary search."""
    lo, hi = 0, n  # invariant: fits(lo) or lo == 0; not fits(hi + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _truncate(item: dict, lines: list[str], budget: int) -> tuple[str, int, int] | None:
    """(packed_text, tokens, last_line) of the longest whole-line prefix that fits, or None.

    The prefix keeps k of the item's lines (1 <= k < len(lines)), the header cites lines
    start..start+k-1 and a marker line ends it. Costs grow with k (every count in the
    estimator only grows when text is appended; only a header or marker number gaining a
    digit can add a token), so a binary search finds the largest k, and the result is
    checked against the budget before it is returned.
    """
    start = int(item["start_line"])
    end = item["end_line"]

    def render(k: int) -> tuple[str, int]:
        last = start + k - 1
        header = format_header({**item, "end_line": last})
        marker = TRUNCATION_MARKER.format(last=last, end=end)
        text = "\n".join([header, *lines[:k], marker])
        return text, estimate_tokens(text)

    lo = longest_prefix(len(lines) - 1, lambda k: render(k)[1] <= budget)
    while lo > 0:
        text, cost = render(lo)
        if cost <= budget:
            return text, cost, start + lo - 1
        lo -= 1
    return None


def _where(item: dict) -> tuple:
    return (item.get("repository"), item["path"], item.get("blob_sha"))


def _elide(item: dict, text: str, packed: list[tuple[int, int, str]]) -> str:
    """text with the lines of items packed before it (a method inside this class, or the
    part of a neighbour that overlaps it) replaced by one marker line each: the pack never
    holds the same lines twice. An item inside one packed span is left to pruning."""
    start, end = int(item["start_line"]), int(item["end_line"])
    inner = sorted(
        (max(a, start), min(b, end), s)
        for a, b, s in packed
        if a <= end and start <= b and not (a <= start and end <= b)
    )
    if not inner:
        return text
    lines = text.split("\n")
    out: list[str] = []
    at = start  # the file line of lines[at - start]
    for a, b, symbol in inner:
        if b < at:
            continue  # inside a span already elided
        a = max(a, at)
        out.extend(lines[at - start : a - start])
        first = lines[a - start] if a - start < len(lines) else ""
        indent = first[: len(first) - len(first.lstrip())]
        out.append(
            indent + ELIDED_MARKER.format(first=a, last=b, what=f" ({symbol})" if symbol else "")
        )
        at = b + 1
    out.extend(lines[at - start :])
    return "\n".join(out)


def pack(items: list[dict], budget: int, costs: dict | None = None) -> list[dict]:
    """Greedy token packing under an exact budget; see the module docstring for the rules.

    `costs`, when given, keeps by `id` what each item costs packed whole (its header and
    its whole text, as coverage.cost counts it) for the next call over the same items.
    Raises ValueError unless budget is an int > 0.
    """
    remaining = _check_budget(budget)
    out: list[dict] = []
    first = True
    spans: dict[tuple, list[tuple[int, int, str]]] = {}  # packed lines per file version
    for item in items:
        result = dict(item)
        out.append(result)
        result.update(NOT_PACKED)
        decision = item.get("decision")
        if decision not in (None, KEPT):
            continue
        is_first, first = first, False

        header = format_header(item)
        whole = item.get("text") or ""
        text = _elide(item, whole, spans.get(_where(item), []))
        # an item packed whole costs the same in every call; an elided one is counted anew
        cache = costs if costs is not None and text is whole and "id" in item else None
        cost = cache.get(item["id"]) if cache is not None else None
        if cost is None:
            # Estimates only grow when text is appended: a header that alone does not fit
            # rules the item out without estimating its text.
            if estimate_tokens(header) > remaining and not is_first:
                result["decision"] = NOT_PACKED_BUDGET
                continue
            cost = estimate_tokens(f"{header}\n{text}")
            if cache is not None:
                cache[item["id"]] = cost
        packed_text = None
        truncated = False
        if cost > remaining and is_first:
            lines = text.split("\n")
            cut = _truncate(item, lines, remaining) if len(lines) > 1 else None
            if cut is not None:
                packed_text, cost, last_line = cut
                result["end_line"] = last_line
                truncated = True
        if cost > remaining:
            result["decision"] = NOT_PACKED_BUDGET
            continue
        remaining -= cost
        spans.setdefault(_where(item), []).append(
            (int(item["start_line"]), int(result["end_line"]), item.get("symbol") or "")
        )
        if packed_text is None:
            packed_text = f"{header}\n{text}"
        result.update(packed=True, tokens=cost, truncated=truncated, packed_text=packed_text)
        if decision is None:
            result["decision"] = KEPT
    return out
