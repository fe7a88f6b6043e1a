"""`codesift hook install|uninstall`: re-index on commit, checkout and merge.

The hooks (post-commit, post-checkout, post-merge) start `codesift hook run` detached,
with no terminal and every output closed, and exit at once with the status of the
user's own hook, if one was there: the index never blocks or fails the git command.
A user's hook is not overwritten: it is renamed to NAME.codesift-chained and our hook
runs it first, with the same arguments. Uninstall removes only our hooks and puts
the user's back.

The hooks never run code from the repository: git starts them in the work tree, which
may hold a committed json.py or codesift/ package, so they start the loader's interpreter
isolated (`python -I`: no current folder on sys.path, no PYTHON* variables) from `/`,
with the work tree passed as --root; `hook run` upgrades a hook written before that.

The hook scripts hold no user data (only the loader's interpreter, quoted): the tenant,
the repository name and the DSN are in a JSON file in the git directory, read by
`hook run`. `hook run` takes a lock in the git directory; a run that finds it taken
leaves a note so that the running one indexes once more, so commits made during an
index are never missed and runs never pile up. Its output goes to
.git/codesift-hook.log (kept under LOG_BYTES).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from . import db, git, tenants
from .errors import CodesiftError, IndexingError

HOOKS = ("post-commit", "post-checkout", "post-merge")
MARKER = "# codesift hook: written by `codesift hook install`"
CHAINED = ".codesift-chained"
CONFIG = "codesift-hook.json"
LOCK = "codesift-hook.lock"
PENDING = "codesift-hook.pending"
LOG = "codesift-hook.log"
LOG_BYTES = 1024 * 1024
MAX_RERUNS = 20  # a loop of commits during indexing still ends
LOCK_TIMEOUT = 300.0  # seconds a background run waits for another loader on the repository

SCRIPT = """#!/bin/sh
{marker}
# Starts an incremental index in the background and returns at once: it never blocks or
# fails the git command (log: $GIT_DIR/codesift-hook.log). `codesift hook uninstall`
# removes it and restores the hook that was here before, if any.
status=0
if [ -x "$0{chained}" ]; then
    "$0{chained}" "$@" || status=$?
fi
python={python}
if [ -x "$python" ]; then
    # isolated, from /: nothing in the repository (a committed json.py) is ever imported
    (root=$PWD; cd / && "$python" {isolated} hook run --root "$root" {hook} "$@" \
        </dev/null >/dev/null 2>&1 &)
fi
exit $status
"""
ISOLATED = "-I -m codesift"  # what a hook written before the hooks ran isolated lacks


class HookError(CodesiftError):
    pass


@dataclass
class HookConfig:
    tenant: str = "default"
    name: str | None = None
    root: str = ""
    worktree: bool = False
    embed: bool = True
    dsn: str | None = None


def _git_path(root: Path, what: str) -> Path:
    """A path in the repository's git directory (`git rev-parse --git-path`), absolute."""
    out = git._git(root, "rev-parse", "--git-path", what).rstrip(b"\n")
    path = Path(os.fsdecode(out))
    return path if path.is_absolute() else root / path


def _common_dir(root: Path) -> Path:
    out = git._git(root, "rev-parse", "--git-common-dir").rstrip(b"\n")
    path = Path(os.fsdecode(out))
    return (path if path.is_absolute() else root / path).resolve()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def hooks_dir(root: Path) -> Path:
    """Where git runs this repository's hooks from; refused when core.hooksPath points
    outside the repository (a folder shared by other repositories is not ours to edit)."""
    folder = _git_path(root, "hooks")
    real = folder.resolve()
    if not (_inside(real, root.resolve()) or _inside(real, _common_dir(root))):
        raise HookError(
            f"this repository's hooks folder is {folder} (core.hooksPath), outside the "
            "repository: it may be shared with other repositories, so codesift does not "
            'edit it. Add `codesift hook run <hook> "$@"` to those hooks yourself, or unset '
            "core.hooksPath."
        )
    return folder


def _is_ours(hook: Path) -> bool:
    if hook.is_symlink() or not hook.is_file():
        return False
    with open(hook, "rb") as f:
        return MARKER.encode() in f.read(512)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    """Replace path through a new file of a random name in the same folder (O_EXCL,
    O_NOFOLLOW: a hooks folder committed in the repository may hold a symlink under any
    fixed name), renamed relative to the folder's descriptor."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        tmp = f".{path.name}.{secrets.token_hex(8)}.codesift-tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(tmp, flags, 0o600, dir_fd=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                f.write(text)
                os.fchmod(f.fileno(), mode)
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def _script(hook: str) -> str:
    return SCRIPT.format(
        marker=MARKER,
        chained=CHAINED,
        python=shlex.quote(sys.executable),
        isolated=ISOLATED,
        hook=hook,
    )


def _check_isolated() -> None:
    """The hooks run this interpreter with -I, which ignores PYTHONPATH and the user's
    site-packages: refuse to install hooks that could not import codesift that way."""
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-c", "import codesift.cli"],
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )
        failed = probe.returncode != 0
        why = probe.stderr.decode(errors="replace").strip().splitlines()[-1:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed, why = True, [str(exc)]
    if failed:
        raise HookError(
            f"the hooks run `{sys.executable} -I -m codesift` (isolated, so that nothing in "
            f"the repository is imported), and it cannot import codesift that way "
            f"({' '.join(why) or 'no message'}): install codesift in a virtual environment "
            "rather than through PYTHONPATH or `pip install --user`"
        )


def install(
    path: str | Path,
    tenant: str = "default",
    name: str | None = None,
    worktree: bool = False,
    embed: bool = True,
    allow_password: bool = False,
) -> list[str]:
    """Install (or refresh) the three hooks; returns what was done, one line each."""
    root = git.repo_root(path)
    folder = hooks_dir(root)
    _check_isolated()
    folder.mkdir(parents=True, exist_ok=True)
    current = db.current_dsn()
    dsn: str | None = current
    notes = []
    if conninfo_to_dict(current).get("password") and not allow_password:
        dsn = None
        notes.append(
            "the DSN has a password: not written to the git directory; the hooks use "
            "CODESIFT_DSN from git's environment (or ~/.pgpass), or pass --allow-password"
        )
    for hook in HOOKS:
        target = folder / hook
        chained = folder / (hook + CHAINED)
        if os.path.lexists(target) and not _is_ours(target):
            if os.path.lexists(chained):
                raise HookError(
                    f"{target} is not codesift's and {chained.name} already exists: "
                    "move one of them away, then install again"
                )
            os.rename(target, chained)
            notes.append(f"{hook}: your hook is kept and runs first ({chained.name})")
        _write_atomic(target, _script(hook), 0o755)
        notes.append(f"installed {target}")
    config = HookConfig(tenant, name, str(root), worktree, embed, dsn)
    _write_atomic(_git_path(root, CONFIG), json.dumps(config.__dict__, indent=2) + "\n", 0o600)
    return notes


def uninstall(path: str | Path) -> list[str]:
    """Remove our hooks (restoring the user's), the configuration, lock and log."""
    root = git.repo_root(path)
    folder = _git_path(root, "hooks")
    notes = []
    for hook in HOOKS:
        target = folder / hook
        chained = folder / (hook + CHAINED)
        if _is_ours(target):
            target.unlink()
            notes.append(f"removed {target}")
            if os.path.lexists(chained):
                os.rename(chained, target)
                notes.append(f"{hook}: your hook is back in place")
        elif os.path.lexists(target):
            notes.append(f"{hook}: not codesift's, left as it is")
    for what in (CONFIG, LOCK, PENDING, LOG, LOG + ".1"):
        with contextlib.suppress(FileNotFoundError):
            _git_path(root, what).unlink()
    if not notes:
        notes.append("no codesift hooks were installed")
    return notes


def _read_config(root: Path) -> HookConfig:
    try:
        raw = json.loads(_git_path(root, CONFIG).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HookError("codesift hooks are not installed here (codesift hook install)") from None
    except (OSError, ValueError) as exc:
        raise HookError(f"unreadable {CONFIG}: {exc}") from None
    known = HookConfig.__dataclass_fields__
    return HookConfig(**{k: v for k, v in raw.items() if k in known})


def _open_log(root: Path) -> None:
    """stdout and stderr to the log in the git directory (the previous one kept as .1)."""
    log = _git_path(root, LOG)
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_BYTES:
            os.replace(log, log.with_name(LOG + ".1"))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


# what git exports to a hook that must not outlive it (a temporary index, a relative GIT_DIR)
_HOOK_ENVIRONMENT = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX", "GIT_EDITOR")


def _upgrade_hooks(root: Path) -> None:
    """Rewrite our hooks written before they ran isolated (they ran `python -m codesift`
    from the work tree, importing whatever the checkout holds), with this interpreter."""
    try:
        folder = hooks_dir(root)
    except CodesiftError:
        return  # a shared hooks folder: never ours (install refuses it)
    try:
        for hook in HOOKS:
            target = folder / hook
            if _is_ours(target) and ISOLATED not in target.read_text(encoding="utf-8"):
                _write_atomic(target, _script(hook), 0o755)
                print(f"upgraded {target}: it now runs codesift isolated", flush=True)
    except (OSError, UnicodeDecodeError, CodesiftError) as exc:
        print(f"could not upgrade the hooks ({exc}): run `codesift hook install`", flush=True)


def run(hook: str, args: list[str], detach: bool = True, root: str | None = None) -> int:
    """`codesift hook run`: the hooks' background index of the work tree `root` (default:
    the current folder, where hooks written before --root ran it). Returns an exit
    status; every problem goes to the log, none to git."""
    if hook not in HOOKS:
        raise HookError(f"unknown hook '{hook}': one of {', '.join(HOOKS)}")
    if hook == "post-checkout" and args[2:3] == ["0"]:
        return 0  # a file checkout: HEAD did not move
    if detach:
        with contextlib.suppress(OSError):
            os.setsid()  # no terminal's Ctrl-C reaches it
    start = Path(root) if root is not None else Path.cwd()
    for name in _HOOK_ENVIRONMENT:
        os.environ.pop(name, None)
    work_tree = git.repo_root(start)
    os.chdir("/")  # nothing below (a library loading a relative path) looks in the checkout
    if detach:
        _open_log(work_tree)
    _upgrade_hooks(work_tree)
    return _run_locked(work_tree, hook)


def _run_locked(root: Path, hook: str) -> int:
    pending = _git_path(root, PENDING)
    pending.touch()
    lock_file = os.open(_git_path(root, LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    status = 0
    try:
        while True:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0  # the running one sees the note and indexes again
            try:
                for _ in range(MAX_RERUNS):
                    if not pending.exists():
                        break
                    pending.unlink(missing_ok=True)
                    status = _index_once(root, hook)
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)
            if not pending.exists():
                return status
    finally:
        os.close(lock_file)


def _index_once(root: Path, hook: str) -> int:
    from .embedder import embed_pending
    from .indexer import index_repository

    started = time.monotonic()
    stamp = f"{datetime.now():%Y-%m-%d %H:%M:%S} {hook}"
    try:
        config = _read_config(root)
        name = config.name if Path(config.root) == root else None
        dsn = os.environ.get("CODESIFT_DSN") or config.dsn
        with db.connect(dsn, autocommit=True) as conn, db.acting_as_loader(conn):
            s = index_repository(
                conn,
                root,
                name=name,
                tenant=config.tenant,
                worktree=config.worktree,
                embed=False,
                show_progress=False,
                lock_timeout=LOCK_TIMEOUT,
            )
            embedded = ""
            if config.embed:
                try:
                    tenant_id = tenants.tenant_id(conn, config.tenant)
                except tenants.UnknownTenant:
                    raise IndexingError(f"tenant '{config.tenant}' disappeared") from None
                e = embed_pending(conn, tenant_id, False)
                embedded = f", embedded {e.symbols} symbols + {e.blobs} files"
    except (CodesiftError, psycopg.Error) as exc:
        print(f"{stamp}: error: {' '.join(str(exc).split())}", flush=True)
        return 1
    print(
        f"{stamp}: indexed {s.repository} @ {s.commit[:12]}: {s.files} files,"
        f" {s.new_blobs} new blobs, {s.removed_paths} paths removed{embedded}"
        f" ({time.monotonic() - started:.1f} s)",
        flush=True,
    )
    return 0
