"""Attacks through `codesift watch` and `codesift hook`: paths that are not repositories,
a hooks folder outside the repository, hostile file and repository names, FIFOs and
huge files in the watched tree, a second tenant with the same repository name, Python
modules committed in the checkout (which the hooks' interpreter must never import), and
a symlink committed where `hook install` writes its temporary file.

Absence is shown by ordering: a marker file written after the hostile ones is waited
for; watch handles batches in order, so by then the hostile events were handled.
"""

import os
from pathlib import Path

import pytest

from tests.conftest import commit, git, write_files
from tests.watching import Watch, live_paths, poll, stored_text
from tests.watching import run_codesift as _cli


@pytest.mark.parametrize(
    "command",
    [["watch", "--no-embed"], ["hook", "install"], ["hook", "uninstall"]],
    ids=["watch", "hook-install", "hook-uninstall"],
)
def test_not_a_repository_is_a_clear_error(dsn, tmp_path, command):
    plain = tmp_path / "plain"
    plain.mkdir()
    for path, message in (
        (plain, "not a git repository"),
        (tmp_path / "missing", "does not exist"),
        (tmp_path / "file.txt", "is not a directory"),
    ):
        if path.name == "file.txt":
            path.write_text("x")
        result = _cli(dsn, *command[:1], *command[1:], str(path))
        assert result.returncode == 1, result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr
    assert list(plain.iterdir()) == []


def test_a_hooks_folder_outside_the_repository_is_not_edited(dsn, make_repo, tmp_path):
    root = make_repo({"a.py": "x = 1\n"})
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    git(root, "config", "core.hooksPath", str(shared))
    result = _cli(dsn, "hook", "install", str(root))
    assert result.returncode == 1
    assert "outside the repository" in result.stderr and "Traceback" not in result.stderr
    assert list(shared.iterdir()) == []
    assert not (root / ".git" / "codesift-hook.json").exists()
    # a hooks folder inside the repository (e.g. husky's) is fine
    git(root, "config", "core.hooksPath", ".githooks")
    assert _cli(dsn, "hook", "install", str(root)).returncode == 0
    assert (root / ".githooks" / "post-commit").exists()


HOSTILE = {
    "$(touch PWNED).py": "dollar_paren_name = 1\n",
    "-rf.py": "dash_name = 1\n",
    "--output=x.py": "option_name = 1\n",
    "a*b?.py": "glob_name = 1\n",
    ":(glob)magic.py": "magic_pathspec_name = 1\n",
    "sp ace/`tick`.py": "backtick_name = 1\n",
}


def test_hostile_file_names_under_watch(db, dsn, make_repo, tmp_path):
    root = make_repo({"a.py": "x = 1\n"})
    with Watch(dsn, root, "--no-embed", "--max-bytes", "5000", log=tmp_path / "w.log") as w:
        w.wait_for("indexed repo")
        write_files(root, HOSTILE)
        (root / "new\nline.py").write_text("newline_name_secret = 1\n")
        (root / "esc\x1b[31m.py").write_text("escape_name_secret = 1\n")
        with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "w") as f:
            f.write("not_utf8_name_secret = 1\n")
        os.mkfifo(root / "pipe.py")  # reading it would block a careless watcher
        (root / "huge.py").write_text("huge_file_secret = 1\n" + "#" * 10000 + "\n")
        (root / "marker.py").write_text("marker = 1\n")
        poll("the marker", lambda: "marker.py" in live_paths(db, "repo"), log=w.log)
        live = live_paths(db, "repo")
        for name in HOSTILE:
            assert name in live, name
        assert w.proc.poll() is None, "the watcher died"
    for secret in (
        "newline_name_secret",
        "escape_name_secret",
        "not_utf8_name_secret",
        "huge_file_secret",
    ):
        assert stored_text(db, secret) == 0, secret
    assert "pipe.py" not in live
    assert not list(tmp_path.rglob("PWNED")) and not (Path.cwd() / "PWNED").exists()
    out = w.text()
    assert "\x1b" not in out, "an escape sequence from a file name reached the terminal"


def test_hostile_repository_and_tenant_names_in_hooks(db, dsn, make_repo, tmp_path):
    root = make_repo({"a.py": "x = 1\n"})
    name = "x'; touch PWNED; echo '$(touch PWNED2)"
    tenant = 't"; touch PWNED3 #'
    result = _cli(
        dsn, "hook", "install", str(root), "--name", name, "--tenant", tenant, "--no-embed"
    )
    assert result.returncode == 0, result.stderr
    for hook in ("post-commit", "post-checkout", "post-merge"):
        script = (root / ".git" / "hooks" / hook).read_text()
        assert "PWNED" not in script, "user data in the hook script"
    write_files(root, {"b.py": "y = 2\n"})
    head = commit(root, "b")  # conftest's git runs the hooks too
    poll(
        "the commit indexed under the hostile names",
        lambda: (
            db.execute(
                "select r.indexed_commit from codesift.repositories r"
                " join codesift.tenants t on t.id = r.tenant_id where t.name = %s and r.name = %s",
                (tenant, name),
            ).fetchone()
            == (head,)
        ),
        log=root / ".git" / "codesift-hook.log",
    )
    assert not list(tmp_path.rglob("PWNED*"))


def test_watch_touches_only_its_own_tenant(db, dsn, make_repo, tmp_path):
    other = make_repo({"shared.py": "def globex_version():\n    return 'globex'\n"}, "other")
    result = _cli(dsn, "index", str(other), "--name", "shared", "--tenant", "globex", "--no-embed")
    assert result.returncode == 0, result.stderr
    before = live_paths(db, "shared", "globex")
    root = make_repo({"shared.py": "def acme_version():\n    return 'acme'\n"}, "mine")
    with Watch(
        dsn, root, "--no-embed", "--name", "shared", "--tenant", "acme", log=tmp_path / "w.log"
    ) as w:
        w.wait_for("indexed shared")
        (root / "shared.py").unlink()
        (root / "acme_new.py").write_text("acme_only = 1\n")
        poll(
            "acme's edit",
            lambda: (
                "acme_new.py" in live_paths(db, "shared", "acme")
                and "shared.py" not in live_paths(db, "shared", "acme")
            ),
            log=w.log,
        )
    assert live_paths(db, "shared", "globex") == before


# Each writes the module's name to a marker outside the repository when it is imported.
SHADOWING = {
    "json": ("json.py",),  # the standard library module the CLI imports
    "typer": ("typer.py",),  # a dependency
    "codesift": ("codesift/__init__.py", "codesift/__main__.py"),  # the `-m` package itself
}


def _indexed_commit(db, name: str = "repo") -> str | None:
    row = db.execute(
        "select indexed_commit from codesift.repositories where name = %s", (name,)
    ).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("module", list(SHADOWING))
def test_hooks_never_run_python_modules_from_the_checkout(db, dsn, make_repo, tmp_path, module):
    marker = tmp_path / "pwned"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    root = make_repo({"a.py": "x = 1\n"})
    # a branch that carries the hostile modules, as a cloned repository would
    git(root, "checkout", "-q", "-b", "evil")
    write_files(root, dict.fromkeys(SHADOWING[module], payload))
    evil = commit(root, "evil")
    git(root, "checkout", "-q", "main")
    result = _cli(dsn, "hook", "install", str(root), "--no-embed")
    assert result.returncode == 0, result.stderr
    log = root / ".git" / "codesift-hook.log"

    git(root, "checkout", "-q", "evil")  # post-checkout, from a folder holding the modules
    poll(
        "the checkout indexed (or the marker)",
        lambda: marker.exists() or _indexed_commit(db) == evil,
        log=log,
    )
    assert not marker.exists(), f"the hook imported the checkout's {marker.read_text()!r}"

    write_files(root, {"b.py": "y = 2\n"})
    head = commit(root, "b")  # post-commit
    poll(
        "the commit indexed (or the marker)",
        lambda: marker.exists() or _indexed_commit(db) == head,
        log=log,
    )
    assert not marker.exists(), f"the hook imported the checkout's {marker.read_text()!r}"
    assert "indexed repo @" in log.read_text()


def test_hook_install_never_writes_through_a_committed_symlink(dsn, make_repo, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    root = make_repo({"a.py": "x = 1\n"})
    # husky-style: the hooks folder is committed in the repository, and with it a symlink
    # where `hook install` used to write its temporary file
    hooks = root / ".githooks"
    hooks.mkdir()
    for hook in ("post-commit", "post-checkout", "post-merge"):
        (hooks / f".{hook}.codesift-tmp").symlink_to(victim)
    commit(root, "hooks folder")
    git(root, "config", "core.hooksPath", ".githooks")
    result = _cli(dsn, "hook", "install", str(root), "--no-embed")
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    for hook in ("post-commit", "post-checkout", "post-merge"):
        assert not (hooks / hook).is_symlink()
        assert "codesift hook" in (hooks / hook).read_text()
        assert (hooks / f".{hook}.codesift-tmp").is_symlink()  # left as it was
