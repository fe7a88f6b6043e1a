"""An upgrade equals a fresh install: a database migrated with the first release's
migrations (commit 3eb25f4's sql/) and then with today's has the same SQL surface
(scripts/surface.py) as one migrated with today's alone."""

import shutil
import subprocess
from pathlib import Path

import pytest
from codesift.migrate import migrate

from tests.db.test_surface import load_surface, surface_diff

ROOT = Path(__file__).resolve().parents[2]
FIRST_RELEASE = "3eb25f4"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True)


def first_release_sql(target: Path) -> Path:
    """The sql/ tree of the first release, written from git history into `target`/sql."""
    return sql_at(FIRST_RELEASE, target)


def sql_at(commit: str, target: Path) -> Path:
    """The sql/ tree of `commit`, written from git history into `target`/sql."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: earlier migrations come from history")
    listed = _git("ls-tree", "-r", "--name-only", commit, "--", "sql")
    if listed.returncode != 0 or not listed.stdout.strip():
        pytest.skip(
            f"commit {commit} is not in this checkout's history (a shallow clone?): "
            f"{listed.stderr.decode(errors='replace').strip()}"
        )
    for name in listed.stdout.decode().split():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shown = _git("show", f"{commit}:{name}")
        assert shown.returncode == 0, shown.stderr.decode(errors="replace")
        path.write_bytes(shown.stdout)
    return target / "sql"


def test_upgrade_from_the_first_release_equals_a_fresh_install(blank_postgresql, db, tmp_path):
    old_sql = first_release_sql(tmp_path)
    assert sorted(p.name for p in (old_sql / "incremental").glob("*.sql")) == [
        "001-schema.sql",
        "002-embeddings.sql",
    ]
    first = migrate(blank_postgresql, sql_dir=old_sql)
    assert "incremental/001-schema.sql" in first.applied
    upgrade = migrate(blank_postgresql)
    assert "incremental/001-schema.sql" not in upgrade.applied
    assert upgrade.applied, "the upgrade applied nothing"

    surface = load_surface()
    fresh = surface.dump(db)
    upgraded = surface.dump(blank_postgresql)
    if upgraded != fresh:
        pytest.fail(
            "a database upgraded from the first release differs from a fresh install:\n"
            + surface_diff(fresh, upgraded, "fresh install", f"upgraded from {FIRST_RELEASE}"),
            pytrace=False,
        )
