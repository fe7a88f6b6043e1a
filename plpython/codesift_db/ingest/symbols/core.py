"""What every extractor shares: the file as rows with cumulative sizes (_Source), the
capped list of symbols of one file (_Out), and _emit, which appends a symbol whole or, over
MAX_SYMBOL_LINES or MAX_SYMBOL_CHARS, as parts that tile its range (_split_rows)."""

from __future__ import annotations

from itertools import accumulate
from operator import sub

from ... import budget

MAX_SYMBOL_LINES = 120
MAX_SYMBOL_CHARS = 6000
MAX_SIGNATURE_CHARS = 300


class _Out:
    """The symbols of one file, capped: the first `cap` are kept, the rest counted."""

    def __init__(self, limits: budget.Budget):
        self.limits = limits
        self.reset()

    def reset(self, what: str = "symbols", cap: int = budget.MAX_SYMBOLS) -> None:
        self.items: list[dict] = []
        self.what, self.cap = what, cap
        self.chars = 0  # characters of the kept bodies
        self.full = False
        self.by_text = False  # full because of MAX_SYMBOL_TEXT_CHARS
        self.more = 0  # symbols (or parts) not kept because full
        self.exact = True  # False when counting `more` stopped early (budget.COUNT_SHARE)

    def add(self, symbol: dict) -> None:
        self.items.append(symbol)
        self.chars += len(symbol["body"])
        if len(self.items) >= self.cap:
            self.full = True
        elif self.chars >= budget.MAX_SYMBOL_TEXT_CHARS:
            self.full = self.by_text = True

    def counting_stops(self) -> bool:
        """Whether to stop walking the file just to count what is over the cap."""
        if self.full and self.limits.used(budget.COUNT_SHARE):
            self.exact = False
        return not self.exact

    def note(self) -> None:
        if self.by_text:  # 'symbol text cap 16777216 (12 more symbols)': the cap in chars
            unit = f"more {self.what}"
            cap = budget.MAX_SYMBOL_TEXT_CHARS
            self.limits.over("symbol text", cap, self.more, unit, self.exact)
        else:
            self.limits.over(self.what, self.cap, self.more, exact=self.exact)


class _Source:
    """The file as lines plus cumulative character counts, for cheap range sizes. The
    per-line tables are built by C-level map/accumulate (a file may have a million lines)."""

    def __init__(self, path: str, text: str, lines: list[str]):
        self.path = path
        self.text = text
        self.lines = lines
        # characters before each row, newlines excluded: chars() adds one per row
        self._before = list(accumulate(map(len, lines), initial=0))
        self._filled: list[int] | None = None  # non-blank rows before each row
        self._indent: list[int] | None = None

    def chars(self, start: int, end: int) -> int:
        """Characters of 0-based rows start..end inclusive (newlines counted)."""
        return self._before[end + 1] - self._before[start] + end + 1 - start

    def body(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start : end + 1])

    def _filled_rows(self) -> list[int]:
        if self._filled is None:
            self._filled = list(accumulate(map(bool, map(str.strip, self.lines)), initial=0))
        return self._filled

    def blank(self, row: int) -> bool:
        filled = self._filled_rows()
        return filled[row + 1] == filled[row]

    def has_text(self, start: int, end: int) -> bool:
        """Whether rows start..end hold anything but whitespace (body(start, end).strip())."""
        filled = self._filled_rows()
        return filled[end + 1] > filled[start]

    def indent(self, row: int) -> int:
        """Leading whitespace characters of a row (0 past the last row)."""
        if self._indent is None:
            lengths = map(len, self.lines)
            self._indent = list(map(sub, lengths, map(len, map(str.lstrip, self.lines))))
        return self._indent[row] if row < len(self._indent) else 0


def _emit(out: _Out, src: _Source, sym: dict, start: int, end: int, cuts) -> None:
    """Append `sym` (rows start..end, 0-based) whole, or as parts when it is over the limits.

    `cuts` maps a row to a preference score for starting a new part there (lower is better),
    or is a callable producing that map lazily. Once `out` is full a symbol is only counted.
    """
    end = min(end, len(src.lines) - 1)
    if start > end:
        return
    if out.full:
        out.more += 1
        return
    if out.limits.expired():
        return
    if _within_limits(src, start, end):
        parts = [(start, end)]
    else:
        parts = _split_rows(src, start, end, cuts() if callable(cuts) else cuts, out.limits)
    merged: list[tuple[int, int]] = []
    for s, e in parts:  # a blank-only part joins its neighbour: no empty bodies, no gaps
        if merged and (not src.has_text(s, e) or not src.has_text(*merged[-1])):
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    numbered = len(merged) > 1
    for i, (s, e) in enumerate(merged, 1):
        if not src.has_text(s, e):
            continue
        if out.full:
            out.more += sum(1 for s2, e2 in merged[i - 1 :] if src.has_text(s2, e2))
            return
        if numbered and out.limits.expired():
            return
        body = src.body(s, e)
        out.add(dict(sym, start_line=s + 1, end_line=e + 1, body=body, part=i if numbered else 0))


def _within_limits(src: _Source, start: int, end: int) -> bool:
    return end - start + 1 <= MAX_SYMBOL_LINES and src.chars(start, end) - 1 <= MAX_SYMBOL_CHARS


def _split_rows(
    src: _Source, start: int, end: int, cuts: dict, limits: budget.Budget
) -> list[tuple[int, int]]:
    """Greedy tiling of rows start..end into parts within the limits.

    From each part start, find the furthest row the limits allow, then cut at the best-scored
    candidate row in reach (ties: the furthest), ignoring candidates that would leave the part
    under a quarter full. Blank-line boundaries are weak candidates; any row is the last resort.
    """
    parts = []
    p = start
    while p <= end:
        if limits.expired():  # give up: the rest as one (unused) part
            parts.append((p, end))
            break
        reach = p
        while (
            reach < end
            and reach + 1 - p + 1 <= MAX_SYMBOL_LINES
            and src.chars(p, reach + 1) - 1 <= MAX_SYMBOL_CHARS
        ):
            reach += 1
        if reach >= end:
            parts.append((p, end))
            break
        best = None
        best_score = None
        floor = p + 1 + (reach - p) // 4
        for c in range(p + 1, reach + 2):
            score = cuts.get(c)
            if score is None and src.blank(c - 1) and not src.blank(c):
                score = 1000
            if score is None or c < floor:
                continue
            if best_score is None or score <= best_score:
                best, best_score = c, score
        nxt = best if best is not None else reach + 1
        parts.append((p, nxt - 1))
        p = nxt
    return parts


def _collapse(text: str, limit: int = MAX_SIGNATURE_CHARS) -> str:
    text = " ".join(text[: limit * 8].split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
