"""`codesift index --dry-run`: what an index run would push and embed, by folder, and what
it would skip, by reason, without writing anything (the database is only read, in a
read-only session, to tell new blobs from stored ones; with no database, all are new)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from . import git, ignore
from .indexer import IndexSummary, _classify, _decode, _overlay_worktree


@dataclass
class Plan:
    repository: str
    commit: str
    tenant: str
    files: int = 0  # files the tree would record
    new_blobs: int = 0  # blobs to push (and embed, with their symbols)
    new_bytes: int = 0
    stored_blobs: int = 0  # already stored for the tenant: reused, not embedded again
    by_folder: dict[str, list[int]] = field(default_factory=dict)  # folder -> [files, new]
    skipped: Counter = field(default_factory=Counter)
    database: str = "read"  # or why it was not read


def _folder(path: str) -> str:
    return path.split("/", 1)[0] + "/" if "/" in path else "."


def plan_index(
    conn: psycopg.Connection | None,
    path: str | Path,
    name: str | None = None,
    tenant: str = "default",
    ref: str = "HEAD",
    worktree: bool = False,
    max_bytes: int = 1024 * 1024,
) -> Plan:
    root = git.repo_root(path)
    commit = git.resolve_commit(root, ref)
    summary = IndexSummary(repository=name or root.name, commit=commit)
    entries = git.list_tree(root, commit)
    if worktree:
        entries = _overlay_worktree(root, entries, max_bytes, summary)
    files = _classify(entries, max_bytes, summary)
    files, reincluded = ignore.load_rules(root, entries).filter(files, summary.skipped)
    check = ignore.content_check(reincluded)
    plan = Plan(summary.repository, commit, tenant, skipped=summary.skipped)
    known = _stored(conn, tenant, [c.sha for c in files], plan)
    decided: dict[str, bool] = {}  # sha -> would be stored
    with git.BlobReader(root) as reader:
        for c in files:
            if c.sha in known:
                keep, new = True, False
            elif c.sha in decided:
                keep, new = decided[c.sha], False
            else:
                try:
                    data = (
                        git.read_worktree_file(root, c.path, limit=c.size)
                        if c.worktree
                        else reader.read(c.sha)
                    )
                except git.UnsafePath as exc:
                    plan.skipped[exc.reason] += 1
                    continue
                text, reason = _decode(data)
                if text is not None:
                    reason = check(c.path, text) or ""
                if reason:
                    plan.skipped[reason] += 1
                keep = new = decided[c.sha] = not reason
                if new:
                    plan.new_blobs += 1
                    plan.new_bytes += len(data)
            if not keep:
                continue
            plan.files += 1
            counts = plan.by_folder.setdefault(_folder(c.path), [0, 0])
            counts[0] += 1
            counts[1] += new
    plan.stored_blobs = len({c.sha for c in files} & known)
    return plan


def _stored(conn, tenant: str, shas: list[str], plan: Plan) -> set[str]:
    """The blobs the tenant already has, read in a read-only transaction."""
    if conn is None:
        plan.database = "not connected: every blob counted as new"
        return set()
    with conn.transaction():
        conn.execute("set transaction read only")
        row = conn.execute("select id from codesift.tenants where name = %s", (tenant,)).fetchone()
        if row is None:
            plan.database = f"tenant '{tenant}' does not exist yet: every blob is new"
            return set()
        conn.execute("select set_config('app.current_tenant_id', %s, true)", (str(row[0]),))
        return {
            r[0]
            for r in conn.execute(
                "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                (row[0], list(set(shas))),
            ).fetchall()
        }
