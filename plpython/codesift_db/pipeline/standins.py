"""Stand-ins: a whole file too big for FILE_SHARE of the budget is not packed whole; the
best-scored SPLIT_FILES of them are replaced by their best symbols (already candidates
first, functions and methods before class chunks, then others by query-term overlap,
sql/stand_in_symbols.sql), the rest are 'not_packed:too_big'. For a bug report the best
few also bring their header (the lines before the first definition: imports, constants),
which a fix so often has to touch."""

from .. import packing, plans, tokens
from .hydrate import symbol_item
from .query import two_terms_query
from .request import Request, file_tokens

SYMBOLS_PER_FILE = 2  # symbols that stand in for an oversized file
# oversized files split into stand-ins, best first: a 4,000-token pack holds a dozen or two
# items, and each split reads every symbol of the file
SPLIT_FILES = 12
EXPANDED = "expanded:symbols"  # an oversized file replaced by its best symbols
TOO_BIG = "not_packed:too_big"  # an oversized file ranked below the SPLIT_FILES split ones
# kinds that hold other symbols (hydrate_symbols.sql's stand-in rule names the same two)
CONTAINER_KINDS = ("class", "section")
HEADER = "header"  # the kind of a large file's lines before its first definition
HEADER_FILES = 3  # expanded files, best first, whose header stands in too
HEADER_TYPES = ["bigint[]", "text[]", "bigint"]
STAND_IN_TYPES = ["bigint[]", "text[]", "text[]", "int", "bigint[]", "tsquery", "int", "bigint"]


def split_big_files(plpy, req: Request, items: dict) -> None:
    """Whole files over FILE_SHARE of the budget are not packed whole: the best-scored
    SPLIT_FILES of them are 'expanded', their best symbols (already candidates first, by
    score, then other symbols by query-term overlap) taking the file's score, and, for a
    bug report (with the `pack` feature), the best HEADER_FILES their header too; the
    others are 'not_packed:too_big'."""
    tenant, terms = req.tenant, req.terms
    with_headers = req.long_question and req.on("pack")
    extra: list[dict] = []
    # hydrate left the text of files too big to pack whole out
    big = sorted(
        (item for item in items.values() if item["kind"] == "file" and item["text"] is None),
        key=lambda i: -i["score"],
    )
    for item in big[SPLIT_FILES:]:
        item["decision"] = TOO_BIG
    big = big[:SPLIT_FILES]
    if not big:
        return
    limit = file_tokens(req.budget)  # a stand-in must not eat the budget the file could not
    # candidates that may stand in for a file (hydrate judged them): its symbols, same blob
    candidates: dict = {}
    for item in items.values():
        if item.get("stand_in"):
            candidates.setdefault(item["blob_sha"], []).append(item)
    # a file's candidate functions and methods stand in before its candidate class chunks:
    # a chunk is many times their size and mostly repeats the methods that matched
    for found in candidates.values():
        found.sort(key=lambda i: (i["kind"] in CONTAINER_KINDS, -i["score"], i["start_line"]))
    short = [i for i in big if len(candidates.get(i["blob_sha"], ())) < SYMBOLS_PER_FILE]
    others: dict = {}
    if short:
        for row in plans.run(
            plpy,
            plans.load("stand_in_symbols"),
            STAND_IN_TYPES,
            [
                [i["repository_id"] for i in short],
                [i["path"] for i in short],
                terms,
                limit,
                [k[1] for k in items if k[0] == "s"],
                two_terms_query(terms),
                SYMBOLS_PER_FILE,
                tenant,
            ],
        ):
            others.setdefault((row["repository_id"], row["path"]), []).append(row)
    for item in big:
        item["decision"] = EXPANDED
        chosen = candidates.get(item["blob_sha"], [])[:SYMBOLS_PER_FILE]
        rows = others.get((item["repository_id"], item["path"]), [])
        for i, stand_in in enumerate(chosen + rows[: SYMBOLS_PER_FILE - len(chosen)]):
            score = item["score"] * (1 - 0.01 * (i + 1))
            if i < len(chosen):  # a candidate already: it only gains the file's score
                stand_in["score"] = max(stand_in["score"], score)
                stand_in["via_file"] = item["path"]
                continue
            new = symbol_item(
                {
                    **stand_in,
                    "repository_id": item["repository_id"],
                    "path": item["path"],
                    "last_changed": item.get("last_changed"),
                }
            )
            new.update(_standing_in(item, score))
            extra.append(new)
    if with_headers:
        extra += headers(plpy, big[:HEADER_FILES], tenant, limit)
    for new in extra:
        items.setdefault(new["key"], new)


def _fitting_lines(text: str, limit: int) -> list[str]:
    """The leading whole lines of text that fit in limit tokens, trailing blank ones left out."""
    lines = text.split("\n")
    fit = packing.longest_prefix(
        len(lines), lambda k: tokens.estimate_tokens("\n".join(lines[:k])) <= limit
    )
    lines = lines[:fit]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _standing_in(item: dict, score: float) -> dict:
    """What a stand-in takes from the file it stands in for: no leg ranks of its own."""
    return {
        "lexical_rank": None,
        "dense_rank": None,
        "rrf": 0.0,
        "recency": item.get("recency", 1.0),
        "score": score,
        "via_file": item["path"],
        "graph_hop": item.get("graph_hop"),
    }


def headers(plpy, big: list[dict], tenant: int, limit: int) -> list[dict]:
    """Each expanded file's header (its imports, what its stand-ins' names come from) as one
    more stand-in, cut to whole lines within limit tokens, ranked after the symbols."""
    rows = plans.run(
        plpy,
        plans.load("file_headers"),
        HEADER_TYPES,
        [[i["repository_id"] for i in big], [i["path"] for i in big], tenant],
    )
    by_file = {(r["repository_id"], r["path"]): r for r in rows}
    out = []
    for item in big:
        row = by_file.get((item["repository_id"], item["path"]))
        if row is None:
            continue
        lines = _fitting_lines(row["body"], limit)
        if not lines:
            continue
        out.append(
            {
                "key": ("h", item["repository_id"], item["path"]),
                "repository_id": item["repository_id"],
                "path": item["path"],
                "start_line": 1,
                "end_line": len(lines),
                "symbol": None,
                "kind": HEADER,
                "blob_sha": row["blob_sha"],
                "text": "\n".join(lines),
                "last_changed": item.get("last_changed"),
                "stand_in": False,
                **_standing_in(item, item["score"] * (1 - 0.01 * (SYMBOLS_PER_FILE + 1))),
            }
        )
    return out
