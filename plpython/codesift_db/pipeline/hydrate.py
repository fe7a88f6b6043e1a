"""Hydration: the fused candidates get their path, lines, text and last change, read by
sql/hydrate_symbols.sql and sql/hydrate_files.sql; candidates no longer live drop out."""

from typing import TYPE_CHECKING

from .. import plans

if TYPE_CHECKING:
    from .request import Request

SYMBOL_TYPES = ["bigint[]", "bigint[]", "int", "bigint"]
FILE_TYPES = ["bigint[]", "text[]", "int", "bigint"]


def symbol_item(row: dict) -> dict:
    """A candidate from a symbol row (hydrate_symbols.sql, stand_in_symbols.sql)."""
    return {
        "key": ("s", row["id"]),
        "repository_id": row["repository_id"],
        "path": row["path"],
        "start_line": row["start_line"],
        "end_line": row["end_line"],
        "symbol": row["qualified_name"],
        "kind": row["kind"],
        "blob_sha": row["blob_sha"],
        "text": row["body"],
        "last_changed": row.get("last_changed"),
        "stand_in": row.get("stand_in", False),
    }


def unranked(key: tuple, score: float, **fields) -> dict:
    """A candidate no search leg ranked (one the graph walk or a call reached)."""
    return {
        "key": key,
        "lexical_rank": None,
        "dense_rank": None,
        "rrf": 0.0,
        "lexical_score": None,
        "dense_distance": None,
        "recency": 1.0,
        "score": score,
        **fields,
    }


def file_item(row: dict) -> dict:
    """The fields of a candidate from a file row (hydrate_files.sql): text None when the
    file is too big to pack whole."""
    text = row["content"].rstrip("\n") if row["content"] is not None else None
    return {
        "repository_id": row["repository_id"],
        "path": row["path"],
        "start_line": 1,
        "end_line": row["lines"],
        "symbol": None,
        "kind": "file",
        "blob_sha": row["blob_sha"],
        "text": text,
        "last_changed": row["last_changed"],
    }


def hydrate(plpy, req: "Request", items: dict) -> None:
    """Fill path, lines, text and last_changed; drop candidates that are no longer live.
    Files over req.max_file_tokens get text None: they are too big to pack whole."""
    tenant, repo_ids, max_file_tokens = req.tenant, req.repo_ids, req.max_file_tokens
    symbol_ids = [k[1] for k in items if k[0] == "s"]
    found: set[tuple] = set()
    if symbol_ids:
        rows = plans.run(
            plpy,
            plans.load("hydrate_symbols"),
            SYMBOL_TYPES,
            [symbol_ids, repo_ids, max_file_tokens, tenant],
        )
        for row in rows:
            items[("s", row["id"])].update(symbol_item(row))
            found.add(("s", row["id"]))
    files = [k for k in items if k[0] == "f"]
    if files:
        rows = plans.run(
            plpy,
            plans.load("hydrate_files"),
            FILE_TYPES,
            [[k[1] for k in files], [k[2] for k in files], max_file_tokens, tenant],
        )
        for row in rows:
            key = ("f", row["repository_id"], row["path"])
            items[key].update(file_item(row))
            found.add(key)
    for key in [k for k in items if k not in found]:
        del items[key]
