"""Retrieval metrics for bench/eval.py: pure functions, no database.

Definitions (issue 5):

* File-level: an arm returns a ranked list of paths (duplicates removed, first occurrence
  kept). The first gold hit's 1-based rank decides R@k (a hit at rank <= k) and the
  reciprocal rank (1 / rank, 0 without a hit). Strict matching compares exact paths;
  lenient matching compares base names (``lib/utils.js`` matches ``utils.js`` anywhere),
  as the peer scored its benchmark.
* Symbol-level R@5 (queries with gold symbols only): among the arm's first five symbol
  rows (rows whose kind is not ``file`` or ``outline``), one lies on a gold symbol's path
  and its line range overlaps the gold symbol's range.
* Context recall (the ``pack`` arm; strict): the fraction of gold items (gold files, and
  gold symbols when the query has them) whose code appears in the packed rows: a gold file
  counts when any packed row of code (not an outline) is on that path, a gold symbol when
  such a row on its path overlaps its line range.
* Pack reach (the ``pack`` arm): the same fraction, counting also what the pack's outline
  items (kind ``outline``: the signatures of a file's definitions the pack left out) name:
  a gold file counts when any packed row, an outline included, is on that path; a gold
  symbol when its code is packed or an outline on its path lists its name (or, for the
  lines before a file's first definition, its imports, lists that header's line range).

Every aggregate is a fraction in 0..1 (or None when no query defines it).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

METRIC_KEYS = (
    "r1",
    "r5",
    "r10",
    "mrr",
    "r1_lenient",
    "r5_lenient",
    "mrr_lenient",
    "symbol_r5",
    "context_recall",
    "pack_reach",
    "tokens",
)
OUTLINE = "outline"  # the kind of a packed outline item (it holds names, not code)
HEADER = "header"  # an outline's entry for the lines before the file's first definition


@dataclass(frozen=True)
class Listed:
    """One entry of an outline item: a definition (its qualified name) or the file's header."""

    name: str | None
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Row:
    """One returned row: a file (kind 'file') or a symbol/chunk with its line range."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    kind: str | None = None
    symbol: str | None = None
    tokens: int | None = None
    outlined: tuple[Listed, ...] = ()  # an outline row: what it lists


@dataclass(frozen=True)
class GoldSymbol:
    path: str
    name: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def resolved(self) -> bool:
        return self.start_line is not None and self.end_line is not None


@dataclass
class QueryResult:
    """What one arm returned for one query, scored against that query's gold."""

    files: list[str]
    rank: int | None
    rank_lenient: int | None
    symbol_hit: bool | None = None
    context_recall: float | None = None
    pack_reach: float | None = None
    context_hit: bool | None = None
    tokens: int | None = None
    extra: dict = field(default_factory=dict)


def dedupe(paths: Iterable[str]) -> list[str]:
    """Paths in first-appearance order, each once."""
    seen: set[str] = set()
    out = []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))


def first_hit_rank(ranked: Sequence[str], gold: Iterable[str], lenient: bool = False) -> int | None:
    """1-based rank of the first path in `ranked` that is a gold file, or None."""
    gold = set(gold)
    if lenient:
        gold = {basename(g) for g in gold}
    for i, path in enumerate(ranked, 1):
        if (basename(path) if lenient else path) in gold:
            return i
    return None


def hit_at(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def reciprocal_rank(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def overlaps(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Whether two inclusive line ranges share at least one line."""
    return a_start <= b_end and b_start <= a_end


def _row_covers(row: Row, gold: GoldSymbol) -> bool:
    if row.path != gold.path:
        return False
    if gold.resolved and row.start_line is not None and row.end_line is not None:
        return overlaps(row.start_line, row.end_line, gold.start_line, gold.end_line)
    # a gold symbol known only by name: the same symbol, or the whole file
    return row.kind == "file" or (row.symbol is not None and names_match(row.symbol, gold.name))


def names_match(returned: str, gold: str) -> bool:
    """`Class.method` matches `Class.method` and `method`; `method` matches `Class.method`."""
    return returned == gold or returned.endswith("." + gold) or gold.endswith("." + returned)


def symbol_hit(rows: Sequence[Row], gold: Sequence[GoldSymbol], k: int = 5) -> bool | None:
    """Whether one of the first k symbol rows overlaps a gold symbol; None without gold."""
    if not gold:
        return None
    symbols = [r for r in rows if r.kind not in ("file", OUTLINE)][:k]
    return any(_row_covers(r, g) for r in symbols for g in gold)


def context_recall(
    packed: Sequence[Row], gold_files: Sequence[str], gold_symbols: Sequence[GoldSymbol] = ()
) -> float | None:
    """Fraction of gold files and gold symbols whose code the packed rows contain (strict:
    outline rows hold no code)."""
    items = len(set(gold_files)) + len(gold_symbols)
    if items == 0:
        return None
    code = [r for r in packed if r.kind != OUTLINE]
    paths = {r.path for r in code}
    covered = sum(1 for f in set(gold_files) if f in paths)
    covered += sum(1 for g in gold_symbols if any(_row_covers(r, g) for r in code))
    return covered / items


def _lists(entry: Listed, gold: GoldSymbol) -> bool:
    if entry.kind == HEADER:  # the header's lines hold the gold's (its imports)
        start, end = gold.start_line, gold.end_line
        return (
            start is not None
            and end is not None
            and entry.start_line <= start <= end <= entry.end_line
        )
    return entry.name is not None and names_match(entry.name, gold.name)


def _outline_lists(row: Row, gold: GoldSymbol) -> bool:
    return (
        row.kind == OUTLINE and row.path == gold.path and any(_lists(e, gold) for e in row.outlined)
    )


def pack_reach(
    packed: Sequence[Row], gold_files: Sequence[str], gold_symbols: Sequence[GoldSymbol] = ()
) -> float | None:
    """Fraction of gold files and gold symbols the pack reaches: a file when any packed row
    (an outline too) is on it, a symbol when its code is packed or an outline lists it."""
    items = len(set(gold_files)) + len(gold_symbols)
    if items == 0:
        return None
    paths = {r.path for r in packed}
    code = [r for r in packed if r.kind != OUTLINE]
    covered = sum(1 for f in set(gold_files) if f in paths)
    covered += sum(
        1
        for g in gold_symbols
        if any(_row_covers(r, g) for r in code) or any(_outline_lists(r, g) for r in packed)
    )
    return covered / items


def score_query(
    rows: Sequence[Row],
    gold_files: Sequence[str],
    gold_symbols: Sequence[GoldSymbol] = (),
    k: int | None = None,
    packed: bool = False,
    symbol_level: bool = True,
) -> QueryResult:
    """Score one arm's rows for one query (files are ranked by first appearance)."""
    files = dedupe(r.path for r in rows)
    if k is not None:
        files = files[:k]
    result = QueryResult(
        files=files,
        rank=first_hit_rank(files, gold_files),
        rank_lenient=first_hit_rank(files, gold_files, lenient=True),
        symbol_hit=symbol_hit(rows, gold_symbols) if symbol_level else None,
    )
    if packed:
        result.context_recall = context_recall(rows, gold_files, gold_symbols)
        result.pack_reach = pack_reach(rows, gold_files, gold_symbols)
        result.context_hit = any(r.path in set(gold_files) for r in rows if r.kind != OUTLINE)
        result.tokens = sum(r.tokens or 0 for r in rows)
    return result


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(results: Sequence[QueryResult]) -> dict:
    """The issue's metric dict over a list of per-query results of one arm."""
    n = len(results)
    if n == 0:
        return dict.fromkeys(METRIC_KEYS)

    def frac(pred) -> float:
        return sum(1 for r in results if pred(r)) / n

    symbol = [1.0 if r.symbol_hit else 0.0 for r in results if r.symbol_hit is not None]
    recall = [r.context_recall for r in results if r.context_recall is not None]
    reach = [r.pack_reach for r in results if r.pack_reach is not None]
    tokens = [float(r.tokens) for r in results if r.tokens is not None]
    return {
        "r1": frac(lambda r: hit_at(r.rank, 1)),
        "r5": frac(lambda r: hit_at(r.rank, 5)),
        "r10": frac(lambda r: hit_at(r.rank, 10)),
        "mrr": sum(reciprocal_rank(r.rank) for r in results) / n,
        "r1_lenient": frac(lambda r: hit_at(r.rank_lenient, 1)),
        "r5_lenient": frac(lambda r: hit_at(r.rank_lenient, 5)),
        "mrr_lenient": sum(reciprocal_rank(r.rank_lenient) for r in results) / n,
        "symbol_r5": _mean(symbol),
        "context_recall": _mean(recall),
        "pack_reach": _mean(reach),
        "tokens": _mean(tokens),
    }


def context_hit_rate(results: Sequence[QueryResult]) -> float | None:
    """Fraction of queries whose pack holds at least one gold file (a looser recall)."""
    hits = [r.context_hit for r in results if r.context_hit is not None]
    return sum(hits) / len(hits) if hits else None


def report(
    per_query: dict[str, dict[str, QueryResult]], kinds: dict[str, str], arms: Sequence[str]
) -> dict:
    """The JSON document: {"arms", "by_kind", "queries"} (issue 5's shape).

    per_query maps query id -> arm -> QueryResult; kinds maps query id -> kind.
    """
    ids = list(per_query)
    out: dict = {
        "arms": {arm: aggregate([per_query[q][arm] for q in ids]) for arm in arms},
        "by_kind": {},
        "queries": [
            {"id": q, "first_hit_rank": {arm: per_query[q][arm].rank for arm in arms}} for q in ids
        ],
    }
    for kind in dict.fromkeys(kinds[q] for q in ids):
        members = [q for q in ids if kinds[q] == kind]
        out["by_kind"][kind] = {
            arm: aggregate([per_query[q][arm] for q in members]) for arm in arms
        }
    return out
