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
(sql/idempotent/003-search.sql) set hnsw.iterative_scan = relaxed_order, so that filters
rejecting rows still yield k of them, and re-sort the relaxed order outside; they plan with
force_custom_plan, which the unfiltered statement overrides for its own call.
"""

from . import plans

# live at its repository's indexed head, in the asked repositories, passing the filters
LIVE = """exists (
            select 1 from codesift.live_files as v
            where v.tenant_id = {row}.tenant_id and v.blob_sha = {row}.{sha}
                and v.repository_id = any($4){path}{language}
        )"""

SYMBOLS = """
select d.id as symbol_id, d.distance from (
    select s.id, (s.embedding <=> $1)::double precision as distance
    from codesift.code_symbols as s
    where s.tenant_id = $2 and s.embedding_model = $3{kinds}
        and {live}
    order by s.embedding <=> $1
    limit {k}
) as d
order by d.distance, d.id
"""

FILES = """
select v.repository_id, v.path, d.distance from (
    select bl.sha, (bl.embedding <=> $1)::double precision as distance
    from codesift.blobs as bl
    where bl.tenant_id = $2 and bl.embedding_model = $3
        and {live}
    order by bl.embedding <=> $1
    limit {k}
) as d
join codesift.live_files as v on v.tenant_id = $2 and v.blob_sha = d.sha
where v.repository_id = any($4){path}
order by d.distance, v.path
"""

SYMBOL_TYPES = ["vector", "bigint", "text", "bigint[]", "text", "text", "text[]"]
FILE_TYPES = SYMBOL_TYPES[:6]
GENERIC = "select set_config('plan_cache_mode', 'force_generic_plan', true)"


def _limit(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer (got {k!r})")
    return k  # an int: safe to write into the statement


def _filters(path_prefix, language) -> dict:
    return {
        "path": "\n                and starts_with(v.path, $5)" if path_prefix is not None else "",
        "language": "\n                and v.language = $6" if language is not None else "",
    }


def symbols_query(k: int, path_prefix=None, language=None, kinds=None) -> str:
    """The symbols statement with only the filters in use ($1..$7 are always declared)."""
    live = LIVE.format(row="s", sha="blob_sha", **_filters(path_prefix, language))
    kinds = "\n        and s.kind = any($7)" if kinds is not None else ""
    return SYMBOLS.format(k=_limit(k), kinds=kinds, live=live)


def files_query(k: int, path_prefix=None, language=None) -> str:
    """The files statement with only the filters in use ($1..$6 are always declared)."""
    filters = _filters(path_prefix, language)
    live = LIVE.format(row="bl", sha="sha", **filters)
    return FILES.format(k=_limit(k), live=live, path=filters["path"])


def _execute(plpy, query: str, types: list, args: list, filtered: bool):
    if filtered:
        return plpy.execute(plpy.prepare(query, types), args)
    # local to the calling function: its SET clause restores force_custom_plan on return
    plans.run(plpy, GENERIC)
    return plans.run(plpy, query, types, args)


def symbols(plpy, tenant, embedding, model, repository_ids, path_prefix, language, kinds, k):
    """(symbol_id, distance) of the k nearest live symbols passing the filters."""
    if k is not None and k < 1:
        return []
    query = symbols_query(k, path_prefix, language, kinds)
    args = [embedding, tenant, model, repository_ids, path_prefix, language, kinds]
    filtered = path_prefix is not None or language is not None or kinds is not None
    return _execute(plpy, query, SYMBOL_TYPES, args, filtered)


def files(plpy, tenant, embedding, model, repository_ids, path_prefix, language, k):
    """(repository_id, path, distance) of the live files holding the k nearest blobs."""
    if k is not None and k < 1:
        return []
    query = files_query(k, path_prefix, language)
    args = [embedding, tenant, model, repository_ids, path_prefix, language]
    filtered = path_prefix is not None or language is not None
    return _execute(plpy, query, FILE_TYPES, args, filtered)
