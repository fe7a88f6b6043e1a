"""`codesift status`: per repository, what is indexed and what is behind."""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from . import db, git
from .embedder import active_model
from .errors import CodesiftError
from .tenants import tenant_id as tenant_id_of
from .tenants import use_tenant

# one tenant's repositories ($tenant names it: the statement names the tenant everywhere)
REPOSITORIES = """
select r.id, r.name, r.ref, r.is_default, r.checkout_path, r.indexed_commit, r.indexed_at,
    r.indexed_worktree,
    (select count(*) from codesift.files f
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live),
    (select count(*) from codesift.files f
        join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live),
    (select count(*) from codesift.file_edges e
        where e.tenant_id = r.tenant_id and e.repository_id = r.id),
    (select count(*) from codesift.files f
        join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
            and s.embedding_model is distinct from %(model)s)
    + (select count(*) from codesift.files f
        join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
            and b.embedding_model is distinct from %(model)s),
    (select count(*) from codesift.files f
        join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
            and s.embedding_model is distinct from %(model)s and s.embedding_error is not null)
    + (select count(*) from codesift.files f
        join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
            and b.embedding_model is distinct from %(model)s and b.embedding_error is not null)
from codesift.repositories r
where r.tenant_id = %(tenant)s
order by r.name, not r.is_default, r.ref
"""

# One tenant's rows the embedding endpoint refused, at one path each: those given up
# first, then by their next try (null: given up; psycopg reads no infinite timestamp).
REFUSED = """
select kind, name, path, symbol, attempts, nullif(retry_at, 'infinity'), error from (
    select distinct on (s.id) 'symbol' as kind, r.name, f.path, s.qualified_name as symbol,
        s.embedding_attempts as attempts, s.embedding_retry_at as retry_at,
        s.embedding_error as error
    from codesift.code_symbols s
    join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live
    join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id
    where s.tenant_id = %(tenant)s and s.embedding_error is not null
        and s.embedding_model is distinct from %(model)s
    union all
    select distinct on (b.sha) 'file', r.name, f.path, null,
        b.embedding_attempts, b.embedding_retry_at, b.embedding_error
    from codesift.blobs b
    join codesift.files f on f.tenant_id = b.tenant_id and f.blob_sha = b.sha and f.live
    join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id
    where b.tenant_id = %(tenant)s and b.embedding_error is not null
        and b.embedding_model is distinct from %(model)s
) refused
order by retry_at desc, name, path
limit %(limit)s
"""
REFUSED_SHOWN = 20


@dataclass
class RepositoryStatus:
    tenant: str
    name: str
    ref: str
    is_default: bool
    checkout_path: str | None
    indexed_commit: str | None
    indexed_at: datetime | None
    worktree: bool
    current_head: str | None
    live_files: int
    symbols: int
    edges: int
    embedding_backlog: int
    embedding_refused: int = 0  # of the backlog, rows the embedding endpoint refused

    @property
    def stale(self) -> bool | None:
        """True when the checkout's HEAD moved past the indexed commit; None if unknown."""
        if self.current_head is None or self.indexed_commit is None:
            return None
        return self.current_head != self.indexed_commit


def _ref_head(checkout_path: str | None, ref: str) -> str | None:
    """Where the ref points now in the checkout it was indexed from (None if unknown)."""
    if not checkout_path or not Path(checkout_path).is_dir():
        return None
    committed = ref.removesuffix(":worktree")
    if committed == "HEAD":
        return git.head_commit(Path(checkout_path))
    try:
        return git.resolve_commit(Path(checkout_path), committed)
    except CodesiftError:
        return None


def _tenants(conn: psycopg.Connection, tenant: str | None) -> list[tuple[int, str]]:
    """(id, name) of the tenant named (an unknown one is the error every command gives),
    else of every tenant the role may name, by name."""
    if tenant is not None:
        return [(tenant_id_of(conn, tenant), tenant)]
    return conn.execute("select id, name from codesift.tenants order by name").fetchall()


def repository_status(
    conn: psycopg.Connection, tenant: str | None = None
) -> list[RepositoryStatus]:
    """Every repository of the tenant (or of every tenant the role may name), acting as
    each tenant in turn: row-level security applies to every statement. An unknown
    tenant is an error (the one every command gives), not an empty list."""
    tenants = _tenants(conn, tenant)
    model, _ = active_model(conn)
    result = []
    for tenant_id, tenant_name in tenants:
        use_tenant(conn, tenant_id)
        with db.tenant_transaction(conn):
            rows = conn.execute(REPOSITORIES, {"model": model, "tenant": tenant_id}).fetchall()
        for row in rows:
            repo_id, name, ref, default, checkout_path, commit, at, worktree = row[:8]
            files, symbols, edges, backlog, refused = row[8:]
            head = _ref_head(checkout_path, ref)
            if head and commit and head != commit:
                # remembered, so that pack_context can warn every client that this index is behind
                with db.tenant_transaction(conn):
                    conn.execute(
                        "update codesift.repositories set head_commit = %s, head_seen_at = now()"
                        " where tenant_id = %s and id = %s and head_commit is distinct from %s",
                        (head, tenant_id, repo_id, head),
                    )
            result.append(
                RepositoryStatus(
                    tenant_name,
                    name,
                    ref,
                    default,
                    checkout_path,
                    commit,
                    at,
                    worktree,
                    head,
                    files,
                    symbols,
                    edges,
                    backlog,
                    refused,
                )
            )
    return result


@dataclass
class RefusedRow:
    """A symbol or file the embedding endpoint refused: where, how often, and why."""

    tenant: str
    kind: str  # 'symbol' or 'file'
    repository: str
    path: str
    symbol: str | None
    attempts: int
    retry_at: datetime | None  # None: not tried again (refused too often)
    error: str


def refused_rows(
    conn: psycopg.Connection, tenant: str | None = None, limit: int = REFUSED_SHOWN
) -> list[RefusedRow]:
    """Up to `limit` rows per tenant that the embedding endpoint refused, with the
    error each one keeps (embedder.py), acting as each tenant in turn."""
    model, _ = active_model(conn)
    result = []
    for tenant_id, tenant_name in _tenants(conn, tenant):
        use_tenant(conn, tenant_id)
        with db.tenant_transaction(conn):
            rows = conn.execute(
                REFUSED, {"model": model, "tenant": tenant_id, "limit": limit}
            ).fetchall()
        result += [RefusedRow(tenant_name, *row) for row in rows]
    return result
