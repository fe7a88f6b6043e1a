"""The dense legs: cosine distance on the HNSW indexes of symbols and of files.

One statement text per combination of filters in use, with k written into it: under a LIMIT
parameter the planner assumes a tenth of the rows are wanted and prefers an exact sort.

Unfiltered (the usual call), the statement is prepared once per backend and runs on a cached
generic plan: planning it again at every call, as dynamic SQL did, cost as much as the walk
itself (1.1 ms of 2-3 ms at 100k symbols). That plan is the index walk where the planner's
generic guess of a tenant's rows (the table over its tenants) is large; among many small
tenants it read every live file of a large one and sorted its rows (236 ms instead of 5 for
the 15 refs of a pylint tenant among 13). A walk over a whole tenant is therefore planned
without sorts and probes the files row by row as it reaches them (TENANT_WALK); a walk over
some of its repositories keeps the planner's choice, which there is often that exact read,
steadier for a question far from the scope than a walk (bench/results/dense-walk-plans.txt).
With filters, it is planned at every call with the values: how many rows a path prefix or a
kind keeps decides between walking the index and sorting the few rows that pass, and a
generic plan cannot know it (at 100k symbols it sorted every row: 1.2 s instead of 2 ms).

The inner `order by <=> limit k` is what the index serves. Every leg runs inside
leg_settings, whether from the SQL functions of sql/idempotent/004-dense.sql or from the
pipeline (which calls this module in its own process, sparing a PL/Python function call per
leg): hnsw.iterative_scan = relaxed_order, so that filters rejecting rows still yield k of
them, the relaxed order re-sorted outside; ef_search LEG_EF_SEARCH; plans made with
force_custom_plan, which the unfiltered statement overrides for its own call
(plans.run_generic).

A scope holding a small share of a shared index is read exactly instead: the walk, filtered
to a share s of the rows, visits about k / s of them before it holds k (and stops early at
pgvector's scan limits, missing near rows), while an exact sort reads only the scope's rows.
So a scope of n rows in a table of N is sorted exactly when n <= k * N / n. The scope is the
tenant, or the repositories asked when they are a small share of it: their rows are estimated
from their live files (the tenant's rows times the share of its files they hold), counted
only up to the bound that decides. Such a scope's exact sort is planned with the values: a
generic plan cannot tell a few files of a repository from all of its tenant's, and reads them
all.

HNSW finds fewer of the true nearest rows at a fixed ef_search as its graph grows: the legs'
ef_search holds the recall target up to REFERENCE_ROWS rows in the table, and a walk
over a larger table searches wider in proportion (wider_ef_search), set for the leg only
(leg_settings restores it).
"""

import math
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from . import plans

SYMBOL_TYPES = ["vector", "bigint", "text", "bigint[]", "text", "text", "text[]"]
FILE_TYPES = SYMBOL_TYPES[:6]
ONLY_WITH = "-- only with "  # a line of sql/dense_*.sql kept only when its filter is given


# the legs' ef_search up to REFERENCE_ROWS (below) unless a session sets EF_SEARCH_SETTING,
# and the settings every leg runs with (leg_settings)
LEG_EF_SEARCH = 200
EF_SEARCH_SETTING = "codesift.ef_search"
MOST_EF_SEARCH = 1000  # pgvector's largest
_ASKED = (
    f"coalesce(nullif(btrim(current_setting('{EF_SEARCH_SETTING}', true)), ''), '{LEG_EF_SEARCH}')"
)
# the setting when it is a whole number, else a word: pgvector refuses both out of its range,
# and leg_settings then names the setting
BASE_EF_SEARCH = f"coalesce(substring({_ASKED} from '^[0-9]{{1,9}}$'), 'invalid')"
LEG_SETTINGS = (
    ("hnsw.ef_search", BASE_EF_SEARCH),
    ("hnsw.iterative_scan", "'relaxed_order'"),
    ("plan_cache_mode", "'force_custom_plan'"),
)
# the session's values (null where pgvector is not loaded yet), the legs' set for the
# transaction; restored by RESTORE_SETTINGS (a null resets a setting)
APPLY_SETTINGS = "select " + ", ".join(
    f"current_setting('{name}', true) as was{i}, set_config('{name}', {value}, true)"
    for i, (name, value) in enumerate(LEG_SETTINGS)
)
RESTORE_SETTINGS = (
    "select "
    + ", ".join(
        f"set_config('{name}', ${i + 1}, true)" for i, (name, _) in enumerate(LEG_SETTINGS)
    ),
    ["text"] * len(LEG_SETTINGS),
)
LEG_BOUNDS = (
    "select codesift._leg_bounds($1, null, $2, $3)",
    ["int", "text[]", "bigint[]"],
)


@contextmanager
def leg_settings(plpy) -> Iterator[None]:
    """The dense legs' settings (LEG_SETTINGS) for the block, the caller's restored after (an
    error that aborts the statement undoes them with it)."""
    try:
        was = plans.run(plpy, APPLY_SETTINGS)[0]
    except plpy.SPIError as e:  # pgvector refused the ef_search asked
        setting = plpy.execute(f"select current_setting('{EF_SEARCH_SETTING}', true) as v")[0]["v"]
        if not (setting or "").strip():
            raise
        plpy.error(
            f"{EF_SEARCH_SETTING} is '{(setting or '')[:40]}', not a whole number from 1 to "
            f"{MOST_EF_SEARCH}",
            detail=e.args[0],
            hint=f"set {EF_SEARCH_SETTING} to a number of candidates, or reset it "
            f"(unset: {LEG_EF_SEARCH}, wider over a table past {REFERENCE_ROWS:,} rows)",
            sqlstate="22023",
        )
    try:
        yield
    finally:
        plans.run(plpy, *RESTORE_SETTINGS, [was[f"was{i}"] for i in range(len(LEG_SETTINGS))])


def check_bounds(plpy, k, kinds, repository_ids) -> None:
    """codesift._leg_bounds for a dense leg, its message and errcode raised as they are."""
    try:
        plans.run(plpy, *LEG_BOUNDS, [k, kinds, repository_ids])
    except plpy.SPIError as e:  # without a Python exception's name
        plpy.error(e.args[0], sqlstate=e.sqlstate)


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


def symbols_query(
    k: int, path_prefix=None, language=None, kinds=None, exact=False, tenant_walk=False
) -> str:
    """The symbols statement with only the filters in use ($1..$7 are always declared);
    tenant_walk: the files probed row by row (see the module's docstring)."""
    in_use = _in_use(path_prefix=path_prefix, language=language, kinds=kinds)
    return _statement("dense_symbols", _limit(k), in_use | _probe(tenant_walk), exact)


def files_query(k: int, path_prefix=None, language=None, exact=False, tenant_walk=False) -> str:
    """The files statement with only the filters in use ($1..$6 are always declared);
    tenant_walk as for symbols_query."""
    in_use = _in_use(path_prefix=path_prefix, language=language)
    return _statement("dense_files", _limit(k), in_use | _probe(tenant_walk), exact)


def _probe(tenant_walk: bool) -> frozenset:
    return frozenset({TENANT_WALK}) if tenant_walk else frozenset()


# the table's rows (the planner's estimate; 0 on a Citus coordinator, whose shards each hold
# few tenants: the walk is kept there) beside the leg function's ef_search, the tenant's
# repositories and its rows of each tier (corpus_stats), and the live files in scope, counted
# up to a bound
ROWS = (
    "select greatest(c.reltuples, 0)::float8 as table_rows, s.tier, s.docs::float8 as n,"
    " current_setting('hnsw.ef_search')::int as ef_search,"
    f" {BASE_EF_SEARCH}::int as base_ef_search,"
    " (select count(*) from codesift.repositories as r where r.tenant_id = $2) as repositories"
    " from pg_catalog.pg_class as c left join codesift.corpus_stats as s on s.tenant_id = $2"
    " where c.oid = $1::regclass"
)
SCOPE_FILES = (
    "select count(*)::float8 as n from (select from codesift.files as f"
    " where f.tenant_id = $1 and f.live and f.repository_id = any($2) limit $3) as q"
)


def exact_is_cheaper(scope_rows: float, table_rows: float, k: int) -> bool:
    """Whether sorting the scope's rows reads fewer than the filtered index walk would."""
    return 0 < scope_rows and scope_rows * scope_rows <= k * table_rows


def scope_files_bound(tenant_rows: float, tenant_files: float, table_rows: float, k: int) -> int:
    """The live files in scope past which its rows (the tenant's, times the share of the
    tenant's files it holds) are too many to sort exactly."""
    most_rows = math.sqrt(k * table_rows)
    return math.floor(most_rows * tenant_files / tenant_rows) + 1


# the table's rows up to which the legs' ef_search meets the recall target
# (bench/results/hnsw-recall-real.txt)
REFERENCE_ROWS = 400_000
SET_EF_SEARCH = "select set_config('hnsw.ef_search', $1, true)"


def wider_ef_search(ef_search: int, table_rows: float) -> int:
    """The ef_search a walk over a table of this many rows takes: the function's own up to
    REFERENCE_ROWS, wider in proportion past it."""
    wider = math.ceil(ef_search * table_rows / REFERENCE_ROWS)
    return max(ef_search, min(wider, MOST_EF_SEARCH))


# how a leg reads: walking the index (over some of a tenant's repositories, or over all of
# them), or sorting exactly the rows of a tenant that is a small share of the table, or those
# of repositories that are a small share of their tenant
WALK, TENANT_WALK, TENANT, SCOPE = "walk", "tenant_walk", "tenant", "scope"


def _read_by(plpy, tenant, repository_ids, tier: str, table: str, k: int) -> str:
    """How the leg reads (_choose_read); a walk over a table past REFERENCE_ROWS also has
    its wider ef_search set here, from the same statement's row (from the legs' base: another
    leg in the same leg_settings block may have widened the setting for its own table)."""
    rows = plans.run(plpy, ROWS, ["text", "bigint"], [table, tenant])
    read = _choose_read(plpy, rows, tenant, repository_ids, tier, k)
    if read in (WALK, TENANT_WALK):
        ef_search = wider_ef_search(rows[0]["base_ef_search"], rows[0]["table_rows"])
        if ef_search != rows[0]["ef_search"]:
            plans.run(plpy, SET_EF_SEARCH, ["text"], [str(ef_search)])
    return read


def _choose_read(plpy, rows, tenant, repository_ids, tier: str, k: int) -> str:
    total = rows[0]["table_rows"]
    if not total:
        return WALK
    docs = {r["tier"]: r["n"] for r in rows}
    tenant_rows, tenant_files = docs.get(tier, 0), docs.get("file", 0)
    if exact_is_cheaper(tenant_rows, total, k):
        return TENANT
    # a scope of every repository and ref the tenant holds is the tenant
    if tenant_rows and repository_ids and len(repository_ids) >= rows[0]["repositories"]:
        return TENANT_WALK
    if not (tenant_rows and tenant_files and repository_ids):
        return WALK
    bound = scope_files_bound(tenant_rows, tenant_files, total, k)
    args = [tenant, repository_ids, bound]
    in_scope = plans.run(plpy, SCOPE_FILES, ["bigint", "bigint[]", "bigint"], args)[0]["n"]
    # none live (a ref still being indexed) is read exactly too: a walk would find no row
    # to stop at before pgvector's scan limits
    return SCOPE if in_scope < bound else WALK


def _shape(read: str, filtered: bool) -> tuple[bool, bool]:
    """(exact, tenant_walk) of the statement a leg reads by: a sort of the rows in scope,
    or the files probed row by row by an unfiltered walk over a whole tenant."""
    return read in (TENANT, SCOPE), read == TENANT_WALK and not filtered


def _execute(plpy, query: str, types: list, args: list, read: str, filtered: bool):
    if filtered or read == SCOPE:
        return plans.execute(plpy, plpy.prepare(query, types), args)
    return plans.run_generic(plpy, query, types, args, sort=read != TENANT_WALK)


def symbols(plpy, tenant, embedding, model, repository_ids, path_prefix, language, kinds, k):
    """(symbol_id, distance) of the k nearest live symbols passing the filters."""
    if k is not None and k < 1:
        return []
    read = _read_by(plpy, tenant, repository_ids, "symbol", "codesift.code_symbols", k)
    filtered = path_prefix is not None or language is not None or kinds is not None
    query = symbols_query(k, path_prefix, language, kinds, *_shape(read, filtered))
    args = [embedding, tenant, model, repository_ids, path_prefix, language, kinds]
    return _execute(plpy, query, SYMBOL_TYPES, args, read, filtered)


def files(plpy, tenant, embedding, model, repository_ids, path_prefix, language, k):
    """(repository_id, path, distance) of the live files holding the k nearest blobs."""
    if k is not None and k < 1:
        return []
    read = _read_by(plpy, tenant, repository_ids, "file", "codesift.blobs", k)
    filtered = path_prefix is not None or language is not None
    query = files_query(k, path_prefix, language, *_shape(read, filtered))
    args = [embedding, tenant, model, repository_ids, path_prefix, language]
    return _execute(plpy, query, FILE_TYPES, args, read, filtered)
