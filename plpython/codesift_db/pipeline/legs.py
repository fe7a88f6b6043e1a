"""The four legs, each over symbols and over files, every filter applied before its top k:
BM25 (codesift._bm25_*, sql/idempotent/003-lexical.sql) or ts_rank_cd (codesift._tsrank_*,
the same file) over the query terms, and HNSW over the query vector. The lexical legs are
SQL functions of their own, called here; the dense legs are dense.py, run in this process
under the settings their SQL functions (004-dense.sql) run it with."""

from typing import TYPE_CHECKING

from .. import dense, plans

if TYPE_CHECKING:
    from .request import Request

SYMBOL_DEPTH = 40  # rows taken from each symbol leg
FILE_DEPTH = 30  # rows taken from each file leg

BM25_SYMBOLS = (
    "select symbol_id, score from codesift._bm25_symbols("
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    [
        "bigint",
        "text[]",
        "bigint[]",
        "text",
        "text",
        "text[]",
        "int",
        "float8",
        "float8",
        "float8[]",
        "int",
    ],
)
BM25_FILES = (
    "select repository_id, path, score from codesift._bm25_files("
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    ["bigint", "text[]", "bigint[]", "text", "text", "int", "float8", "float8", "float8[]", "int"],
)
# how much deeper both BM25 legs read for this scope, read once for the two
SCOPE_FACTOR = (
    "select codesift._bm25_scope_factor($1, $2) as factor",
    ["bigint", "bigint[]"],
)
TSRANK_SYMBOLS = (
    "select symbol_id, score from codesift._tsrank_symbols($1, $2, $3, $4, $5, $6, $7)",
    ["bigint", "text[]", "bigint[]", "text", "text", "text[]", "int"],
)
TSRANK_FILES = (
    "select repository_id, path, score from codesift._tsrank_files($1, $2, $3, $4, $5, $6)",
    ["bigint", "text[]", "bigint[]", "text", "text", "int"],
)


def lexical_legs(plpy, req: "Request") -> dict:
    """The lexical legs' rows, best first: lex_sym, lex_file (ranked by score). No terms (or
    a lexical weight of 0): none; a symbol-kind filter asks for symbols only."""
    p, tenant, repo_ids, weights = req.params, req.tenant, req.repo_ids, req.weights
    terms = req.terms if p.lexical_weight else []
    lex_sym: list = []
    lex_file: list = []
    if not terms:
        return {"lex_sym": lex_sym, "lex_file": lex_file}
    scope = [tenant, terms, repo_ids, p.path_prefix, p.language]
    if p.ranking == "bm25":
        factor = plans.run(plpy, *SCOPE_FACTOR, [tenant, repo_ids])[0]["factor"]
        bm25 = [p.k1, p.b, weights, factor]
        lex_sym = plans.run(plpy, *BM25_SYMBOLS, [*scope, p.kinds, SYMBOL_DEPTH, *bm25])
        if not p.kinds:
            lex_file = plans.run(plpy, *BM25_FILES, [*scope, FILE_DEPTH, *bm25])
    else:
        lex_sym = plans.run(plpy, *TSRANK_SYMBOLS, [*scope, p.kinds, SYMBOL_DEPTH])
        if not p.kinds:
            lex_file = plans.run(plpy, *TSRANK_FILES, [*scope, FILE_DEPTH])
    return {"lex_sym": lex_sym, "lex_file": lex_file}


def dense_legs(plpy, req: "Request", vector: str | None, model: str) -> dict:
    """The dense legs' rows, nearest first: dense_sym, dense_file. No vector: none; a
    symbol-kind filter asks for symbols only."""
    p, tenant, repo_ids = req.params, req.tenant, req.repo_ids
    dense_sym = dense_file = []
    if vector is not None:
        dense.check_bounds(plpy, SYMBOL_DEPTH, p.kinds, repo_ids)
        where = (tenant, vector, model, repo_ids, p.path_prefix, p.language)
        with dense.leg_settings(plpy):
            dense_sym = dense.symbols(plpy, *where, p.kinds, SYMBOL_DEPTH)
            if not p.kinds:
                dense_file = dense.files(plpy, *where, FILE_DEPTH)
    return {"dense_sym": dense_sym, "dense_file": dense_file}
