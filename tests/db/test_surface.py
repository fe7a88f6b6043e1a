"""The SQL surface pinned by a golden file: a fresh install must dump exactly
tests/expected/surface.txt (every function's signature, result, volatility, security,
settings and grants; every table's and view's columns, constraints, indexes, policies and
comments). A change to the surface shows in review as a change to that file."""

import difflib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "expected" / "surface.txt"


def load_surface():
    """scripts/surface.py as a module (scripts/ is not a package)."""
    path = ROOT / "scripts" / "surface.py"
    spec = importlib.util.spec_from_file_location("codesift_surface", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
