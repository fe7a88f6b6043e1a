"""Fusion of the legs into one score per candidate.

* rrf: Reciprocal Rank Fusion, weight / (k + rank) summed over the legs, k = 60 (the
  default, and the baseline's);
* rrf_k: the same with a small k (SMALL_K), so a leg's top ranks count far more than its tail;
* guard: RRF k = 60, but a leg's top GUARD_TOP count as if every leg had ranked them
  GUARD_SLACK places lower, so a clear hit of one leg that the other never saw is not buried
  under candidates that both legs rank moderately (nor lifted above what both rank first);
* convex: a weighted mean of each leg's scores normalised to [0, 1] within the leg and tier.

A third leg, `mention`, holds the files and the definitions a long question names
(pipeline/question.py, pipeline/mentions.py). A fourth, `failing`, holds the file a
traceback failed in and the definition it failed in (mentions.failing_file,
failing_definition), at FAILING_WEIGHT of the mention leg's weight.

File consensus (`consensus`, after hydration gives every candidate its path): each leg's
ranking of files (a file's best rank in the leg, either tier) is fused by RRF too, and a
candidate's score gains CONSENSUS_WEIGHT times its file's: a file that both legs rank at the
top is not outranked by another file's symbol that both legs rank only moderately."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .request import Request

RRF_K = 60
SMALL_K = 10
GUARD_TOP = 3
GUARD_SLACK = 3
LEGS = ("lexical", "dense", "mention")  # each also ranks files for file_consensus
# the innermost frame is at times not where the fix goes (vendored code, a helper that only
# raised): a light weight, and no part in file consensus, settles close calls without
# crowding the failing file's neighbours into the pack
FAILING_WEIGHT = 0.25
FUSED_LEGS = (*LEGS, "failing")
NAMING_LEGS = ("mention", "failing")  # legs of what the question names, not of a search
CONSENSUS_WEIGHT = 1.0


def rrf(ranks: dict, weights: dict, k: int = RRF_K) -> float:
    """Reciprocal Rank Fusion of 1-based ranks per leg (a missing leg contributes nothing)."""
    return sum(weights[leg] / (k + rank) for leg, rank in ranks.items() if rank is not None)


def guarded(ranks: dict, weights: dict, k: int = RRF_K) -> float:
    """RRF, at least what a top-GUARD_TOP rank of one leg, GUARD_SLACK places lower, would
    earn from every weighted leg."""
    score = rrf(ranks, weights, k)
    total = sum(w for leg, w in weights.items() if leg not in NAMING_LEGS)
    for leg, rank in ranks.items():
        searched = leg not in NAMING_LEGS
        if searched and rank is not None and rank <= GUARD_TOP and weights.get(leg):
            score = max(score, total / (k + rank + GUARD_SLACK))
    return score


def _normalised(rows: list, field: str, lower_is_better: bool) -> list[float]:
    values = [float(r[field]) for r in rows]
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [1.0] * len(values)
    if lower_is_better:
        return [(hi - v) / (hi - lo) for v in values]
    return [(v - lo) / (hi - lo) for v in values]


def fuse(
    legs: dict, lexical_weight: float, dense_weight: float, method: str = "rrf", mention_weight=1.0
) -> dict:
    """Candidates keyed ('s', symbol_id) or ('f', repository_id, path) with ranks and the
    fused score (`rrf`, whatever the method: the name the rest of the pipeline reads)."""
    items: dict = {}

    def add(key, leg, rank, raw, norm):
        item = items.setdefault(
            key,
            {
                "key": key,
                "lexical_rank": None,
                "dense_rank": None,
                "mention_rank": None,
                "failing_rank": None,
                "lexical_score": None,
                "dense_distance": None,
                "norm": {},
            },
        )
        item[f"{leg}_rank"] = rank
        if leg == "lexical":
            item["lexical_score"] = raw
        elif leg == "dense":
            item["dense_distance"] = raw
        item["norm"][leg] = norm

    for name, leg, key_of, field, lower in (
        ("lex_sym", "lexical", lambda r: ("s", r["symbol_id"]), "score", False),
        ("dense_sym", "dense", lambda r: ("s", r["symbol_id"]), "distance", True),
        ("lex_file", "lexical", lambda r: ("f", r["repository_id"], r["path"]), "score", False),
        ("dense_file", "dense", lambda r: ("f", r["repository_id"], r["path"]), "distance", True),
    ):
        rows = legs.get(name) or []
        norms = _normalised(rows, field, lower) if method == "convex" else [0.0] * len(rows)
        for rank, (r, norm) in enumerate(zip(rows, norms, strict=True), 1):
            add(key_of(r), leg, rank, r[field], norm)
    for name, leg, key_of in (
        ("mention", "mention", lambda r: ("f", r["repository_id"], r["path"])),
        ("mention_sym", "mention", lambda r: ("s", r["symbol_id"])),
        ("failing", "failing", lambda r: ("f", r["repository_id"], r["path"])),
        ("failing_sym", "failing", lambda r: ("s", r["symbol_id"])),
    ):
        mentions = legs.get(name) or []
        for rank, r in enumerate(mentions, 1):
            add(key_of(r), leg, rank, None, 1 - 0.5 * rank / len(mentions))
    weights = {
        "lexical": lexical_weight,
        "dense": dense_weight,
        "mention": mention_weight,
        "failing": FAILING_WEIGHT * mention_weight,
    }
    for item in items.values():
        ranks = {leg: item[f"{leg}_rank"] for leg in FUSED_LEGS}
        if method == "convex":
            total = lexical_weight + dense_weight
            item["rrf"] = sum(weights[leg] * v for leg, v in item["norm"].items()) / total
        elif method == "guard":
            item["rrf"] = guarded(ranks, weights)
        elif method == "rrf_k":
            item["rrf"] = rrf(ranks, weights, SMALL_K)
        else:
            item["rrf"] = rrf(ranks, weights)
        del item["norm"]
    return items


def file_consensus(items: dict, lexical_weight: float, dense_weight: float, mention_weight=1.0):
    """Add CONSENSUS_WEIGHT x the RRF of each leg's file ranking to every candidate's `rrf`
    (kept apart in `file_rrf` for `why`)."""
    weights = {"lexical": lexical_weight, "dense": dense_weight, "mention": mention_weight}
    best: dict[tuple, dict[str, int]] = {}
    for item in items.values():
        ranks = best.setdefault((item["repository_id"], item["path"]), {})
        for leg in LEGS:
            rank = item.get(f"{leg}_rank")
            if rank is not None and rank < ranks.get(leg, rank + 1):
                ranks[leg] = rank
    for leg in LEGS:  # a leg's file ranking: files in order of their best rank in it
        ordered = sorted((r[leg], f) for f, r in best.items() if leg in r)
        for place, (_, f) in enumerate(ordered, 1):
            best[f][leg] = place
    for item in items.values():
        ranks = best[(item["repository_id"], item["path"])]
        item["file_rrf"] = rrf(ranks, weights)
        item["rrf"] += CONSENSUS_WEIGHT * item["file_rrf"]


def consensus(plpy, req: "Request", items: dict) -> None:
    """The stage: file_consensus with the call's leg weights (feature `consensus`)."""
    if req.on("consensus"):
        file_consensus(items, req.params.lexical_weight, req.fused_dense_weight)
