"""Statements prepared once per backend and reused by every call, and the statement texts
kept in plpython/codesift_db/sql/*.sql (linted by sqlfluff with sql/), read once.

The modules of this package stay imported for a connection's life, so a statement prepared
here is parsed once and its plan is cached by PostgreSQL (generic or custom, as
plan_cache_mode decides); preparing it again at each call costs as much as running the short
statements of the query path.

    prepared(plpy, query, types) -> plan
    run(plpy, query, types, args) -> result (planned again once under Citus, see below)
    execute(plpy, plan, args) -> result, a plan of the caller's run as run() runs one
    run_generic(plpy, query, types, args, sort) -> result, always on the statement's generic plan
    load(name) -> the text of sql/NAME.sql
"""

from functools import cache
from pathlib import Path

MAX_PLANS = 256  # statements kept per backend; texts are fixed but for the dense legs' k
SQL_DIR = Path(__file__).with_name("sql")

_plans: dict = {}

# Citus plans a statement over several tables by the placements it reads table by table; a
# shard move committing meanwhile can show it the tenant's shards split across two workers,
# and the planner then falls back to one that does not support our statements. Planned
# again, the statement sees the move whole.
ON_CITUS = "select current_setting('citus.propagate_set_commands', true) is not null as on"

# plan_cache_mode for one statement: not under Citus, which routes a statement by its
# tenant_id's value (a generic plan would leave it to the coordinator to route)
FORCE_GENERIC = (
    "select current_setting('plan_cache_mode') as was, current_setting('enable_sort') as sort,"
    " set_config('plan_cache_mode', 'force_generic_plan', true),"
    " set_config('enable_sort', coalesce($1, current_setting('enable_sort')), true)"
    " where current_setting('citus.propagate_set_commands', true) is null",
    ["text"],
)
RESTORE = (
    "select set_config('plan_cache_mode', $1, true), set_config('enable_sort', $2, true)",
    ["text", "text"],
)


def prepared(plpy, query: str, types: list | tuple = ()):
    plan = _plans.get(query)
    if plan is None:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        plan = _plans[query] = plpy.prepare(query, list(types))
    return plan


def run(plpy, query: str, types: list | tuple = (), args: list | tuple = ()):
    return execute(plpy, prepared(plpy, query, types), args)


def execute(plpy, plan, args: list | tuple = ()):
    """plpy.execute(plan, args), planned again once under Citus (ON_CITUS)."""
    try:
        return plpy.execute(plan, list(args))
    except plpy.spiexceptions.FeatureNotSupported:
        if not _on_citus(plpy):
            raise
        return plpy.execute(plan, list(args))


@cache
def _on_citus(plpy) -> bool:
    """Whether this backend runs under Citus: asked once."""
    return plpy.execute(ON_CITUS)[0]["on"]


def run_generic(
    plpy, query: str, types: list | tuple = (), args: list | tuple = (), sort: bool = True
):
    """run() on the statement's generic plan, planned once per backend: for a statement
    whose plan does not depend on its arguments' values but whose custom plan PostgreSQL
    keeps choosing, so that every call pays for planning it (more than running it costs).
    `sort` False plans it with enable_sort off: an index that yields the order (the dense
    legs' HNSW walk) is then taken, whatever the generic estimate of the rows it would
    otherwise read and sort. The session's settings are restored after."""
    forced = run(plpy, *FORCE_GENERIC, [None if sort else "off"])
    try:
        return run(plpy, query, types, args)
    finally:
        if forced:
            run(plpy, *RESTORE, [forced[0]["was"], forced[0]["sort"]])


@cache
def load(name: str) -> str:
    """The statement in sql/NAME.sql ($1-style parameters, as plpy.prepare takes them)."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")
