"""`codesift watch`: keep a repository's index following its working tree.

It starts watching, then runs one incremental index of HEAD plus the working tree (what
`codesift index --worktree` does). Then, for each debounced batch of file events:

1. The changed paths, as git sees them: `git ls-files --cached --others
   --exclude-standard` over just those paths (a new folder: every file in it), so
   what .gitignore ignores is never read and tracked files are kept.
2. The same skip rules as `index`: names the database cannot hold, symlinks, files
   over --max-bytes, the defaults and .codesiftignore, binary and generated content.
   Every file is read through git.read_worktree_file: never through a symlink, never
   outside the repository.
3. Only blobs the tenant does not have are pushed (the database extracts them).
4. One transaction, holding the repository's lock: the changed paths point at their
   blobs, the paths that are gone (deleted, renamed away, now skipped) stop being live,
   edges are resolved. A query sees the tree before the batch or after it, never between.
5. The tenant's embedding backlog is drained (embed_pending), unless --no-embed.

HEAD moving (commit, checkout, merge), a .gitignore or .codesiftignore changing, or a
batch too large re-runs the full incremental index instead. A lost database is retried
with backoff; once back, the full incremental index runs again (events may have been
missed while it was away).
"""

from __future__ import annotations

import os
import signal
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import psycopg.errors
import watchfiles
from watchfiles._rust_notify import WatchfilesRustInternalError

from . import db, git, ignore, indexer
from .embedder import EmbedStats, embed_pending
from .errors import CodesiftError, ConnectionFailed, IndexingError

DEFAULT_DEBOUNCE_MS = 200  # quiet time after the last event before a batch is indexed
MAX_GROUP_MS = 5000  # a stream of events is still indexed at least this often
HEAD_CHECK_MS = 2000  # HEAD is also checked this often (a commit may touch no watched file)
FULL_SYNC_PATHS = 1000  # a batch larger than this (a checkout) re-runs the full index
BACKOFF = (0.5, 1, 2, 4, 8, 15)  # seconds between reconnection attempts (the last repeats)
GIT_EVENTS = (".git/HEAD", ".git/packed-refs")  # and .git/refs/...: HEAD may have moved
# a package's __init__.py may say it is vendored (ignore.vendored_packages)
RULE_FILES = (".gitignore", ignore.IGNORE_FILE, ignore.INIT_FILE)
MAX_RULES_BYTES = 1024 * 1024  # a .codesiftignore is read up to this


@dataclass
class WatchOptions:
    name: str | None = None
    tenant: str = "default"
    max_bytes: int = indexer.DEFAULT_MAX_BYTES
    embed: bool = True
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    lock_timeout: float = indexer.DEFAULT_LOCK_TIMEOUT
    dsn: str | None = None


@dataclass
class BatchSummary:
    """What one batch changed."""

    paths: int = 0  # paths in the events
    updated: int = 0  # live paths that now point at a (new or other) blob
    removed: int = 0  # paths that stopped being live
    new_blobs: int = 0
    new_symbols: int = 0
    edges: int = 0  # edges recomputed (all of the repository's, or the changed files')
    full: bool = False  # the full incremental index ran instead
    seconds: float = 0.0
    skipped: ignore.Skipped = field(default_factory=ignore.Skipped)
    embedded: EmbedStats = field(default_factory=EmbedStats)


def _ls_files(root: Path, paths: Iterable[str]) -> list[str]:
    """Of these paths (files or folders), the files git would index: tracked ones and
    untracked ones it does not ignore. Pathspecs are literal (no globs, no magic)."""
    specs = [f":(literal){p}" for p in sorted(paths)]
    if not specs:
        return []
    out = git._git(
        root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *specs
    )
    # a nested repository is listed as its folder ("sub/"): never read into
    return sorted({git.decode_name(p) for p in out.split(b"\0") if p and not p.endswith(b"/")})


def _worktree_rules(root: Path) -> ignore.Rules:
    """The defaults, every .codesiftignore and the vendored packages of the working tree."""

    def read(path: str, limit: int | None) -> bytes | None:
        try:
            data = git.read_worktree_file(root, path, limit=limit or MAX_RULES_BYTES)
        except (git.UnsafePath, OSError):
            return None
        return None if limit is not None and len(data) > limit else data

    return ignore.tree_rules(_ls_files(root, [""]), read)


class Watcher:
    """The index of one repository following its working tree."""

    def __init__(
        self, path: str | Path, options: WatchOptions, report: Callable[[str], None] = print
    ) -> None:
        self.root = git.repo_root(path)
        self.options = options
        self.report = report
        self.name = options.name or self.root.name
        self.conn: psycopg.Connection | None = None
        self.lock_conn: psycopg.Connection | None = None
        self.tenant_id = 0
        self.repo_id = 0
        self.head: str | None = None
        self.rules = ignore.Rules.load({})
        self.synced = False  # the first full incremental index has run

    # connection ----------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.close()
        conn = db.connect(self.options.dsn, autocommit=True)
        try:
            # like db.acting_as_loader, for the life of the connection
            row = conn.execute("select current_setting('is_superuser') = 'on'").fetchone()
            if row is not None and row[0]:
                conn.execute(f"set role {db.LOADER_ROLE}")
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        return conn

    def close(self) -> None:
        self._drop_lock()
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _database_lost(self) -> bool:
        if self.conn is None or self.conn.closed or self.conn.broken:
            return True
        try:
            self.conn.execute("select 1")
        except psycopg.Error:
            return True
        return False

    def _lock(self) -> psycopg.Connection:
        """The second connection (kept: PL/Python warms up once per backend) inside a
        transaction that holds the repository's row lock, as `index` takes it."""
        conn = self._connect()
        if self.lock_conn is None or self.lock_conn.closed or self.lock_conn.broken:
            self.lock_conn = indexer._second_connection(conn, self.tenant_id)
        lock = self.lock_conn
        lock.execute(
            "select set_config('lock_timeout', %s, true)",
            (f"{max(1, round(self.options.lock_timeout * 1000))}ms",),
        )
        try:
            row = lock.execute(
                indexer.LOCK_ROW + " for no key update", (self.tenant_id, self.repo_id)
            ).fetchone()
        except psycopg.errors.LockNotAvailable:
            lock.rollback()
            raise IndexingError(
                f"another loader kept '{self.name}' locked for {self.options.lock_timeout:g} s"
            ) from None
        if row is None:
            lock.rollback()
            raise IndexingError(f"repository '{self.name}' was removed while watching it")
        return lock

    def _drop_lock(self) -> None:
        if self.lock_conn is not None:
            self.lock_conn.close()
            self.lock_conn = None

    # indexing --------------------------------------------------------------------

    def full_sync(self) -> BatchSummary:
        """The full incremental index of HEAD and the working tree."""
        started = time.monotonic()
        conn = self._connect()
        s = indexer.index_repository(
            conn,
            self.root,
            name=self.name,
            tenant=self.options.tenant,
            worktree=True,
            max_bytes=self.options.max_bytes,
            embed=False,
            show_progress=False,
            lock_timeout=self.options.lock_timeout,
        )
        self.tenant_id = indexer.ensure_tenant(conn, self.options.tenant)
        row = conn.execute(
            "select id from codesift.repositories where tenant_id = %s and name = %s and ref = %s",
            (self.tenant_id, self.name, s.ref),
        ).fetchone()
        if row is None:
            raise IndexingError(f"repository '{self.name}' was removed while watching it")
        self.repo_id = row[0]
        # what is watched is what queries that name no ref see
        indexer.make_default_ref(conn, self.tenant_id, self.name, self.repo_id)
        self.head = s.commit
        self.rules = _worktree_rules(self.root)
        summary = BatchSummary(
            paths=s.files,
            updated=s.new_blobs,
            removed=s.removed_paths,
            new_blobs=s.new_blobs,
            new_symbols=s.new_symbols,
            edges=s.edges,
            full=True,
            skipped=s.skipped,
        )
        self._embed(summary)
        summary.seconds = time.monotonic() - started
        return summary

    def _embed(self, summary: BatchSummary) -> None:
        if self.options.embed and self.conn is not None:
            summary.embedded = embed_pending(self.conn, self.tenant_id, False)

    def apply(self, paths: set[str]) -> BatchSummary:
        """Index these changed paths (relative to the root) in one tree update, or run the
        full index when HEAD moved, an ignore file changed or the batch is large."""
        head = git.head_commit(self.root)
        if head != self.head or len(paths) > FULL_SYNC_PATHS:
            return self.full_sync()
        # a folder's event stands for its files (a package copied in at once): theirs count
        listed = _ls_files(self.root, paths)
        if any(p.rsplit("/", 1)[-1] in RULE_FILES for p in [*paths, *listed]):
            return self.full_sync()
        started = time.monotonic()
        summary = BatchSummary(paths=len(paths))
        conn = self._connect()
        candidates = self._candidates(listed, summary)
        files, reincluded = self.rules.filter(candidates, summary.skipped)
        shas = list({c.sha for c in files})
        known = {
            r[0]
            for r in conn.execute(
                "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                (self.tenant_id, shas),
            ).fetchall()
        }
        todo = list({c.sha: c for c in files if c.sha not in known}.values())
        pushed = indexer.IndexSummary(self.name, self.head or "")
        indexer._push_blobs(
            conn,
            self.root,
            self.tenant_id,
            todo,
            pushed,
            False,
            ignore.content_check(reincluded),
        )
        summary.new_blobs, summary.new_symbols = pushed.new_blobs, pushed.new_symbols
        summary.skipped.update(pushed.skipped)
        self._record(conn, paths, files, summary)
        self._embed(summary)
        summary.seconds = time.monotonic() - started
        return summary

    def _candidates(self, files: list[str], summary: BatchSummary) -> list[indexer.Candidate]:
        """Of the files the changed paths list (_ls_files), those `index` would read, hashed
        from the working tree; everything else (gone, ignored, skipped) is left out."""
        keep = []
        for path in files:
            problem = indexer._name_problem(path)
            if problem:
                summary.skipped[problem] += 1
                continue
            try:
                st = git.worktree_lstat(self.root, path)
                if st is None:
                    continue  # deleted
                if stat.S_ISLNK(st.st_mode):
                    summary.skipped["symlink"] += 1  # as `index` does: never followed
                    continue
                if not stat.S_ISREG(st.st_mode):
                    summary.skipped["not a regular file"] += 1
                    continue
                if st.st_size > self.options.max_bytes:
                    summary.skipped[f"larger than {self.options.max_bytes:,} bytes"] += 1
                    continue
                data = git.read_worktree_file(self.root, path, limit=self.options.max_bytes)
            except git.UnsafePath as exc:
                summary.skipped[exc.reason] += 1
                continue
            except OSError as exc:
                if not isinstance(exc, FileNotFoundError):
                    summary.skipped[f"unreadable ({exc.strerror})"] += 1
                continue
            keep.append(indexer.Candidate(path, git.blob_sha(data), len(data), worktree=True))
        return keep

    def _record(
        self,
        conn: psycopg.Connection,
        paths: set[str],
        files: list[indexer.Candidate],
        summary: BatchSummary,
    ) -> None:
        """The batch's tree update, in the transaction that holds the repository lock."""
        lock = self._lock()
        try:
            present = {
                r[0]
                for r in lock.execute(
                    "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                    (self.tenant_id, list({c.sha for c in files})),
                ).fetchall()
            }
            kept = [c for c in files if c.sha in present]
            # every changed path (and all under a changed folder) stops being live, then the
            # files that are still there are live again: one transaction, so never seen between
            removed = lock.execute(
                "update codesift.files f set live = false"
                " where f.tenant_id = %s and f.repository_id = %s and f.live"
                " and exists (select from unnest(%s::text[]) p(path)"
                "   where f.path = p.path or starts_with(f.path, p.path || '/'))"
                " returning f.path, f.blob_sha",
                (self.tenant_id, self.repo_id, sorted(paths)),
            ).fetchall()
            before: dict[str, str] = {path: sha for path, sha in removed}
            now = datetime.now(UTC)
            lock.execute(
                indexer.RECORD_FILES,
                {
                    "repo": self.repo_id,
                    "tenant": self.tenant_id,
                    "paths": [c.path for c in kept],
                    "shas": [c.sha for c in kept],
                    "changed": [now for _ in kept],
                },
            )
            summary.removed = len(before.keys() - {c.path for c in kept})
            summary.updated = sum(1 for c in kept if before.get(c.path) != c.sha)
            same_paths = summary.removed == 0 and all(c.path in before for c in kept)
            if same_paths and not any(c.path.endswith("go.mod") for c in kept):
                # only contents changed: only these files' own imports can resolve differently
                row = lock.execute(
                    "select codesift.resolve_edges(%s, %s)",
                    (self.repo_id, [c.path for c in kept]),
                ).fetchone()
            else:  # paths came or went: any file's import may now resolve elsewhere
                row = lock.execute("select codesift.resolve_edges(%s)", (self.repo_id,)).fetchone()
                # and the map's order covers the new files (edits alone keep the last one)
                lock.execute("select codesift.rank_files(%s)", (self.repo_id,))
            summary.edges = row[0] if row else 0
            lock.execute(
                "update codesift.repositories set indexed_at = now(), indexed_worktree = true"
                " where tenant_id = %s and id = %s",
                (self.tenant_id, self.repo_id),
            )
            lock.commit()
        except BaseException:
            self._drop_lock()
            raise

    # the loop --------------------------------------------------------------------

    def _relative(self, changes: set[tuple[watchfiles.Change, str]]) -> tuple[set[str], bool]:
        """The changed paths relative to the root, and whether git's HEAD or refs moved.
        A folder that was only modified is left out (its files have their own events)."""
        paths: set[str] = set()
        git_event = False
        for change, raw in changes:
            try:
                rel = Path(raw).relative_to(self.root).as_posix()
            except ValueError:
                continue  # outside the repository (e.g. a symlink's target): never read
            if rel == "." or rel == ".git" or rel.startswith(".git/"):
                git_event = git_event or rel in GIT_EVENTS or rel.startswith(".git/refs/")
                continue
            if change == watchfiles.Change.modified and os.path.isdir(raw):
                continue
            paths.add(rel)
        return paths, git_event

    def _watch_filter(self, change: watchfiles.Change, raw: str) -> bool:
        rel = raw[len(str(self.root)) + 1 :] if raw.startswith(f"{self.root}/") else ""
        if rel == ".git" or rel.startswith(".git/"):
            return not rel.endswith(".lock") and (rel in GIT_EVENTS or rel.startswith(".git/refs/"))
        return _DEFAULT_FILTER(change, raw)

    def run(self) -> None:
        """Follow the working tree until interrupted (Ctrl-C, SIGTERM)."""
        while True:
            try:
                self._follow()
            except WatchfilesRustInternalError as exc:
                # watchfiles cannot report a file name that is not UTF-8, and drops the
                # batch: the next watcher's full incremental index covers it (and skips it)
                self.report(f"file watching: {_reason(exc)}; re-indexing fully")

    def _follow(self) -> None:
        """One file watcher. Its first tick (a timeout or events) comes once it is watching;
        only then does the full incremental index run, so a change made before it is in
        that index and a change made after it is an event."""
        watching = False
        for changes in watchfiles.watch(
            self.root,
            watch_filter=self._watch_filter,
            debounce=max(MAX_GROUP_MS, self.options.debounce_ms),
            step=self.options.debounce_ms,
            rust_timeout=HEAD_CHECK_MS,
            yield_on_timeout=True,
            raise_interrupt=True,
        ):
            if not watching:
                watching = True
                if self.synced:
                    self._step(None)
                else:
                    self._until_synced(first=True)
                continue
            paths, git_event = self._relative(changes)
            if not paths and not git_event and changes:
                continue
            if not paths and git.head_commit(self.root) == self.head:
                continue  # a timeout tick or a ref event: HEAD did not move
            self._step(paths)

    def _step(self, paths: set[str] | None) -> None:
        """One batch (None: the full incremental index); a lost database is waited for."""
        try:
            self._say(self.full_sync() if paths is None else self.apply(paths))
        except (psycopg.Error, CodesiftError) as exc:
            if not self._database_lost():
                self.report(f"error: {exc}")
                return
            self.report(f"lost the database ({_reason(exc)}); reconnecting")
            self._until_synced(first=False)

    def _until_synced(self, first: bool) -> None:
        """Connect and run the full incremental index, retrying with backoff while the
        database is unreachable. Errors that are not the connection's are raised."""
        attempt = 0
        while True:
            try:
                self._say(self.full_sync())
                self.synced = True
                if not first:
                    self.report("reconnected")
                return
            except (psycopg.OperationalError, ConnectionFailed, IndexingError) as exc:
                if isinstance(exc, IndexingError) and not self._database_lost():
                    raise
                self.close()
                delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                self.report(f"database unavailable ({_reason(exc)}); retrying in {delay:g} s")
                time.sleep(delay)
                attempt += 1

    def _say(self, s: BatchSummary) -> None:
        what = (
            f"indexed {self.name} @ {(self.head or '')[:12]} + worktree: {s.paths} files"
            if s.full
            else f"{s.paths} changed path(s): {s.updated} updated, {s.removed} removed"
        )
        embedded = (
            f", embedded {s.embedded.symbols} symbols + {s.embedded.blobs} files"
            if self.options.embed
            else ""
        )
        self.report(
            f"{datetime.now():%H:%M:%S} {what}, {s.new_blobs} new blobs,"
            f" {s.new_symbols} new symbols, {s.edges} edges{embedded} ({s.seconds:.2f} s)"
        )
        for reason, count in sorted(s.skipped.items()):
            if not s.full:
                self.report(f"  skipped {count} file(s): {reason}")


_DEFAULT_FILTER = watchfiles.DefaultFilter(
    ignore_dirs=[d for d in watchfiles.DefaultFilter.ignore_dirs if d != ".git"]
)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def watch(path: str | Path, options: WatchOptions, report: Callable[[str], None]) -> None:
    """`codesift watch`: runs until Ctrl-C or SIGTERM, then closes the connection."""
    watcher = Watcher(path, options, report)

    def terminate(_signum, _frame) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        watcher.run()
    except KeyboardInterrupt:
        report("stopped watching")
    finally:
        signal.signal(signal.SIGTERM, previous)
        watcher.close()
