"""An upgrade equals a fresh install: a database migrated with the first release's
migrations (commit 3eb25f4's sql/) and then with today's has the same SQL surface
(scripts/surface.py) as one migrated with today's alone."""

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from codesift.migrate import migrate

from tests.db.test_surface import load_surface, surface_diff

ROOT = Path(__file__).resolve().parents[2]
FIRST_RELEASE = "3eb25f4"


def first_release_sql(target: Path) -> Path:
    """The sql/ tree of the first release, extracted from git history into `target`."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the first release's migrations come from history")
    found = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", FIRST_RELEASE, "sql"],
        capture_output=True,
    )
    if found.returncode != 0:
        pytest.skip(
            f"commit {FIRST_RELEASE} is not in this checkout's history (a shallow clone?): "
            f"{found.stderr.decode(errors='replace').strip()}"
        )
    with tarfile.open(fileobj=io.BytesIO(found.stdout)) as tar:
        tar.extractall(target, filter="data")
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
