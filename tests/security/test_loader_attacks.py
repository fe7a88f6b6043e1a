"""Attacks through the loader: repositories with awkward names and contents, a
--worktree that points outside the repository, and other roles stalling a loader.

Each test uses real temporary git repositories and the real database; two tenants
index the same repository name with overlapping content.
"""

import hashlib
import os
import random
import subprocess
from pathlib import Path

import psycopg
import pytest
from codesift import git as gitmod
from codesift.errors import IndexingError
from codesift.indexer import index_repository

from tests.conftest import commit, git, write_files

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
TENANTS = ("acme", "globex")

NOT_UTF8 = "file name is not valid UTF-8"
CONTROL = "file name has control characters"
OUTSIDE = "path leads outside the repository (symlinked folder)"


def _index(dsn, path, **kw):
    with psycopg.connect(dsn) as conn:
        return index_repository(conn, path, show_progress=False, embed=False, **kw)


def _cli(dsn, *args, timeout=120):
    return subprocess.run(
        [str(CODESIFT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn},
        timeout=timeout,
    )


def _live(db, tenant="acme", repo="repo"):
    return dict(
        db.execute(
            "select f.path, f.blob_sha from files f"
            " join repositories r on r.id = f.repository_id"
            " join tenants t on t.id = r.tenant_id"
            " where t.name = %s and r.name = %s and f.live",
            (tenant, repo),
        ).fetchall()
    )


def _write_bytes(root: Path, name: bytes, data: bytes) -> None:
    with open(os.path.join(os.fsencode(root), name), "wb") as handle:
        handle.write(data)


def _commit_at(root: Path, message: str, epoch: int) -> None:
    """A commit with a known committer time (what last_changed reads)."""
    env = {
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": f"@{epoch} +0000",
        "GIT_COMMITTER_DATE": f"@{epoch} +0000",
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, env=env, check=True)


def test_weird_tracked_names_are_counted_skips_and_history_still_parses(db, dsn, make_repo):
    root = make_repo({"ok.py": "def fine():\n    return 1\n", "1700000000": "digits\n"})
    _write_bytes(root, b"caf\xe9.py", b"def latin_name():\n    return 1\n")
    _write_bytes(root, b"ctl\x01name.py", b"def control_name():\n    return 1\n")
    _write_bytes(root, b"new\nline.py", b"def newline_name():\n    return 1\n")
    _write_bytes(root, b"\nleading.py", b"x = 1\n")
    write_files(root, {"pages/[id].py": "def page():\n    return 1\n"})
    _commit_at(root, "weird names", 1_800_000_000)
    # a merge (lists no files in git log) between the weird names and a later change
    git(root, "checkout", "-q", "-b", "side")
    write_files(root, {"side.py": "def side():\n    return 2\n"})
    _commit_at(root, "side", 1_800_000_100)
    git(root, "checkout", "-q", "main")
    write_files(root, {"ok.py": "def fine():\n    return 2\n"})
    _commit_at(root, "main moves", 1_800_000_200)
    git(root, "merge", "-q", "--no-edit", "side")

    changed = gitmod.last_changed(gitmod.file_history(root, gitmod.resolve_commit(root, "HEAD")))
    assert changed["new\nline.py"].timestamp() == 1_800_000_000
    assert changed["\nleading.py"].timestamp() == 1_800_000_000
    assert changed["ctl\x01name.py"].timestamp() == 1_800_000_000
    assert changed["caf\udce9.py"].timestamp() == 1_800_000_000
    assert changed["ok.py"].timestamp() == 1_800_000_200
    assert changed["side.py"].timestamp() == 1_800_000_100

    for tenant in TENANTS:
        summary = _index(dsn, root, tenant=tenant)
        assert summary.skipped[NOT_UTF8] == 1
        assert summary.skipped[CONTROL] == 3
        assert set(_live(db, tenant)) == {"ok.py", "1700000000", "pages/[id].py", "side.py"}
    stamps = dict(
        db.execute(
            "select path, extract(epoch from last_changed)::bigint from files f"
            " join tenants t on t.id = f.tenant_id where t.name = 'acme'"
        ).fetchall()
    )
    assert stamps == {
        "ok.py": 1_800_000_200,
        "1700000000": stamps["1700000000"],  # the first commit's time
        "pages/[id].py": 1_800_000_000,
        "side.py": 1_800_000_100,
    }
    # the CLI (a tenant that has not indexed this commit): the same skips, one line each,
    # and no traceback
    result = _cli(dsn, "index", str(root), "--tenant", "initech", "--no-embed")
    assert result.returncode == 0, result.stderr
    assert f"skipped 3 file(s): {CONTROL}" in result.stderr
    assert f"skipped 1 file(s): {NOT_UTF8}" in result.stderr
    assert "Traceback" not in result.stderr


def test_worktree_weird_untracked_names(db, dsn, make_repo):
    root = make_repo({"ok.py": "def fine():\n    return 1\n"})
    _write_bytes(root, b"untracked\nnewline.py", b"def sneaky():\n    return 1\n")
    _write_bytes(root, b"untracked\x01.py", b"def sneaky2():\n    return 1\n")
    _write_bytes(root, b"untracked\xff.py", b"def sneaky3():\n    return 1\n")
    write_files(root, {"fresh.py": "def fresh():\n    return 1\n"})
    for tenant in TENANTS:
        summary = _index(dsn, root, tenant=tenant, worktree=True)
        assert summary.skipped[CONTROL] == 2
        assert summary.skipped[NOT_UTF8] == 1
        live = _live(db, tenant)
        assert set(live) == {"ok.py", "fresh.py"}
        assert live["fresh.py"] == git(root, "hash-object", "fresh.py").strip()


def test_worktree_never_reads_through_a_symlinked_folder(db, dsn, make_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.py").write_text("SECRET_TOKEN = 'outside-the-repo'\n")
    (outside / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- outside\n")
    root = make_repo(
        {"ok.py": "def fine():\n    return 1\n", "conf/settings.py": "DEBUG = False\n"}
    )
    # the tracked folder is replaced by a link out of the repository (ln -s ~/.ssh conf)
    (root / "conf" / "settings.py").unlink()
    (root / "conf").rmdir()
    os.symlink(outside, root / "conf")
    os.symlink(outside, root / "keys")  # an untracked link to a folder
    for tenant in TENANTS:
        summary = _index(dsn, root, tenant=tenant, worktree=True)
        assert summary.skipped[OUTSIDE] == 1  # conf/settings.py
        assert summary.skipped["symlink"] == 2  # conf and keys, as links
        assert set(_live(db, tenant)) == {"ok.py"}
    leaked = db.execute(
        "select count(*) from blobs where content like '%outside%' or content like '%SECRET_TOKEN%'"
    ).fetchone()[0]
    assert leaked == 0
    # the reader itself refuses any path through a link or out of the repository
    for path in ("conf/id_rsa", "conf/settings.py", "keys/id_rsa", "../outside/id_rsa"):
        with pytest.raises(gitmod.UnsafePath):
            gitmod.read_worktree_file(root, path)
    with pytest.raises(gitmod.UnsafePath):
        gitmod.read_worktree_file(root, "conf")  # the link itself


def test_worktree_paths_git_reports_through_a_link_are_refused(db, dsn, make_repo, monkeypatch):
    """A folder swapped for a link after `git status` listed a file in it: the
    reader still refuses it (every component is opened without following links)."""
    outside = make_repo({"id_rsa": "PRIVATE outside\n"}, name="outside")
    root = make_repo({"ok.py": "def fine():\n    return 1\n"})
    os.symlink(outside, root / "conf")
    real_git = gitmod._git

    def git_listing_a_file_behind_the_link(where, *args, **kw):
        if args[0] == "status":
            return b"?? conf/id_rsa\0"
        return real_git(where, *args, **kw)

    monkeypatch.setattr(gitmod, "_git", git_listing_a_file_behind_the_link)
    summary = _index(dsn, root, tenant="acme", worktree=True)
    assert summary.skipped[OUTSIDE] == 1
    assert set(_live(db)) == {"ok.py"}
    assert (
        db.execute("select count(*) from blobs where content like '%PRIVATE%'").fetchone()[0] == 0
    )


def test_lfs_pointers_and_mostly_binary_files_are_skipped(db, dsn, make_repo):
    noise = bytes(b for b in random.Random(7).randbytes(4096) if b != 0)
    root = make_repo(
        {
            "ok.py": "def fine():\n    return 1\n",
            "latin1.py": "",
            "model.bin": (
                "version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                "size 12345\n"
            ),
            "blob.dat": "",
        }
    )
    (root / "blob.dat").write_bytes(noise)
    (root / "latin1.py").write_bytes("# caf\xe9\ndef ol\xe9():\n    return 1\n".encode("latin-1"))
    commit(root, "lfs and noise")
    for tenant in TENANTS:
        summary = _index(dsn, root, tenant=tenant)
        assert summary.skipped["git LFS pointer"] == 1
        assert summary.skipped["binary (mostly undecodable)"] == 1
        assert set(_live(db, tenant)) == {"ok.py", "latin1.py"}  # a few bad bytes: text
    assert (
        db.execute("select count(*) from blobs where content like 'version https%'").fetchone()[0]
        == 0
    )


def test_a_database_error_is_one_line_naming_the_file(db, dsn, make_repo):
    db.execute(
        """
        create function codesift.refuse_marked() returns trigger language plpgsql as $$
        begin
            if new.content like '%REFUSE_ME%' then
                raise exception 'refused by a test trigger';
            end if;
            return new;
        end $$;
        create trigger refuse_marked before insert on codesift.blobs
        for each row execute function codesift.refuse_marked();
        """
    )
    files = {f"mod{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)}
    root = make_repo({**files, "bad.py": "# REFUSE_ME\n"})
    with pytest.raises(IndexingError, match=r"refused file 'bad\.py': refused by a test trigger"):
        _index(dsn, root, tenant="acme")
    result = _cli(dsn, "index", str(root), "--tenant", "globex", "--no-embed")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == "error: the database refused file 'bad.py': refused by a test trigger"
    # nothing half-recorded: the tree is written only after every blob is in
    assert db.execute("select count(*) from files").fetchone()[0] == 0


def _repo_row(db, tenant, name="repo"):
    return db.execute(
        "select r.id from repositories r join tenants t on t.id = r.tenant_id"
        " where t.name = %s and r.name = %s",
        (tenant, name),
    ).fetchone()[0]


def test_a_held_repository_lock_fails_cleanly_after_the_timeout(db, dsn, make_repo):
    root = make_repo({"a.py": "def shared():\n    return 1\n"})
    for tenant in TENANTS:
        _index(dsn, root, tenant=tenant)
    write_files(root, {"b.py": "def later():\n    return 2\n"})
    commit(root, "later")
    holder = psycopg.connect(dsn)  # another loader's transaction, mid-run
    try:
        holder.execute(
            "select id from codesift.repositories where id = %s for no key update",
            (_repo_row(db, "acme"),),
        )
        with pytest.raises(IndexingError, match=r"another loader is indexing 'repo'; waited"):
            _index(dsn, root, tenant="acme", lock_timeout=0.2)
        result = _cli(
            dsn, "index", str(root), "--tenant", "acme", "--no-embed", "--lock-timeout", "0.2"
        )
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error: another loader is indexing 'repo'; waited ")
        # the other tenant's repository of the same name is not held up
        assert set(_index(dsn, root, tenant="globex").skipped) == set()
        assert set(_live(db, "globex")) == {"a.py", "b.py"}
        assert set(_live(db, "acme")) == {"a.py"}  # untouched while refused
    finally:
        holder.close()
    _index(dsn, root, tenant="acme", lock_timeout=0.2)
    assert set(_live(db, "acme")) == {"a.py", "b.py"}


def test_the_lock_is_the_row_and_foreign_key_checks_do_not_block_it(db, dsn, make_repo):
    """FOR NO KEY UPDATE: a transaction holding KEY SHARE on the repository row (what
    an insert referencing it takes) does not stall the loader, and neither does a
    plain reader."""
    root = make_repo({"a.py": "def shared():\n    return 1\n"})
    _index(dsn, root, tenant="acme")
    holder = psycopg.connect(dsn)
    try:
        holder.execute(
            "select id from codesift.repositories where id = %s for key share",
            (_repo_row(db, "acme"),),
        )
        write_files(root, {"b.py": "def later():\n    return 2\n"})
        commit(root, "later")
        _index(dsn, root, tenant="acme", lock_timeout=0.2)
    finally:
        holder.close()
    assert set(_live(db, "acme")) == {"a.py", "b.py"}


def test_an_advisory_lock_on_the_old_key_stalls_nothing(db, dsn, make_repo, app_connect):
    root = make_repo({"a.py": "def shared():\n    return 1\n"})
    for tenant in TENANTS:
        _index(dsn, root, tenant=tenant)
    write_files(root, {"b.py": "def later():\n    return 2\n"})
    commit(root, "later")
    tenant_ids = dict(db.execute("select name, id from tenants").fetchall())
    attacker = app_connect()  # the application role, any tenant or none
    for tenant in TENANTS:
        digest = hashlib.sha256(f"codesift-index:{tenant_ids[tenant]}:repo".encode()).digest()
        key = int.from_bytes(digest[:8], "big", signed=True)
        attacker.execute("select pg_advisory_lock(%s)", (key,))
    for tenant in TENANTS:
        # bounded by the subprocess timeout: the old loader waited here forever
        result = _cli(dsn, "index", str(root), "--tenant", tenant, "--no-embed", timeout=60)
        assert result.returncode == 0, result.stderr
        assert set(_live(db, tenant)) == {"a.py", "b.py"}
