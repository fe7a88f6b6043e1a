"""`codesift index`: push a git repository's new blobs and record its tree.

1. Read the tree at the ref (and, with --worktree, uncommitted changes).
2. Push only blobs the tenant does not have, in batches, each its own
   transaction; the database extracts symbols and imports in that transaction.
3. Record the tree in one transaction: files point at blobs, removed paths stop
   being live, edges are resolved, the repository records the indexed commit.
   A crash before this step leaves the previous tree intact.
4. Embed whatever lacks a vector from the active model (the queue).
Two loaders on the same repository serialise on an advisory lock.
"""

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from codesift_db.symbols import detect_language

from . import git
from .embedder import EmbedStats, embed_pending
from .errors import IndexingError
from .progress import progress_bar

DEFAULT_MAX_BYTES = 1024 * 1024
BATCH_BYTES = 2 * 1024 * 1024
BATCH_BLOBS = 200


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
    skipped: Counter = field(default_factory=Counter)
    embedded: EmbedStats = field(default_factory=EmbedStats)


def ensure_tenant(conn: psycopg.Connection, name: str) -> int:
    row = (
        conn.execute(
            "insert into codesift.tenants (name) values (%s)"
            " on conflict (name) do nothing returning id",
            (name,),
        ).fetchone()
        or conn.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()
    )
    if row is None:
        raise IndexingError(
            f"tenant '{name}' does not exist and this role may not create it: "
            "create it as the database owner (insert into codesift.tenants (name) ...)"
        )
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    return row[0]


def ensure_repository(conn: psycopg.Connection, tenant_id: int, name: str, origin: str) -> int:
    return conn.execute(
        "insert into codesift.repositories (tenant_id, name, origin) values (%s, %s, %s)"
        " on conflict (tenant_id, name) do update set origin = excluded.origin returning id",
        (tenant_id, name, origin),
    ).fetchone()[0]


def _lock_key(tenant_id: int, name: str) -> int:
    digest = hashlib.sha256(f"codesift-index:{tenant_id}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _classify(entries, max_bytes: int, summary: IndexSummary) -> list[Candidate]:
    keep = []
    for e in entries:
        if e.mode == git.MODE_SUBMODULE:
            summary.skipped["submodule"] += 1
        elif e.mode == git.MODE_SYMLINK:
            summary.skipped["symlink"] += 1
        elif e.size is not None and e.size > max_bytes:
            summary.skipped[f"larger than {max_bytes:,} bytes"] += 1
        else:
            keep.append(Candidate(e.path, e.sha, e.size or 0, e.worktree))
    return keep


def _decode(data: bytes) -> str | None:
    """Text for the database, or None for binary content (NUL bytes)."""
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def _push_blobs(conn, root, tenant_id, todo: list[Candidate], summary, show_progress) -> None:
    rows: list[tuple] = []
    size = 0

    def flush():
        nonlocal rows, size
        if not rows:
            return
        shas, sizes, languages, contents, paths = (list(c) for c in zip(*rows, strict=True))
        with conn.transaction():
            inserted = conn.execute(
                "insert into codesift.blobs (tenant_id, sha, size, language, content, path_hint)"
                " select %s, * from"
                " unnest(%s::text[], %s::int[], %s::text[], %s::text[], %s::text[])"
                " on conflict do nothing returning sha",
                (tenant_id, shas, sizes, languages, contents, paths),
            ).fetchall()
            summary.new_symbols += conn.execute(
                "select count(*) from codesift.code_symbols where tenant_id = %s"
                " and blob_sha = any(%s)",
                (tenant_id, [r[0] for r in inserted]),
            ).fetchone()[0]
        summary.new_blobs += len(inserted)
        rows, size = [], 0

    with git.BlobReader(root) as reader, progress_bar(show_progress) as bar:
        task = bar.add_task("blobs", total=len(todo))
        for c in todo:
            try:
                data = git.read_worktree_file(root, c.path) if c.worktree else reader.read(c.sha)
            except OSError as exc:
                summary.skipped[f"unreadable ({exc.strerror})"] += 1
                bar.advance(task)
                continue
            text = _decode(data)
            if text is None:
                summary.skipped["binary"] += 1
            else:
                rows.append((c.sha, len(data), detect_language(c.path), text, c.path))
                size += len(data)
                if size >= BATCH_BYTES or len(rows) >= BATCH_BLOBS:
                    flush()
            bar.advance(task)
        flush()


RECORD_FILES = """
insert into codesift.files as f (repository_id, tenant_id, path, blob_sha, live, last_changed,
    lexemes)
select %(repo)s, b.tenant_id, t.path, t.sha, true, t.changed,
    to_tsvector('simple', codesift.path_terms(t.path)) || coalesce(b.lexemes, '')
from unnest(%(paths)s::text[], %(shas)s::text[], %(changed)s::timestamptz[])
    as t(path, sha, changed)
join codesift.blobs b on b.tenant_id = %(tenant)s and b.sha = t.sha
on conflict (repository_id, path) do update
set blob_sha = excluded.blob_sha, live = true, last_changed = excluded.last_changed,
    lexemes = excluded.lexemes
where f.blob_sha is distinct from excluded.blob_sha or not f.live
    or f.last_changed is distinct from excluded.last_changed
"""


def _record_tree(conn, repo_id, tenant_id, commit, worktree, files, changed, summary) -> None:
    now = datetime.now(UTC)
    with conn.transaction():
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
            " where repository_id = %s and live and not (path = any(%s))",
            (repo_id, [c.path for c in kept]),
        ).rowcount
        summary.edges = conn.execute("select codesift.resolve_edges(%s)", (repo_id,)).fetchone()[0]
        conn.execute(
            "update codesift.repositories set indexed_commit = %s, indexed_at = now(),"
            " head_commit = %s, head_seen_at = now(), indexed_worktree = %s where id = %s",
            (commit, commit, worktree, repo_id),
        )
        summary.files = len(kept)


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
) -> IndexSummary:
    root = git.repo_root(path)
    commit = git.resolve_commit(root, ref)
    name = name or root.name
    conn.autocommit = True
    tenant_id = ensure_tenant(conn, tenant)
    repo_id = ensure_repository(conn, tenant_id, name, str(root))
    summary = IndexSummary(repository=name, commit=commit)

    key = _lock_key(tenant_id, name)
    if not conn.execute("select pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        if show_progress:
            from rich.console import Console

            Console(stderr=True).print(f"waiting for another loader indexing '{name}'...")
        conn.execute("select pg_advisory_lock(%s)", (key,))
    try:
        entries = git.list_tree(root, commit)
        if worktree:
            entries = _overlay_worktree(root, entries)
        files = _classify(entries, max_bytes, summary)
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
        _push_blobs(conn, root, tenant_id, todo, summary, show_progress)
        changed = git.last_changed(root, commit)
        _record_tree(conn, repo_id, tenant_id, commit, worktree, files, changed, summary)
        if embed:
            summary.embedded = embed_pending(conn, tenant_id, show_progress)
    finally:
        conn.execute("select pg_advisory_unlock(%s)", (key,))
    return summary


def _overlay_worktree(root: Path, entries: list[git.TreeEntry]) -> list[git.TreeEntry]:
    changed, deleted = git.worktree_changes(root)
    by_path = {e.path: e for e in entries if e.path not in deleted}
    by_path.update((f.path, f) for f in changed)
    return list(by_path.values())
