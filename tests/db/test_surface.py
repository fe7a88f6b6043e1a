"""The SQL surface pinned by a golden file: a fresh install must dump exactly
tests/expected/surface.txt (every function's signature, result, volatility, security,
settings and grants; every table's and view's columns, constraints, indexes, policies and
comments). A change to the surface shows in review as a change to that file."""

import difflib
from pathlib import Path

import pytest

from tests import surface

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "expected" / "surface.txt"


def load_surface():
    """The dumper, tests/surface.py (what `make expected` runs)."""
    return surface


def surface_diff(expected: str, actual: str, expected_name: str, actual_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=expected_name,
            tofile=actual_name,
        )
    )


def test_fresh_install_matches_the_expected_surface(db):
    if not EXPECTED.exists():
        pytest.fail(f"{EXPECTED.relative_to(ROOT)} is missing: run make expected")
    actual = load_surface().dump(db)
    expected = EXPECTED.read_text()
    if actual != expected:
        diff = surface_diff(expected, actual, "tests/expected/surface.txt", "fresh install")
        pytest.fail(
            "the SQL surface differs from tests/expected/surface.txt; if the change is "
            "intended, run make expected and commit the file:\n" + diff,
            pytrace=False,
        )


def test_schema_tables_and_columns_are_commented(db):
    """\\d+ and a BI tool's catalog browser explain the data: sql/idempotent/098-comments.sql
    (or the migration that adds it) comments the schema, every table and view, every column."""
    missing = db.execute(
        """
        select c.relname || coalesce('.' || a.attname, '')
        from pg_class as c
        inner join pg_namespace as n on n.oid = c.relnamespace
        left join pg_attribute as a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where n.nspname = 'codesift' and c.relkind in ('r', 'p', 'v', 'm')
            and (obj_description(c.oid, 'pg_class') is null
                 or (a.attname is not null and col_description(c.oid, a.attnum) is null))
        order by 1
        """
    ).fetchall()
    assert [name for (name,) in missing] == []
    schema = db.execute("select obj_description('codesift'::regnamespace, 'pg_namespace')")
    assert schema.fetchone()[0]
