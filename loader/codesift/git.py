"""Reading a git repository with git itself: trees, blob contents, history, worktree.

Every git output is NUL-framed (file names may hold any byte but NUL), names are
decoded with surrogateescape (the indexer decides which can be stored), and the
working tree is read only through paths that stay inside the repository: every
component is opened relative to its parent without following symlinks.
"""

import errno
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .errors import IndexingError

MODE_SYMLINK = "120000"
MODE_SUBMODULE = "160000"

OUTSIDE = "path leads outside the repository (symlinked folder)"


@dataclass(frozen=True)
class TreeEntry:
    path: str
    sha: str
    mode: str
    size: int | None  # None for submodules
    worktree: bool = False  # read from the working tree, not the object store


class UnsafePath(Exception):
    """A working-tree path that is not a regular file reached without symlinks."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


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


def decode_name(raw: bytes) -> str:
    """A file name as git wrote it; undecodable bytes survive as surrogates."""
    return raw.decode("utf-8", errors="surrogateescape")


def encode_name(path: str) -> bytes:
    return path.encode("utf-8", errors="surrogateescape")


def blob_sha(data: bytes) -> str:
    """The git object id of a blob with these contents."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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
    return Path(os.fsdecode(out[:-1] if out.endswith(b"\n") else out))


def resolve_commit(root: Path, ref: str) -> str:
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except IndexingError:
        raise IndexingError(
            f"unknown ref '{ref}' in {root}"
            " (try a branch, tag or commit; HEAD needs a first commit)"
        ) from None


def local_branches(root: Path) -> list[str]:
    """The short names of the repository's local branches."""
    out = _git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads")
    return [decode_name(line) for line in out.splitlines() if line]


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
        entries.append(TreeEntry(decode_name(path), sha, mode, None if size == "-" else int(size)))
    return entries


def file_history(root: Path, commit: str) -> list[tuple[datetime, list[str]]]:
    """Every commit reachable from commit, newest first: its committer time and the paths
    it changed (none for a merge), from one pass over the history.

    With -z and the format NUL + committer time, the output is, per commit,
    `\\0<time>\\0` followed (unless the commit lists no files, e.g. a merge) by a
    newline and each name NUL-terminated. Names are never empty, so an empty
    field always starts a commit, whatever bytes the names hold.
    """
    out = _git(
        root,
        "log",
        "-z",
        "--format=%x00%ct",
        "--name-only",
        "--no-renames",
        "--no-show-signature",
        "--no-color",
        commit,
    )
    history: list[tuple[datetime, list[str]]] = []
    fields = out.split(b"\0")
    first = False
    i = 0
    while i < len(fields):
        field = fields[i]
        if not field:  # a commit starts: its time is the next field
            i += 1
            if i < len(fields) and fields[i]:
                history.append((datetime.fromtimestamp(int(fields[i]), tz=UTC), []))
                first = True
        elif history:
            if first and field.startswith(b"\n"):
                field = field[1:]
            first = False
            if field:
                history[-1][1].append(decode_name(field))
        i += 1
    return history


def last_changed(history: list[tuple[datetime, list[str]]]) -> dict[str, datetime]:
    """When each path last changed, from file_history (newest first)."""
    seen: dict[str, datetime] = {}
    for when, paths in history:
        for path in paths:
            seen.setdefault(path, when)
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


def _parent_fd(root: Path, path: str) -> tuple[int, bytes]:
    """An open descriptor of the path's folder, reached from the root without
    following any symlink, and the last component. Raises UnsafePath for an
    escaping or symlinked path, FileNotFoundError when a folder is missing."""
    parts = encode_name(path).split(b"/")
    if any(p in (b"", b".", b"..") for p in parts):
        raise UnsafePath("path leads outside the repository (empty, '.' or '..' component)")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            st = os.lstat(part, dir_fd=fd)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePath(OUTSIDE)
            if not stat.S_ISDIR(st.st_mode):
                raise FileNotFoundError(errno.ENOENT, "not a folder", path)
            try:
                child = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # replaced since the lstat
                    raise UnsafePath(OUTSIDE) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def worktree_lstat(root: Path, path: str) -> os.stat_result | None:
    """lstat of a working-tree path reached without symlinks; None when missing."""
    try:
        fd, name = _parent_fd(root, path)
    except FileNotFoundError:
        return None
    try:
        return os.lstat(name, dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    finally:
        os.close(fd)


def read_worktree_file(root: Path, path: str, limit: int | None = None) -> bytes:
    """A regular file's contents (at most `limit` bytes read), never through a symlink,
    a FIFO or a device. Raises UnsafePath or OSError."""
    fd, name = _parent_fd(root, path)
    try:
        try:
            handle = os.open(
                name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                dir_fd=fd,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath("symlink") from None
            raise
    finally:
        os.close(fd)
    with os.fdopen(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise UnsafePath("not a regular file")
        return file.read() if limit is None else file.read(limit + 1)


def worktree_changes(
    root: Path, max_bytes: int | None = None
) -> tuple[list[TreeEntry], set[str], dict[str, str]]:
    """Modified and untracked (non-ignored) files hashed the way git hashes a blob
    (no filters: the sha is that of the bytes the loader stores), deleted paths, and
    paths that cannot be read safely with the reason. Files over max_bytes are
    listed with their size and no sha (the indexer skips them)."""
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    changed: list[TreeEntry] = []
    deleted: set[str] = set()
    unsafe: dict[str, str] = {}
    for record in out.split(b"\0"):
        if len(record) < 4:
            continue
        path = decode_name(record[3:])
        try:
            st = worktree_lstat(root, path)
            if st is None:
                deleted.add(path)
            elif stat.S_ISLNK(st.st_mode):
                changed.append(TreeEntry(path, "", MODE_SYMLINK, 0, True))
            elif stat.S_ISREG(st.st_mode):
                sha = ""
                if max_bytes is None or st.st_size <= max_bytes:
                    sha = blob_sha(read_worktree_file(root, path))
                changed.append(TreeEntry(path, sha, "100644", st.st_size, True))
            elif not stat.S_ISDIR(st.st_mode):  # a folder (e.g. a submodule) keeps its entry
                unsafe[path] = "not a regular file"
        except UnsafePath as exc:
            unsafe[path] = exc.reason
        except OSError as exc:
            unsafe[path] = f"unreadable ({exc.strerror})"
    return changed, deleted, unsafe
