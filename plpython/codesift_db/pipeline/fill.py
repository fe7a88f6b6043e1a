"""The pack's fill: diversity pruning, the coverage order, then packing (diversity.py,
coverage.py, packing.py). An item the budget left out prunes nothing: while one that did
not fit had pruned another (a method inside a class too big for what was left), the pass is
redone without the items that did not fit, so the method is packed in the class's place."""

from .. import diversity, packing
from . import coverage


def fill(
    candidates: list[dict],
    budget: int,
    threshold: float,
    pack_feature: bool,
    token_sets: dict | None = None,
    costs: dict | None = None,
) -> list[dict]:
    """Every candidate once, with its decision and what was packed of it (candidates come
    best first, each with a unique `id`). `token_sets` and `costs`, when given, keep each
    candidate's token set and cost by id for the next fill of the same candidates (the
    outlines' second fill)."""
    left_out: set = set()
    # each candidate's token set and cost, computed once for every round
    token_sets = {} if token_sets is None else token_sets
    costs = {} if costs is None else costs
    while True:
        tried = [i for i in candidates if i["id"] not in left_out]
        pruned = diversity.prune(tried, threshold, own_lines=pack_feature, token_sets=token_sets)
        if pack_feature:
            pruned = coverage.front(pruned, budget, costs)
        packed = packing.pack(pruned, budget, costs)
        unfit = {i["id"] for i in packed if i["decision"] == packing.NOT_PACKED_BUDGET}
        # each round leaves out at least one more candidate: at most len(candidates) rounds
        if not any(i.get("pruned_by") in unfit for i in packed):
            break
        left_out |= unfit
    dropped = [
        {**i, **packing.NOT_PACKED, "decision": packing.NOT_PACKED_BUDGET}
        for i in candidates
        if i["id"] in left_out
    ]
    return packed + dropped
