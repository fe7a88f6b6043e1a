"""The pack follows the ranking: before the greedy fill, each of the COVER_FILES best files
gets its best candidate that fits in an even share of the budget, so a large, well-ranked
file is carried by its most relevant symbol that fits rather than dropped for the budget
the files above it used. The best candidate overall still goes first (and may still be
truncated, packing.py's rule for an oversized first item)."""

from .. import packing, tokens

COVER_FILES = 5


def cost(item: dict) -> int:
    """Tokens the item would take packed whole, header included (tokens.py's estimate)."""
    return tokens.estimate_tokens(f"{packing.format_header(item)}\n{item.get('text') or ''}")


def _cost(item: dict, costs: dict | None) -> int:
    if costs is None:
        return cost(item)
    if item["id"] not in costs:
        costs[item["id"]] = cost(item)
    return costs[item["id"]]


def front(items: list[dict], budget: int, costs: dict | None = None) -> list[dict]:
    """items (best first) reordered: the best one, then one fitting candidate for each of the
    next best files, then the rest in their order. `costs`, when given, keeps each item's
    cost by its id for the next call over the same items."""
    kept = [i for i in items if i.get("decision") in (None, packing.KEPT)]
    if len(kept) < 2:
        return items
    share = budget // COVER_FILES
    chosen = [kept[0]]
    covered = {kept[0]["path"]}
    by_path: dict[str, list[dict]] = {}
    for item in kept[1:]:
        by_path.setdefault(item["path"], []).append(item)
    for path, found in by_path.items():  # dicts keep insertion order: best file first
        if len(covered) >= COVER_FILES:
            break
        if path in covered:
            continue
        covered.add(path)
        fit = next((i for i in found if _cost(i, costs) <= share), None)
        if fit is not None:
            chosen.append(fit)
    ids = {id(i) for i in chosen}
    return chosen + [i for i in items if id(i) not in ids]
