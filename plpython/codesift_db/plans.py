"""Statements prepared once per backend and reused by every call, and the statement texts
kept in plpython/codesift_db/sql/*.sql (linted by sqlfluff with sql/), read once.

The modules of this package stay imported for a connection's life, so a statement prepared
here is parsed once and its plan is cached by PostgreSQL (generic or custom, as
plan_cache_mode decides); preparing it again at each call costs as much as running the short
statements of the query path.

    prepared(plpy, query, types) -> plan
    run(plpy, query, types, args) -> result
    load(name) -> the text of sql/NAME.sql
"""

from functools import cache
from pathlib import Path

MAX_PLANS = 256  # statements kept per backend; texts are fixed but for the dense legs' k
SQL_DIR = Path(__file__).with_name("sql")

_plans: dict = {}


def prepared(plpy, query: str, types: list | tuple = ()):
    plan = _plans.get(query)
    if plan is None:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        plan = _plans[query] = plpy.prepare(query, list(types))
    return plan


def run(plpy, query: str, types: list | tuple = (), args: list | tuple = ()):
    return plpy.execute(prepared(plpy, query, types), list(args))


@cache
def load(name: str) -> str:
    """The statement in sql/NAME.sql ($1-style parameters, as plpy.prepare takes them)."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")
