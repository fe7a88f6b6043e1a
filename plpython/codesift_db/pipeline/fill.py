"""Pruning and packing, with containers that did not fit giving their place back.

Overlap pruning runs before packing: a class chunk kept for its score prunes the methods
inside it. When the budget then cannot hold that class, its methods were lost for nothing:
such a container is left out and pruning and packing run again, so the methods compete for
the budget on their own (at most REFILLS times; each round only removes containers)."""

from .. import diversity, packing
from . import coverage

REFILLS = 3
SHADOWING = (diversity.PRUNED_OVERLAP, diversity.PRUNED_FILE_IN_PACK)


def _prune_and_pack(items: list[dict], budget: int, threshold: float, cover: bool):
    pruned = diversity.prune(items, threshold, own_lines=cover)
    if cover:
        pruned = coverage.front(pruned, budget)
    return packing.pack(pruned, budget)


def fill(items: list[dict], budget: int, threshold: float, refill: bool) -> list[dict]:
    """items (best first) pruned and packed; with refill, unpacked containers let the items
    they pruned compete again. Every item comes back once, with its decision."""
    left_out: list[dict] = []
    packed = _prune_and_pack(items, budget, threshold, refill)
    for _ in range(REFILLS if refill else 0):
        unpacked = {i["id"] for i in packed if i["decision"] == packing.NOT_PACKED_BUDGET}
        shadows = {i["pruned_by"] for i in packed if i["decision"] in SHADOWING} & unpacked
        if not shadows:
            break
        left_out += [
            {**i, "decision": packing.NOT_PACKED_BUDGET} for i in packed if i["id"] in shadows
        ]
        items = [i for i in items if i["id"] not in shadows]
        packed = _prune_and_pack(items, budget, threshold, refill)
    return packed + left_out
