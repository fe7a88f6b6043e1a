"""Reading a git repository with git itself: trees, blob contents, history, worktree."""

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .errors import IndexingError

MODE_SYMLINK = "120000"
MODE_SUBMODULE = "160000"


@dataclass(frozen=True)
class TreeEntry:
    path: str
    sha: str
    mode: str
    size: int | None  # None for submodules
    worktree: bool = False  # read from the working tree, not the object store


def _git(root: Path, *args: str, input: bytes | None = None) -> bytes:
    try:
        result = subprocess.run(
            ["git", "-C", str(root), *args], input=input, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise IndexingError("git is not installed (apt-get install git)") from None
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip().splitlines()
        raise IndexingError(f"git {args[0]} failed in {root}: {message[-1] if message else '?'}")
    return result.stdout


def repo_root(path: str | Path) -> Path:
    path = Path(path).expanduser()
    if not path.exists():
        raise IndexingError(f"{path} does not exist")
    if not path.is_dir():
        raise IndexingError(f"{path} is not a directory")
    try:
        out = _git(path, "rev-parse", "--show-toplevel")
    except IndexingError:
        raise IndexingError(
            f"{path} is not a git repository (run `git init` there, or point at a checkout)"
        ) from None
    return Path(out.decode().strip())


def resolve_commit(root: Path, ref: str) -> str:
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except IndexingError:
        raise IndexingError(
            f"unknown ref '{ref}' in {root}"
            " (try a branch, tag or commit; HEAD needs a first commit)"
        ) from None


def head_commit(root: Path) -> str | None:
    try:
        return resolve_commit(root, "HEAD")
    except IndexingError:
        return None


def list_tree(root: Path, commit: str) -> list[TreeEntry]:
    """Every entry of the commit's tree, recursively, with blob sizes."""
    entries = []
    for record in _git(root, "ls-tree", "-r", "-l", "-z", "--full-tree", commit).split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, _kind, sha, size = meta.decode().split()
        entries.append(
            TreeEntry(
                path.decode(errors="surrogateescape"), sha, mode, None if size == "-" else int(size)
            )
        )
    return entries


def last_changed(root: Path, commit: str) -> dict[str, datetime]:
    """When each path last changed, from one pass over the history (newest first)."""
    out = _git(root, "log", "--pretty=format:%x01%ct", "--name-only", "-z", "--no-renames", commit)
    seen: dict[str, datetime] = {}
    for chunk in out.split(b"\x01"):
        if not chunk:
            continue
        stamp, _, names = chunk.partition(b"\n")
        when = datetime.fromtimestamp(int(stamp.strip(b"\0")), tz=UTC)  # merges list no files
        for name in names.split(b"\0"):
            if name:
                seen.setdefault(name.decode(errors="surrogateescape"), when)
    return seen


class BlobReader:
    """Blob contents through one long-lived `git cat-file --batch` process."""

    def __init__(self, root: Path):
        self.proc = subprocess.Popen(
            ["git", "-C", str(root), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def read(self, sha: str) -> bytes:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(sha.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:
            raise IndexingError(f"git cat-file could not read blob {sha}")
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)  # the newline after the contents
        return data

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()

    def __enter__(self) -> "BlobReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def worktree_changes(root: Path) -> tuple[list[TreeEntry], set[str]]:
    """Modified and untracked (non-ignored) files hashed the way git would, and deleted paths."""
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    changed, deleted = [], set()
    for record in out.split(b"\0"):
        if len(record) < 4:
            continue
        path = record[3:].decode(errors="surrogateescape")
        full = root / path
        if full.is_symlink():
            changed.append(TreeEntry(path, "", MODE_SYMLINK, 0, True))
        elif full.is_file():
            changed.append(TreeEntry(path, "", "100644", full.stat().st_size, True))
        elif not full.exists():
            deleted.add(path)
    regular = [f for f in changed if f.mode != MODE_SYMLINK]
    if regular:
        shas = (
            _git(
                root,
                "hash-object",
                "--stdin-paths",
                input="".join(f"{f.path}\n" for f in regular).encode(),
            )
            .decode()
            .split()
        )
        hashed = {f.path: sha for f, sha in zip(regular, shas, strict=True)}
        changed = [TreeEntry(f.path, hashed.get(f.path, ""), f.mode, f.size, True) for f in changed]
    return changed, deleted


def read_worktree_file(root: Path, path: str) -> bytes:
    with open(os.path.join(root, path), "rb") as handle:
        return handle.read()
