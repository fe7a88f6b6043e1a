"""`codesift hook install|uninstall`: real git commits, checkouts and merges running the
real hooks against a real database. Waits poll with a generous deadline; a `git` call's
timeout only guards against a hang (it is what "never blocks" would break: a background
index holding git's output pipes open)."""

import fcntl
import os
import subprocess
from pathlib import Path

from tests.conftest import write_files
from tests.watching import Asker, live_paths, poll
from tests.watching import run_codesift as _cli

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _git(root: Path, dsn: str, *args: str) -> subprocess.CompletedProcess:
    """git as a user runs it: CODESIFT_DSN in the environment, output captured (a hook that
    left a process holding the pipes would make this wait)."""
    return subprocess.run(
        ["git", *args],
        cwd=root,
        env={**os.environ, **GIT_ENV, "HOME": str(root), "CODESIFT_DSN": dsn},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _commit(root: Path, dsn: str, files: dict[str, str], message: str) -> None:
    write_files(root, files)
    assert _git(root, dsn, "add", "-A").returncode == 0
    result = _git(root, dsn, "commit", "-q", "-m", message)
    assert result.returncode == 0, result.stderr


def _head(root: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _indexed(db, repo: str = "repo") -> str | None:
    row = db.execute(
        "select indexed_commit from codesift.repositories where name = %s", (repo,)
    ).fetchone()
    return row[0] if row else None


def test_commit_checkout_and_merge_are_indexed_in_the_background(db, dsn, make_repo, app_connect):
    root = make_repo({"a.py": "def first():\n    return 1\n"})
    result = _cli(dsn, "hook", "install", str(root), "--no-embed")
    assert result.returncode == 0, result.stderr
    log = root / ".git" / "codesift-hook.log"

    _commit(root, dsn, {"b.py": "def committed_pelican_feature():\n    return 2\n"}, "b")
    head = _head(root)
    poll("the commit indexed", lambda: _indexed(db) == head, log=log)
    ask = Asker(app_connect, db)
    hits = ask("committed pelican feature", "repo")
    assert any("def committed_pelican_feature" in text for _, text in hits)

    # a branch switch (post-checkout) and a merge (post-merge) move the index too
    assert _git(root, dsn, "checkout", "-q", "-b", "side").returncode == 0
    _commit(root, dsn, {"side.py": "side_only = 1\n"}, "side")
    poll("the side commit", lambda: _indexed(db) == _head(root), log=log)
    assert _git(root, dsn, "checkout", "-q", "main").returncode == 0
    poll("back on main", lambda: "side.py" not in live_paths(db, "repo"), log=log)
    result = _git(root, dsn, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    assert result.returncode == 0, result.stderr
    merged = _head(root)
    poll("the merge indexed", lambda: _indexed(db) == merged, log=log)
    assert "side.py" in live_paths(db, "repo")
    assert "indexed repo @" in log.read_text()


def test_git_succeeds_when_the_database_is_down_or_the_index_fails(db, dsn, make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    down = "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2"
    assert _cli(down, "hook", "install", str(root)).returncode == 0
    log = root / ".git" / "codesift-hook.log"
    _commit(root, down, {"b.py": "y = 2\n"}, "while the database is down")
    poll("the failure logged", lambda: log.exists() and "error:" in log.read_text(), log=log)
    assert "cannot connect" in log.read_text()

    # an index that fails in the database (a tenant name it refuses): git still succeeds
    assert _cli(dsn, "hook", "install", str(root), "--tenant", "t" * 300).returncode == 0
    log.unlink()
    _commit(root, dsn, {"c.py": "z = 3\n"}, "an index that fails")
    poll("the failure logged", lambda: log.exists() and "error:" in log.read_text(), log=log)
    assert db.execute("select count(*) from codesift.repositories").fetchone()[0] == 0


def test_a_user_hook_is_chained_and_restored(dsn, make_repo, tmp_path):
    root = make_repo({"a.py": "x = 1\n"})
    hooks = root / ".git" / "hooks"
    ran = tmp_path / "user-hook-ran"
    user_hook = f'#!/bin/sh\necho "post-commit $*" >> "{ran}"\nexit 0\n'
    (hooks / "post-commit").write_text(user_hook)
    (hooks / "post-commit").chmod(0o755)
    down = "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=1"
    for _ in range(2):  # installing twice changes nothing more
        result = _cli(down, "hook", "install", str(root))
        assert result.returncode == 0, result.stderr
    assert (hooks / "post-commit.codesift-chained").read_text() == user_hook
    assert not (hooks / "post-commit.codesift-chained.codesift-chained").exists()
    _commit(root, down, {"b.py": "y = 2\n"}, "b")
    assert ran.read_text().count("post-commit") == 1, "the user's hook ran once"

    result = _cli(down, "hook", "uninstall", str(root))
    assert result.returncode == 0, result.stderr
    assert (hooks / "post-commit").read_text() == user_hook
    assert os.access(hooks / "post-commit", os.X_OK)
    assert not (hooks / "post-commit.codesift-chained").exists()
    assert not (hooks / "post-merge").exists() and not (hooks / "post-checkout").exists()
    assert not (root / ".git" / "codesift-hook.json").exists()
    # a hook that is not ours is left alone by uninstall
    (hooks / "post-merge").write_text("#!/bin/sh\nexit 0\n")
    _cli(down, "hook", "uninstall", str(root))
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\nexit 0\n"


def test_post_checkout_keeps_the_user_hooks_exit_status(dsn, make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    hooks = root / ".git" / "hooks"
    (hooks / "post-checkout").write_text("#!/bin/sh\nexit 7\n")
    (hooks / "post-checkout").chmod(0o755)
    down = "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=1"
    assert _cli(down, "hook", "install", str(root)).returncode == 0
    # git makes post-checkout's status its own: the user's hook decides it, as before
    assert _git(root, down, "checkout", "-q", "-b", "other").returncode != 0
    (hooks / "post-checkout.codesift-chained").write_text("#!/bin/sh\nexit 0\n")
    assert _git(root, down, "checkout", "-q", "-b", "another").returncode == 0


def test_a_second_run_leaves_a_note_instead_of_piling_up(db, dsn, make_repo):
    root = make_repo({"a.py": "def noted():\n    return 1\n"})
    assert _cli(dsn, "hook", "install", str(root), "--no-embed").returncode == 0
    lock = os.open(root / ".git" / "codesift-hook.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a run in progress
        result = _cli(dsn, "hook", "run", "post-commit", "--foreground", cwd=root)
        assert result.returncode == 0, result.stderr
        assert (root / ".git" / "codesift-hook.pending").exists()
        assert _indexed(db) is None, "ran while another run held the lock"
    finally:
        os.close(lock)
    result = _cli(dsn, "hook", "run", "post-commit", "--foreground", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _indexed(db) == _head(root)
    assert not (root / ".git" / "codesift-hook.pending").exists()


# What `codesift hook install` wrote before the hooks ran isolated: `python -m codesift`
# from the work tree, where a committed json.py is imported first.
OLD_SCRIPT = """#!/bin/sh
# codesift hook: written by `codesift hook install`
status=0
if [ -x "$0.codesift-chained" ]; then
    "$0.codesift-chained" "$@" || status=$?
fi
python={python}
if [ -x "$python" ]; then
    ("$python" -m codesift hook run {hook} "$@" </dev/null >/dev/null 2>&1 &)
fi
exit $status
"""


def test_hooks_written_before_isolation_are_upgraded(db, dsn, make_repo, tmp_path):
    root = make_repo({"a.py": "x = 1\n"})
    marker = tmp_path / "pwned"
    assert _git(root, dsn, "checkout", "-q", "-b", "evil").returncode == 0
    _commit(root, dsn, {"json.py": f"open({str(marker)!r}, 'a').write('json')\n"}, "evil")
    evil = _head(root)
    assert _git(root, dsn, "checkout", "-q", "main").returncode == 0
    assert _cli(dsn, "hook", "install", str(root), "--no-embed").returncode == 0
    hooks = root / ".git" / "hooks"
    python = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python")
    for hook in ("post-commit", "post-checkout", "post-merge"):
        (hooks / hook).write_text(OLD_SCRIPT.format(python=python, hook=hook))
    log = root / ".git" / "codesift-hook.log"

    _commit(root, dsn, {"b.py": "y = 2\n"}, "b")  # an old hook, in a harmless checkout
    head = _head(root)
    poll("the commit indexed", lambda: _indexed(db) == head, log=log)
    for hook in ("post-commit", "post-checkout", "post-merge"):
        script = (hooks / hook).read_text()
        assert "-I -m codesift hook run --root" in script, script
        assert os.access(hooks / hook, os.X_OK)
    assert "upgraded" in log.read_text()

    assert _git(root, dsn, "checkout", "-q", "evil").returncode == 0
    poll("the checkout indexed", lambda: marker.exists() or _indexed(db) == evil, log=log)
    assert not marker.exists(), "an upgraded hook imported the checkout's json.py"
