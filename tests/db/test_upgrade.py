"""An upgrade equals a fresh install: a database migrated with an earlier version's
migrations (the first commit's sql/, and each release's: tags v0.1.0, v0.2.0) and then with this
checkout's has the same SQL surface (tests/surface.py) as one migrated with this
checkout's alone."""

import shutil
import subprocess
from pathlib import Path

import pytest
from codesift.migrate import migrate

from tests.db.test_surface import load_surface, surface_diff

ROOT = Path(__file__).resolve().parents[2]
FIRST_RELEASE = "3eb25f4"  # the first commit: two incremental migrations
# tag -> (commit, its incremental migrations)
RELEASES = {
    "v0.1.0": ("9122df86692b7d148b0525f710bbf882d9548201", 7),
    "v0.2.0": ("03afeb2c17c798b7d136d7d70926ce0ec66d95b8", 20),
}


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


def _assert_upgrade_equals_fresh_install(old_sql: Path, since: str, blank, db) -> None:
    first = migrate(blank, sql_dir=old_sql)
    assert "incremental/001-schema.sql" in first.applied
    upgrade = migrate(blank)
    assert "incremental/001-schema.sql" not in upgrade.applied
    pending = {p.name for p in (ROOT / "sql/incremental").glob("*.sql")} - {
        p.name for p in (old_sql / "incremental").glob("*.sql")
    }
    applied = sorted(name for name in upgrade.applied if name.startswith("incremental/"))
    assert applied == sorted(f"incremental/{name}" for name in pending)

    surface = load_surface()
    fresh = surface.dump(db)
    upgraded = surface.dump(blank)
    if upgraded != fresh:
        pytest.fail(
            f"a database upgraded from {since} differs from a fresh install:\n"
            + surface_diff(fresh, upgraded, "fresh install", f"upgraded from {since}"),
            pytrace=False,
        )


def test_upgrade_from_the_first_release_equals_a_fresh_install(blank_postgresql, db, tmp_path):
    old_sql = first_release_sql(tmp_path)
    assert sorted(p.name for p in (old_sql / "incremental").glob("*.sql")) == [
        "001-schema.sql",
        "002-embeddings.sql",
    ]
    _assert_upgrade_equals_fresh_install(old_sql, FIRST_RELEASE, blank_postgresql, db)


@pytest.mark.parametrize("tag", sorted(RELEASES))
def test_upgrade_from_a_release_equals_a_fresh_install(tag, blank_postgresql, db, tmp_path):
    commit, incremental = RELEASES[tag]
    old_sql = sql_at(commit, tmp_path)
    assert len(list((old_sql / "incremental").glob("*.sql"))) == incremental
    _assert_upgrade_equals_fresh_install(old_sql, tag, blank_postgresql, db)


@pytest.mark.parametrize("tag", sorted(RELEASES))
def test_the_release_tag_names_the_release_commit(tag):
    """Where the checkout has its tags, each release tag is the commit its upgrade test
    starts from."""
    tagged = _git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
    if tagged.returncode != 0:
        pytest.skip("this clone has no tags (CI clones the branch alone)")
    assert tagged.stdout.decode().strip() == RELEASES[tag][0]
