"""`codesift index`: push a git repository's new blobs and record its tree.

1. Read the tree at the ref (and, with --worktree, uncommitted changes).
2. Push only blobs the tenant does not have, in batches, each its own
   transaction; the database extracts symbols and imports in that transaction.
3. Record the tree in one transaction: files point at blobs, removed paths stop
   being live, edges are resolved, the repository records the indexed commit.
   A crash before this step leaves the previous tree intact.
4. Embed whatever lacks a vector from the active model (embedder.py's queue): in
   this process with `embed` (the CLI's --wait), else by `codesift worker`, which
   the NOTIFY committed with step 3 wakes.
Two loaders on the same repository serialise on the repository's row: a second
connection locks it (row-level security keeps other tenants' roles out) with a
bounded wait, and records the tree in that same transaction.

The loader never stops on an ordinary repository: names the database cannot hold
(not UTF-8), names with control characters, paths that leave the repository
through a symlink (--worktree), git LFS pointers and binary content are counted
skips; a database error is one IndexingError naming the file.
"""

import functools
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import psycopg.errors
import psycopg.sql
from codesift_db.ingest.symbols import detect_language

from . import cochange, db, git, ignore, tenants
from .embedder import EmbedStats, embed_pending, notify
from .errors import IndexingError
from .progress import progress_bar

DEFAULT_MAX_BYTES = 1024 * 1024
BATCH_BYTES = 2 * 1024 * 1024
BATCH_BLOBS = 200
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a loader waits for another one on the same repository


@dataclass
class Candidate:
    path: str
    sha: str
    size: int
    worktree: bool = False


@dataclass
class IndexSummary:
    repository: str
    commit: str
    files: int = 0
    new_blobs: int = 0
    reused_blobs: int = 0
    new_symbols: int = 0
    removed_paths: int = 0
    edges: int = 0
    skipped: ignore.Skipped = field(default_factory=ignore.Skipped)
    embedded: EmbedStats = field(default_factory=EmbedStats)
    ref: str = "HEAD"
    unchanged: bool = False  # the ref was already indexed at this commit
    references_backfilled: int = 0  # blobs stored before references, extracted now


def ensure_tenant(conn: psycopg.Connection, name: str) -> int:
    """The tenant's id, created if missing; acts as it for the rest of the session."""
    try:
        tid, _ = tenants.create_tenant(conn, name)
    except tenants.UnknownTenant:
        raise IndexingError(
            f"tenant '{name}' does not exist and this role may not create it: "
            "create it as the database owner (insert into codesift.tenants (name) ...)"
        ) from None
    return tenants.use_tenant(conn, tid)


WORKTREE_REF = "{ref}:worktree"  # ':' cannot occur in a git ref name
MAX_REF_CHARS = 512


def ref_name(ref: str, worktree: bool) -> str:
    """The name an indexed ref is stored under: as given to --ref, or REF:worktree for the
    uncommitted changes on top of REF, so that they never overwrite the committed tree."""
    return WORKTREE_REF.format(ref=ref) if worktree else ref


def ensure_repository(
    conn: psycopg.Connection, tenant_id: int, name: str, checkout_path: str, ref: str = "HEAD"
) -> int:
    """The id of the repository's indexed ref `ref`, created if missing; a repository's
    first ref is its default. Never waits on the row lock of a running loader (do
    nothing, not do update: the checkout path is updated under the lock)."""
    find = "select id from codesift.repositories where tenant_id = %s and name = %s and ref = %s"
    for default in (True, False):  # a second loader may have created the default meanwhile
        with db.tenant_transaction(conn):
            row = conn.execute(
                "insert into codesift.repositories"
                " (tenant_id, name, checkout_path, ref, is_default)"
                " select %(t)s, %(n)s, %(o)s, %(r)s, %(d)s and not exists ("
                "   select from codesift.repositories where tenant_id = %(t)s and name = %(n)s)"
                " on conflict do nothing returning id",
                {"t": tenant_id, "n": name, "o": checkout_path, "r": ref, "d": default},
            ).fetchone()
        if row is None:
            with db.tenant_transaction(conn):
                row = conn.execute(find, (tenant_id, name, ref)).fetchone()
        if row is not None:
            return row[0]
    raise IndexingError(f"repository '{name}' is not visible to this role")


def checkout_repository(conn: psycopg.Connection, tenant_id: int, checkout_path: str) -> str | None:
    """The name a checkout is already indexed under in the tenant, found by its path
    (repositories.checkout_path), or None: the repository indexed from it most
    recently when several were (the same checkout indexed again under another name)."""
    with db.tenant_transaction(conn):
        row = conn.execute(
            "select name from codesift.repositories where tenant_id = %s and checkout_path = %s"
            " order by indexed_at desc nulls last, name limit 1",
            (tenant_id, checkout_path),
        ).fetchone()
    return row[0] if row else None


def indexed_name(conn: psycopg.Connection, tenant: str, path: str | Path) -> str | None:
    """The name the checkout at `path` is indexed under for tenant `tenant` (what
    `codesift setup` records for sync_index), or None: not a git checkout, no such tenant,
    or not indexed yet. Creates nothing."""
    try:
        root = git.repo_root(path)
    except IndexingError:
        return None
    try:
        tid = tenants.tenant_id(conn, tenant)
    except tenants.UnknownTenant:
        return None
    checkout_path = git.encode_name(str(root)).decode("utf-8", errors="replace")
    return checkout_repository(conn, tid, checkout_path)


def make_default_ref(conn: psycopg.Connection, tenant_id: int, name: str, ref_id: int) -> None:
    """Make the indexed ref `ref_id` the one queries of repository `name` use by default."""
    with db.tenant_transaction(conn):
        conn.execute(
            "update codesift.repositories set is_default = false"
            " where tenant_id = %s and name = %s and is_default and id <> %s",
            (tenant_id, name, ref_id),
        )
        conn.execute(
            "update codesift.repositories set is_default = true"
            " where tenant_id = %s and id = %s and not is_default",
            (tenant_id, ref_id),
        )


def _indexed_commit(conn, tenant_id: int, repo_id: int) -> tuple[str | None, bool]:
    with db.tenant_transaction(conn):
        row = conn.execute(
            "select indexed_commit, indexed_worktree from codesift.repositories"
            " where tenant_id = %s and id = %s",
            (tenant_id, repo_id),
        ).fetchone()
    return (row[0], row[1]) if row else (None, False)


def _second_connection(conn: psycopg.Connection, tenant_id: int) -> psycopg.Connection:
    """Another connection like `conn`: same server, user, role and tenant setting."""
    password = conn.info.password
    try:
        other = psycopg.connect(conn.info.dsn, autocommit=True, password=password or None)
    except psycopg.Error as exc:
        raise IndexingError(
            f"cannot open a second connection for the repository lock: {_one_line(exc)}"
        ) from None
    try:
        me = conn.execute("select session_user, current_user").fetchone()
        assert me is not None  # a select without from returns one row
        session, role = me
        theirs = other.execute("select session_user").fetchone()
        assert theirs is not None
        if theirs[0] != session:
            other.execute(
                psycopg.sql.SQL("set session authorization {}").format(
                    psycopg.sql.Identifier(session)
                )
            )
        if role != session:
            other.execute(psycopg.sql.SQL("set role {}").format(psycopg.sql.Identifier(role)))
        tenants.use_tenant(other, tenant_id)
        other.autocommit = False
    except BaseException:
        other.close()
        raise
    return other


LOCK_ROW = "select id from codesift.repositories where tenant_id = %s and id = %s"


def _lock_repository(
    conn: psycopg.Connection,
    tenant_id: int,
    repo_id: int,
    name: str,
    checkout_path: str,
    lock_timeout: float,
    show_progress: bool,
) -> psycopg.Connection:
    """A second connection inside a transaction that holds the repository's row lock.

    FOR NO KEY UPDATE conflicts with another loader's (and with FOR SHARE/UPDATE
    by roles that can see the row: row-level security keeps other tenants out), not
    with the FOR KEY SHARE that foreign-key checks take, so the files and edges that
    this transaction writes, and the blob batches on `conn`, never wait on it. The
    wait is bounded by lock_timeout; the caller commits after recording the tree.
    """
    lock = _second_connection(conn, tenant_id)
    try:
        try:
            db.share_tenant(lock)  # begins the lock's transaction
            row = lock.execute(LOCK_ROW + " for no key update nowait", (tenant_id, repo_id))
        except psycopg.errors.LockNotAvailable:
            lock.rollback()
            db.share_tenant(lock)
            if lock_timeout <= 0:
                raise IndexingError(
                    f"another loader is indexing '{name}'; not waiting (--lock-timeout 0)"
                ) from None
            if show_progress:
                from rich.console import Console
                from rich.text import Text

                Console(stderr=True).print(
                    Text(f"waiting up to {lock_timeout:g} s for another loader indexing '{name}'")
                )
            started = time.monotonic()
            lock.execute(
                "select set_config('lock_timeout', %s, true)",  # 0 would mean forever
                (f"{max(1, round(lock_timeout * 1000))}ms",),
            )
            try:
                row = lock.execute(LOCK_ROW + " for no key update", (tenant_id, repo_id))
            except psycopg.errors.LockNotAvailable:
                waited = time.monotonic() - started
                raise IndexingError(
                    f"another loader is indexing '{name}'; waited {waited:.1f} s"
                    " (try again later, or raise --lock-timeout)"
                ) from None
        if row.fetchone() is None:
            raise IndexingError(f"repository '{name}' was removed while starting to index it")
        lock.execute(
            "update codesift.repositories set checkout_path = %s"
            " where tenant_id = %s and id = %s and checkout_path is distinct from %s",
            (checkout_path, tenant_id, repo_id, checkout_path),
        )
    except BaseException:
        lock.close()
        raise
    return lock


_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _name_problem(path: str) -> str | None:
    """Why the database cannot (or must not) hold this file name, or None.

    PostgreSQL text holds only valid UTF-8; control characters (newlines, escape
    sequences) would reach prompt headers and terminals through every citation."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8"
    if _NAME_CONTROL.search(path):
        return "file name has control characters"
    return None


def _classify(entries, max_bytes: int, summary: IndexSummary) -> list[Candidate]:
    keep = []
    for e in entries:
        problem = _name_problem(e.path)
        if problem:
            summary.skipped.add(problem, e.path)
        elif e.mode == git.MODE_SUBMODULE:
            summary.skipped.add("submodule", e.path)
        elif e.mode == git.MODE_SYMLINK:
            summary.skipped.add("symlink", e.path)
        elif e.size is not None and e.size > max_bytes:
            summary.skipped.add(f"larger than {max_bytes:,} bytes", e.path)
        else:
            keep.append(Candidate(e.path, e.sha, e.size or 0, e.worktree))
    return keep


LFS_POINTER = (
    b"version https://git-lfs.github.com/spec/v1",
    b"version https://hawser.github.com/spec/v1",
)
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
BINARY_SHARE = 0.25  # undecodable bytes and control bytes: more than this is not text


def _decode(data: bytes) -> tuple[str | None, str]:
    """Text for the database, or None and the reason to skip it: binary (NUL bytes),
    a git LFS pointer (the content is elsewhere), or mostly undecodable bytes."""
    if b"\0" in data:
        return None, "binary"
    if data.startswith(LFS_POINTER):
        return None, "git LFS pointer"
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") + len(_CONTROL_BYTES.findall(data))
    if bad > BINARY_SHARE * len(text):
        return None, "binary (mostly undecodable)"
    return text, ""


def _one_line(exc: psycopg.Error) -> str:
    message = exc.diag.message_primary or str(exc) or type(exc).__name__
    return " ".join(message.split())


def _insert_blobs(conn, tenant_id, rows: list[tuple], summary) -> None:
    shas, sizes, languages, contents, paths = (list(c) for c in zip(*rows, strict=True))
    with db.tenant_transaction(conn):
        inserted = conn.execute(
            "insert into codesift.blobs (tenant_id, sha, size, language, content, path_hint)"
            " select %s, * from"
            " unnest(%s::text[], %s::int[], %s::text[], %s::text[], %s::text[])"
            " on conflict do nothing returning sha",
            (tenant_id, shas, sizes, languages, contents, paths),
        ).fetchall()
        symbols = conn.execute(
            "select count(*) from codesift.code_symbols where tenant_id = %s"
            " and blob_sha = any(%s)",
            (tenant_id, [r[0] for r in inserted]),
        ).fetchone()[0]
    summary.new_symbols += symbols
    summary.new_blobs += len(inserted)


def _push_blobs(
    conn, root, tenant_id, todo: list[Candidate], summary, show_progress, check=None
) -> None:
    rows: list[tuple] = []
    size = 0

    def flush():
        """One transaction per batch; when the database refuses a batch, the blobs
        go one by one to name the file it refuses."""
        nonlocal rows, size
        if not rows:
            return
        try:
            _insert_blobs(conn, tenant_id, rows, summary)
        except psycopg.Error as exc:
            if conn.broken or len(rows) == 1:
                raise _refused(rows[0][4] if len(rows) == 1 else None, exc) from None
            for row in rows:
                try:
                    _insert_blobs(conn, tenant_id, [row], summary)
                except psycopg.Error as one:
                    raise _refused(row[4], one) from None
        rows, size = [], 0

    with git.BlobReader(root) as reader, progress_bar(show_progress) as bar:
        task = bar.add_task("blobs", total=len(todo))
        for c in todo:
            try:
                if c.worktree:
                    data = git.read_worktree_file(root, c.path, limit=c.size)
                    if git.blob_sha(data) != c.sha:
                        raise git.UnsafePath("changed while indexing")
                else:
                    data = reader.read(c.sha)
            except git.UnsafePath as exc:
                summary.skipped.add(exc.reason, c.path)
                bar.advance(task)
                continue
            except OSError as exc:
                summary.skipped.add(f"unreadable ({exc.strerror})", c.path)
                bar.advance(task)
                continue
            text, reason = _decode(data)
            if text is not None and check is not None:  # ignore.content_check
                reason = check(c.path, text) or ""
                text = None if reason else text
            if text is None:
                summary.skipped.add(reason, c.path)
            else:
                rows.append((c.sha, len(data), detect_language(c.path), text, c.path))
                size += len(data)
                if size >= BATCH_BYTES or len(rows) >= BATCH_BLOBS:
                    flush()
            bar.advance(task)
        flush()


def _refused(path: str | None, exc: psycopg.Error) -> IndexingError:
    if path is None:
        return IndexingError(f"the database failed while storing blobs: {_one_line(exc)}")
    return IndexingError(f"the database refused file '{path}': {_one_line(exc)}")


RECORD_FILES = """
insert into codesift.files as f (repository_id, tenant_id, path, blob_sha, live, last_changed,
    lexemes)
select %(repo)s, b.tenant_id, t.path, t.sha, true, t.changed,
    to_tsvector('simple', codesift.path_terms(t.path)) || coalesce(b.lexemes, '')
from unnest(%(paths)s::text[], %(shas)s::text[], %(changed)s::timestamptz[])
    as t(path, sha, changed)
join codesift.blobs b on b.tenant_id = %(tenant)s and b.sha = t.sha
on conflict (tenant_id, repository_id, path) do update
set blob_sha = excluded.blob_sha, live = true, last_changed = excluded.last_changed,
    lexemes = excluded.lexemes
where f.blob_sha is distinct from excluded.blob_sha or not f.live
    or f.last_changed is distinct from excluded.last_changed
"""


CO_CHANGE_DELETE = """
delete from codesift.file_edges
where tenant_id = %s and repository_id = %s and relation = 'co_change'
"""
CO_CHANGE_INSERT = """
insert into codesift.file_edges (
    tenant_id, repository_id, source_path, target_path, relation, weight
)
select r.tenant_id, r.id, e.a, e.b, 'co_change', e.w
from codesift.repositories r,
    unnest(%(a)s::text[], %(b)s::text[], %(w)s::real[]) as e (a, b, w)
where r.tenant_id = %(tenant)s and r.id = %(repo)s
"""


def _record_co_changes(conn, repo_id: int, tenant_id: int, edges: list[tuple]) -> int:
    """Replace the ref's co-change edges (cochange.py) with edges."""
    conn.execute(CO_CHANGE_DELETE, (tenant_id, repo_id))
    if edges:
        a, b, w = (list(col) for col in zip(*edges, strict=True))
        conn.execute(
            CO_CHANGE_INSERT, {"a": a, "b": b, "w": w, "tenant": tenant_id, "repo": repo_id}
        )
    return len(edges)


def _record_tree(conn, repo_id, tenant_id, commit, worktree, files, history, summary) -> None:
    """The ref's files, edges and commit, in conn's transaction; history: git.file_history
    of the commit (when each file last changed, which files change together)."""
    now = datetime.now(UTC)
    changed = git.last_changed(history)
    with db.tenant_transaction(conn):
        present = {
            r[0]
            for r in conn.execute(
                "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                (tenant_id, list({c.sha for c in files})),
            ).fetchall()
        }
        kept = [c for c in files if c.sha in present]
        conn.execute(
            RECORD_FILES,
            {
                "repo": repo_id,
                "tenant": tenant_id,
                "paths": [c.path for c in kept],
                "shas": [c.sha for c in kept],
                "changed": [now if c.worktree else changed.get(c.path) for c in kept],
            },
        )
        summary.removed_paths = conn.execute(
            "update codesift.files set live = false"
            " where tenant_id = %s and repository_id = %s and live and not (path = any(%s))",
            (tenant_id, repo_id, [c.path for c in kept]),
        ).rowcount
        summary.edges = conn.execute("select codesift.resolve_edges(%s)", (repo_id,)).fetchone()[0]
        live = [c.path for c in kept]
        summary.edges += _record_co_changes(conn, repo_id, tenant_id, cochange.edges(history, live))
        conn.execute("select codesift.rank_files(%s)", (repo_id,))  # the order repo_map reads
        conn.execute(
            "update codesift.repositories set indexed_commit = %s, indexed_at = now(),"
            " head_commit = %s, head_seen_at = now(), indexed_worktree = %s"
            " where tenant_id = %s and id = %s",
            (commit, commit, worktree, tenant_id, repo_id),
        )
        summary.files = len(kept)


def _database_errors_as_one_line(index):
    """Any database error the steps below do not name a file for becomes one
    IndexingError line, never a traceback."""

    @functools.wraps(index)
    def wrapper(conn, path, *args, **kwargs):
        try:
            return index(conn, path, *args, **kwargs)
        except psycopg.Error as exc:
            raise IndexingError(
                f"indexing {path} failed in the database: {_one_line(exc)}"
            ) from None

    return wrapper


@_database_errors_as_one_line
def index_repository(
    conn: psycopg.Connection,
    path: str | Path,
    name: str | None = None,
    tenant: str = "default",
    ref: str = "HEAD",
    worktree: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    embed: bool = True,
    show_progress: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> IndexSummary:
    root = git.repo_root(path)
    commit = git.resolve_commit(root, ref)
    if _name_problem(name or root.name):
        shown = name or root.name
        raise IndexingError(f"the repository name {shown!r} cannot be stored: pass --name")
    stored_ref = ref_name(ref, worktree)
    if _name_problem(stored_ref) or len(stored_ref) > MAX_REF_CHARS:
        raise IndexingError(f"the ref name {stored_ref[:80]!r} cannot be stored")
    checkout_path = git.encode_name(str(root)).decode("utf-8", errors="replace")
    conn.autocommit = True
    tenant_id = ensure_tenant(conn, tenant)
    # a checkout indexed before keeps its name (a second copy under the folder's name
    # would mix into every search that names no repository)
    name = name or checkout_repository(conn, tenant_id, checkout_path) or root.name
    repo_id = ensure_repository(conn, tenant_id, name, checkout_path, stored_ref)
    summary = IndexSummary(repository=name, commit=commit, ref=stored_ref)
    indexed = _indexed_commit(conn, tenant_id, repo_id)
    if not worktree and indexed == (commit, False):
        summary.unchanged = True  # this ref is indexed at this commit: nothing to do
        summary.references_backfilled = backfill_references(conn, tenant_id)
        if embed:
            summary.embedded = embed_pending(conn, tenant_id, show_progress)
        return summary

    lock = _lock_repository(
        conn, tenant_id, repo_id, name, checkout_path, lock_timeout, show_progress
    )
    try:
        entries = git.list_tree(root, commit)
        if worktree:
            entries = _overlay_worktree(root, entries, max_bytes, summary)
        files = _classify(entries, max_bytes, summary)
        # defaults and .codesiftignore (loader/codesift/ignore.py)
        files, reincluded = ignore.load_rules(root, entries).filter(files, summary.skipped)
        with db.tenant_transaction(conn):
            known = {
                r[0]
                for r in conn.execute(
                    "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                    (tenant_id, list({c.sha for c in files})),
                ).fetchall()
            }
        todo, seen = [], set(known)
        for c in files:
            if c.sha not in seen:
                seen.add(c.sha)
                todo.append(c)
        summary.reused_blobs = len({c.sha for c in files} & known)
        check = ignore.content_check(reincluded)
        _push_blobs(conn, root, tenant_id, todo, summary, show_progress, check)
        history = git.file_history(root, commit)
        # in the lock's transaction: the tree and the lock's release commit together
        _record_tree(lock, repo_id, tenant_id, commit, worktree, files, history, summary)
        notify(lock, tenant_id)  # sent by the commit: workers start on the new rows
        lock.commit()
    finally:
        lock.close()
    if indexed[0] is None:  # a new ref: the planner's statistics do not know its rows yet
        conn.execute("select codesift.refresh_statistics()")
    summary.references_backfilled = backfill_references(conn, tenant_id)
    if embed:
        summary.embedded = embed_pending(conn, tenant_id, show_progress)
    return summary


BACKFILL_BATCH = 500  # blobs per codesift.backfill_references call


def backfill_references(conn: psycopg.Connection, tenant_id: int) -> int:
    """Extract the references of the tenant's blobs stored before references were
    extracted (an index made by an older version, or one whose references a migration
    marked stale); returns how many blobs it did. A plain read of the partial index
    blobs_references_pending first, so that an index with nothing pending does not load
    the extraction code in the server."""
    pending = conn.execute(
        "select exists(select from codesift.blobs where tenant_id = %s"
        " and not references_extracted)",
        (tenant_id,),
    ).fetchone()
    if not pending or not pending[0]:
        return 0
    done = 0
    while True:
        with db.tenant_transaction(conn):
            row = conn.execute(
                "select codesift.backfill_references(%s)", (BACKFILL_BATCH,)
            ).fetchone()
        if not row or not row[0]:
            return done
        done += row[0]


def _overlay_worktree(
    root: Path, entries: list[git.TreeEntry], max_bytes: int, summary: IndexSummary
) -> list[git.TreeEntry]:
    """The tree with uncommitted changes: paths that cannot be read safely (e.g. a
    tracked file now behind a symlinked folder) are counted skips and left out."""
    changed, deleted, unsafe = git.worktree_changes(root, max_bytes)
    for path, reason in unsafe.items():
        summary.skipped.add(reason, path)
    by_path = {e.path: e for e in entries if e.path not in deleted and e.path not in unsafe}
    by_path.update((f.path, f) for f in changed)
    return list(by_path.values())
