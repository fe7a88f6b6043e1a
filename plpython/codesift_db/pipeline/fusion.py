"""Reciprocal Rank Fusion of the legs: a candidate's score is the sum over the legs that
found it of weight / (k + rank), k = 60."""

RRF_K = 60


def rrf(ranks: dict, weights: dict, k: int = RRF_K) -> float:
    """Reciprocal Rank Fusion of 1-based ranks per leg (a missing leg contributes nothing)."""
    return sum(weights[leg] / (k + rank) for leg, rank in ranks.items() if rank is not None)


def fuse(legs: dict, lexical_weight: float, dense_weight: float) -> dict:
    """Candidates keyed ('s', symbol_id) or ('f', repository_id, path) with ranks and RRF."""
    items: dict = {}

    def add(key, leg, rank, raw):
        item = items.setdefault(
            key,
            {
                "key": key,
                "lexical_rank": None,
                "dense_rank": None,
                "lexical_score": None,
                "dense_distance": None,
            },
        )
        item[f"{leg}_rank"] = rank
        item["lexical_score" if leg == "lexical" else "dense_distance"] = raw

    for rank, r in enumerate(legs["lex_sym"], 1):
        add(("s", r["symbol_id"]), "lexical", rank, r["score"])
    for rank, r in enumerate(legs["dense_sym"], 1):
        add(("s", r["symbol_id"]), "dense", rank, r["distance"])
    for rank, r in enumerate(legs["lex_file"], 1):
        add(("f", r["repository_id"], r["path"]), "lexical", rank, r["score"])
    for rank, r in enumerate(legs["dense_file"], 1):
        add(("f", r["repository_id"], r["path"]), "dense", rank, r["distance"])
    weights = {"lexical": lexical_weight, "dense": dense_weight}
    for item in items.values():
        item["rrf"] = rrf({"lexical": item["lexical_rank"], "dense": item["dense_rank"]}, weights)
    return items
