"""Diversity pruning: drop candidates that would only repeat what the pack already holds.

Server-free: the PL/Python shim of the retrieval pipeline (stage 3) imports this module.

    tokens(text) -> frozenset[str]        identifier/number tokens used for Jaccard
    jaccard(a, b) -> float                |a & b| / |a | b|
    prune(items, threshold=0.88, own_lines=True) -> items with a 'decision' (and 'pruned_by')

`items` are candidate dicts in descending score order with at least `id`, `path`,
`start_line`, `end_line` (1-based, inclusive), `text`, `kind` ('file' for a whole file) and
`score`. prune walks them greedily in the given order (it never re-sorts) and compares each
one only with the items already kept; the first applicable rule decides:

1. 'pruned:file_in_pack': the item is not a whole file (kind != 'file') and a whole-file item
   (kind == 'file') of the same path is already kept.
2. 'pruned:overlap': a kept item of the same path already holds at least half of the
   item's lines. Containment (a method inside a kept class, a duplicate range) is the 100 %
   case. A class or a whole file around an already-kept, more relevant method is kept when
   the method is less than half of it: it is mostly new text (the callers a fix needs are
   often beside the method that matched), and the method's lines are repeated.
3. 'pruned:jaccard': the token-Jaccard similarity with a kept item (any path) is >= threshold,
   e.g. copy-pasted boilerplate or the same function vendored twice.
4. otherwise 'kept'.

Every pruned item also gets `pruned_by`: the id of the earliest (highest-scored) kept item
that caused it. Items are returned as new dicts in input order; every key of the input is
kept untouched. Items without any token (empty or punctuation-only text) have no evidence of
duplication: the Jaccard rule never prunes them unless threshold is 0.

Tokens are the maximal runs of ASCII letters, digits and '_' in the lowercased text, so
identifiers and numbers both count ('searchBlobs' -> 'searchblobs', '0x1f' -> '0x1f'); other
characters only separate tokens. Sets, not multisets: the question is "is this the same code",
not "is it as long".

Speed: tokenising is one bytes.translate + split per item (C speed). Kept token sets are held
sorted by size, and since J(A, B) <= min(|A|, |B|) / max(|A|, |B|), a bisect picks the only
kept sets that can reach the threshold (sizes within [t |A|, |A| / t]); a small sample of the
candidate's tokens then rules out most of those before a full set intersection. No Python
loop runs over all pairs of candidates.
"""

from __future__ import annotations

import bisect
import math
import string
from collections.abc import Hashable, Iterable
from itertools import islice
from operator import itemgetter

DEFAULT_THRESHOLD = 0.88

KEPT = "kept"
PRUNED_JACCARD = "pruned:jaccard"
PRUNED_FILE_IN_PACK = "pruned:file_in_pack"
PRUNED_OVERLAP = "pruned:overlap"


def _token_table() -> bytes:
    table = bytearray(b" " * 256)
    for ch in string.ascii_lowercase + string.digits + "_":
        table[ord(ch)] = ord(ch)
    for ch in string.ascii_uppercase:
        table[ord(ch)] = ord(ch.lower())
    return bytes(table)


# Maps identifier bytes to themselves (upper case folded to lower), every other byte,
# including each byte of a non-ASCII character, to a space.
_TOKEN_TABLE = _token_table()


def tokens(text: str) -> frozenset[str]:
    """The set of lowercased identifier/number tokens of `text` (runs of [A-Za-z0-9_])."""
    if not text:
        return frozenset()
    raw = text.encode("utf-8", "surrogatepass").translate(_TOKEN_TABLE)
    return frozenset(raw.decode("ascii").split())


_EMPTY: frozenset[str] = frozenset()
_kept_order = itemgetter(0)


def jaccard(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """|a & b| / |a | b| of two token sets; 0.0 when both are empty (nothing shared)."""
    if not isinstance(a, (set, frozenset)):
        a = frozenset(a)
    if not isinstance(b, (set, frozenset)):
        b = frozenset(b)
    if not a and not b:
        return 0.0
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ValueError(
            f"threshold must be a number between 0 and 1 (e.g. {DEFAULT_THRESHOLD}), "
            f"got {threshold!r}"
        )
    if not 0.0 <= threshold <= 1.0:  # also rejects NaN
        raise ValueError(
            f"threshold must be between 0 and 1 (e.g. {DEFAULT_THRESHOLD}); got {threshold!r}: "
            "1 prunes only identical token sets, lower values prune more"
        )
    return float(threshold)


def _line_range(item: dict) -> tuple[int, int]:
    start = int(item["start_line"])
    end = int(item["end_line"])
    return start, max(start, end)


def _similar_kept(
    toks: frozenset[str],
    t: float,
    kept_sizes: list[int],
    kept_sets: list[tuple[int, frozenset[str], Hashable]],
) -> tuple[Hashable] | None:
    """(id,) of the earliest kept item whose token set has Jaccard >= t with `toks`, or None.

    J(A, B) <= min(|A|, |B|) / max(|A|, |B|), so only kept sets whose size lies within
    [t * |A|, |A| / t] can qualify: a bisect finds that window (widened a hair against float
    rounding; the exact test below decides) and only those pairs are compared.
    """
    size = len(toks)
    lo = bisect.bisect_left(kept_sizes, t * size * (1.0 - 1e-9))
    hi = bisect.bisect_right(kept_sizes, size / t * (1.0 + 1e-9)) if t > 0 else len(kept_sizes)
    if lo >= hi:
        return None
    # J >= t needs |A & B| >= t (|A| + |B|) / (1 + t): at most `slack` tokens of A may be
    # missing from B. So may at most `slack` tokens of any sample of A: a small sample (set
    # order is hash order, so an arbitrary one) rules most dissimilar pairs out at a fraction
    # of the cost of a full intersection. The filter is exact; it only saves work.
    sample = frozenset(islice(toks, 2 * math.ceil(size * (1.0 - t) / (1.0 + t)) + 6))
    sampled = len(sample) < size
    for _, k_toks, k_id in sorted(kept_sets[lo:hi], key=_kept_order):
        k_size = len(k_toks)
        slack = size - t * (size + k_size) / (1.0 + t)
        if sampled and len(sample & k_toks) < len(sample) - slack - 1e-9:
            continue
        inter = len(toks & k_toks) if size <= k_size else len(k_toks & toks)
        union = size + k_size - inter
        if (inter / union if union else 0.0) >= t:
            return (k_id,)
    return None


def _tokens_of(item: dict, token_sets: dict | None) -> frozenset[str]:
    """The item's token set, from token_sets (by id) when it holds it, kept there if given."""
    if token_sets is None:
        return tokens(item.get("text") or "")
    if item["id"] not in token_sets:
        token_sets[item["id"]] = tokens(item.get("text") or "")
    return token_sets[item["id"]]


def prune(
    items: list[dict],
    threshold: float = DEFAULT_THRESHOLD,
    own_lines: bool = True,
    token_sets: dict | None = None,
) -> list[dict]:
    """Greedy diversity filter; see the module docstring for the rules.

    Returns every item, in input order, as a new dict with `decision` added (and `pruned_by`
    for pruned items). Raises ValueError for a threshold outside [0, 1]. With own_lines
    False, rule 2 weighs the shared lines against the smaller of the two ranges, as the
    engine before issue 16 did (a class around a kept method is pruned). `token_sets`, when
    given, keeps each item's token set by its id for the next call over the same items.
    """
    t = _check_threshold(threshold)
    out: list[dict] = []
    kept_files: dict[object, Hashable] = {}  # path -> id of the kept whole-file item
    kept_ranges: dict[object, list[tuple[int, int, Hashable]]] = {}  # path -> kept ranges
    # Kept token sets sorted by size (kept_sizes is the sort key): (kept order, set, id).
    kept_sizes: list[int] = []
    kept_sets: list[tuple[int, frozenset[str], Hashable]] = []

    for item in items:
        result = dict(item)
        out.append(result)
        path = item["path"]
        start, end = _line_range(item)
        is_file = item.get("kind") == "file"

        by = None
        decision = KEPT
        if not is_file and path in kept_files:
            decision, by = PRUNED_FILE_IN_PACK, kept_files[path]
        else:
            for k_start, k_end, k_id in kept_ranges.get(path, ()):
                shared = min(end, k_end) - max(start, k_start) + 1
                judged = end - start if own_lines else min(end - start, k_end - k_start)
                if shared > 0 and 2 * shared >= judged + 1:
                    decision, by = PRUNED_OVERLAP, k_id
                    break

        toks = _EMPTY
        if decision == KEPT:
            toks = _tokens_of(item, token_sets)
            similar = _similar_kept(toks, t, kept_sizes, kept_sets)
            if similar is not None:
                decision, by = PRUNED_JACCARD, similar[0]

        result["decision"] = decision
        if decision != KEPT:
            result["pruned_by"] = by
            continue
        if is_file:
            kept_files.setdefault(path, item["id"])
        kept_ranges.setdefault(path, []).append((start, end, item["id"]))
        at = bisect.bisect_right(kept_sizes, len(toks))
        kept_sizes.insert(at, len(toks))
        kept_sets.insert(at, (len(kept_sizes), toks, item["id"]))
    return out
