"""`codesift status`: per repository, what is indexed and what is behind."""

from dataclasses import dataclass
from pathlib import Path

import psycopg

from . import git
from .embedder import active_model

REPOSITORIES = """
select r.id, t.name, r.name, r.origin, r.indexed_commit, r.indexed_at, r.indexed_worktree,
    (select count(*) from codesift.files f where f.repository_id = r.id and f.live),
    (select count(*) from codesift.files f
        join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where f.repository_id = r.id and f.live),
    (select count(*) from codesift.code_symbol_edges e where e.repository_id = r.id),
    (select count(*) from codesift.files f
        join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where f.repository_id = r.id and f.live and s.embedding_model is distinct from %(model)s)
    + (select count(*) from codesift.files f
        join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
        where f.repository_id = r.id and f.live and b.embedding_model is distinct from %(model)s)
from codesift.repositories r join codesift.tenants t on t.id = r.tenant_id
where (%(tenant)s::text is null or t.name = %(tenant)s)
order by t.name, r.name
"""


@dataclass
class RepositoryStatus:
    tenant: str
    name: str
    origin: str | None
    indexed_commit: str | None
    indexed_at: object
    worktree: bool
    current_head: str | None
    live_files: int
    symbols: int
    edges: int
    embedding_backlog: int

    @property
    def stale(self) -> bool | None:
        """True when the checkout's HEAD moved past the indexed commit; None if unknown."""
        if self.current_head is None or self.indexed_commit is None:
            return None
        return self.current_head != self.indexed_commit


def repository_status(
    conn: psycopg.Connection, tenant: str | None = None
) -> list[RepositoryStatus]:
    model, _ = active_model(conn)
    result = []
    for row in conn.execute(REPOSITORIES, {"model": model, "tenant": tenant}).fetchall():
        _, tenant_name, name, origin, commit, at, worktree, files, symbols, edges, backlog = row
        head = None
        if origin and Path(origin).is_dir():
            head = git.head_commit(Path(origin))
        if head and commit and head != commit:
            # remembered, so that pack_context can warn every client that this index is behind
            conn.execute(
                "update codesift.repositories set head_commit = %s, head_seen_at = now()"
                " where id = %s and head_commit is distinct from %s",
                (head, row[0], head),
            )
        result.append(
            RepositoryStatus(
                tenant_name,
                name,
                origin,
                commit,
                at,
                worktree,
                head,
                files,
                symbols,
                edges,
                backlog,
            )
        )
    return result
