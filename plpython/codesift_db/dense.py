"""The dense legs: cosine distance on the HNSW indexes of symbols and of files.

One statement text per combination of filters in use, with k written into it: under a LIMIT
parameter the planner assumes a tenth of the rows are wanted and prefers an exact sort.

Unfiltered (the usual call), the statement is prepared once per backend and runs on a cached
generic plan: that plan is the same index walk, and planning it again at every call, as
dynamic SQL did, cost as much as the walk itself (1.1 ms of 2-3 ms at 100k symbols).
With filters, it is planned at every call with the values: how many rows a path prefix or a
kind keeps decides between walking the index and sorting the few rows that pass, and a
generic plan cannot know it (at 100k symbols it sorted every row: 1.2 s instead of 2 ms).

The inner `order by <=> limit k` is what the index serves; the SQL functions that call this
(sql/idempotent/004-dense.sql) set hnsw.iterative_scan = relaxed_order, so that filters
rejecting rows still yield k of them, and re-sort the relaxed order outside; they plan with
force_custom_plan, which the unfiltered statement overrides for its own call
(plans.run_generic).

A tenant holding a small share of a shared index is read exactly instead: the walk, filtered
to a share s of the rows, visits about k / s of them before it holds k (and stops early at
pgvector's scan limits, missing near rows), while an exact sort reads only the tenant's rows.
So a tenant of n rows in a table of N is sorted exactly when n <= k * N / n.
"""

from functools import lru_cache

from . import plans

SYMBOL_TYPES = ["vector", "bigint", "text", "bigint[]", "text", "text", "text[]"]
FILE_TYPES = SYMBOL_TYPES[:6]
ONLY_WITH = "-- only with "  # a line of sql/dense_*.sql kept only when its filter is given


def _limit(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer (got {k!r})")
    return k  # an int: safe to write into the statement


@lru_cache(maxsize=64)
def _statement(name: str, k: int, filters: frozenset, exact: bool) -> str:
    """sql/NAME.sql (NAME_exact.sql when exact) with k written in and only the lines of the
    filters in use."""
    lines = []
    for line in plans.load(name + ("_exact" if exact else "")).splitlines(keepends=True):
        code, marker, wanted = line.partition(ONLY_WITH)
        if marker and wanted.strip() not in filters:
            continue
        lines.append(code.rstrip() + "\n" if marker else line)
    return "".join(lines).replace("{{ k }}", str(k))


def _in_use(**filters) -> frozenset:
    return frozenset(name for name, value in filters.items() if value is not None)


def symbols_query(k: int, path_prefix=None, language=None, kinds=None, exact=False) -> str:
    """The symbols statement with only the filters in use ($1..$7 are always declared)."""
    in_use = _in_use(path_prefix=path_prefix, language=language, kinds=kinds)
    return _statement("dense_symbols", _limit(k), in_use, exact)


def files_query(k: int, path_prefix=None, language=None, exact=False) -> str:
    """The files statement with only the filters in use ($1..$6 are always declared)."""
    in_use = _in_use(path_prefix=path_prefix, language=language)
    return _statement("dense_files", _limit(k), in_use, exact)


# the table's rows (the planner's estimate; 0 on a Citus coordinator, whose shards each hold
# few tenants: the walk is kept there) and the tenant's (corpus_stats)
TABLE_ROWS = (
    "select greatest(reltuples, 0)::float8 as n from pg_catalog.pg_class where oid = $1::regclass"
)
TENANT_ROWS = (
    "select docs::float8 as n from codesift.corpus_stats where tenant_id = $1 and tier = $2"
)


def exact_is_cheaper(tenant_rows: float, table_rows: float, k: int) -> bool:
    """Whether sorting the tenant's rows reads fewer than the filtered index walk would."""
    return 0 < tenant_rows and tenant_rows * tenant_rows <= k * table_rows


def _exact(plpy, tenant, tier: str, table: str, k: int) -> bool:
    total = plans.run(plpy, TABLE_ROWS, ["text"], [table])[0]["n"]
    if not total:
        return False
    rows = plans.run(plpy, TENANT_ROWS, ["bigint", "text"], [tenant, tier])
    return bool(rows) and exact_is_cheaper(rows[0]["n"], total, k)


def _execute(plpy, query: str, types: list, args: list, filtered: bool):
    if filtered:
        return plpy.execute(plpy.prepare(query, types), args)
    return plans.run_generic(plpy, query, types, args)


def symbols(plpy, tenant, embedding, model, repository_ids, path_prefix, language, kinds, k):
    """(symbol_id, distance) of the k nearest live symbols passing the filters."""
    if k is not None and k < 1:
        return []
    exact = _exact(plpy, tenant, "symbol", "codesift.code_symbols", k)
    query = symbols_query(k, path_prefix, language, kinds, exact)
    args = [embedding, tenant, model, repository_ids, path_prefix, language, kinds]
    filtered = path_prefix is not None or language is not None or kinds is not None
    return _execute(plpy, query, SYMBOL_TYPES, args, filtered)


def files(plpy, tenant, embedding, model, repository_ids, path_prefix, language, k):
    """(repository_id, path, distance) of the live files holding the k nearest blobs."""
    if k is not None and k < 1:
        return []
    exact = _exact(plpy, tenant, "file", "codesift.blobs", k)
    query = files_query(k, path_prefix, language, exact)
    args = [embedding, tenant, model, repository_ids, path_prefix, language]
    filtered = path_prefix is not None or language is not None
    return _execute(plpy, query, FILE_TYPES, args, filtered)
