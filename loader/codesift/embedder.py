"""The embedding queue: symbols and files without a vector from the active model.

A batch is claimed with `for update skip locked` and committed together with its
vectors, so any number of processes (`codesift worker` on several machines, `codesift
index --wait`) share one queue: each row is embedded by one of them, and a process
killed mid-batch loses only its uncommitted batch, which the next claim takes again.

A vector belongs to the text it embeds (codesift_db/embedtext.py `embedding_key`): a
row whose text the tenant has embedded before, with the same model, copies the stored
vector from codesift.embeddings instead of running the model.
"""

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from codesift_db.embedtext import embedding_key, file_text, symbol_text

from . import db
from .errors import IndexingError
from .progress import progress_bar

BATCH = 64
CHANNEL = "codesift_embedding"  # NOTIFY payload: the tenant id with new work
WAIT_POLL_SECONDS = 0.5

# Never embedded (the partial index), then embedded by another model (after a switch).
PENDING = ("embedding_model is null", "embedding_model <> %(model)s")

CLAIM_SYMBOLS = """
select s.id, b.path_hint, s.kind, s.qualified_name, s.signature, s.body, s.doc
from codesift.code_symbols s
join codesift.blobs b on b.tenant_id = s.tenant_id and b.sha = s.blob_sha
where s.tenant_id = %(tenant)s and s.{pending}
order by s.id limit %(limit)s
for update of s skip locked
"""

CLAIM_BLOBS = """
select sha, path_hint, content from codesift.blobs
where tenant_id = %(tenant)s and {pending}
order by sha limit %(limit)s
for update skip locked
"""

KNOWN_KEYS = """
select key from codesift.embeddings
where tenant_id = %s and model = %s and key = any(%s)
"""

STORE_VECTORS = """
insert into codesift.embeddings (tenant_id, key, model, embedding)
select %s, v.key, %s, v.e::vector from unnest(%s::text[], %s::text[]) v(key, e)
on conflict (tenant_id, key) do nothing
"""

# Rows take a copy of their vector: the HNSW indexes and the dense legs stay on them.
SET_SYMBOLS = """
update codesift.code_symbols s
set embedding = e.embedding, embedding_key = e.key, embedding_model = e.model
from unnest(%(ids)s::bigint[], %(keys)s::text[]) v(id, key)
join codesift.embeddings e on e.tenant_id = %(tenant)s and e.key = v.key
where s.tenant_id = %(tenant)s and s.id = v.id
"""

SET_BLOBS = """
update codesift.blobs b
set embedding = e.embedding, embedding_key = e.key, embedding_model = e.model
from unnest(%(ids)s::text[], %(keys)s::text[]) v(sha, key)
join codesift.embeddings e on e.tenant_id = %(tenant)s and e.key = v.key
where b.tenant_id = %(tenant)s and b.sha = v.sha
"""


@dataclass
class EmbedStats:
    symbols: int = 0  # symbol rows given a vector
    blobs: int = 0  # file rows given a vector
    computed: int = 0  # vectors the model computed
    reused: int = 0  # rows that took a stored vector

    def add(self, other: "EmbedStats") -> None:
        self.symbols += other.symbols
        self.blobs += other.blobs
        self.computed += other.computed
        self.reused += other.reused


def active_model(conn: psycopg.Connection) -> tuple[str, int]:
    rows: dict[str, str] = dict(
        conn.execute(
            "select key, value from codesift.settings"
            " where key in ('embedding_model', 'embedding_dim')"
        ).fetchall()
    )
    return rows["embedding_model"], int(rows["embedding_dim"])


def pending(conn: psycopg.Connection, tenant_id: int, model: str) -> tuple[int, int]:
    """(symbols, files) of the tenant without a vector from `model`."""
    with db.tenant_transaction(conn):
        row = conn.execute(
            "select (select count(*) from codesift.code_symbols"
            "        where tenant_id = %(t)s and embedding_model is distinct from %(m)s),"
            " (select count(*) from codesift.blobs"
            "        where tenant_id = %(t)s and embedding_model is distinct from %(m)s)",
            {"t": tenant_id, "m": model},
        ).fetchone()
    assert row is not None  # a select without from returns one row
    return row[0], row[1]


def notify(conn: psycopg.Connection, tenant_id: int) -> None:
    """Wake the workers: the tenant has rows to embed (delivered on commit)."""
    conn.execute("select pg_notify(%s, %s)", (CHANNEL, str(tenant_id)))


def load_settings(conn: psycopg.Connection) -> dict[str, str]:
    """The rows of codesift.settings (the embedder's configuration among them)."""
    return dict(conn.execute("select key, value from codesift.settings").fetchall())


def _load_model(model_name: str, dim: int, settings: Mapping[str, str] | None = None):
    """The embedder codesift.settings configures (embedders.from_settings); without the
    settings, the built-in MiniLM, refused unless it is the database's model."""
    from codesift_db import embedders

    settings = settings if settings is not None else {}
    settings = {**settings, "embedding_model": model_name, "embedding_dim": str(dim)}
    try:
        return embedders.from_settings(settings)
    except embedders.EmbedderUnavailable as exc:
        raise IndexingError(
            f"{exc}; or index without --wait and let a worker that can embed do it"
        ) from None


def _vector_literal(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


class Embedding:
    """Embeds claimed batches of one database's queue; loads the model on first need, so
    a batch whose texts are all stored never loads it."""

    def __init__(self, conn: psycopg.Connection, reuse: bool = True):
        self.model_name, self.dim = active_model(conn)
        self.settings = load_settings(conn)
        self.reuse = reuse  # False only to measure the cost of embedding every row
        self._model: Any = None

    def _encode(self, texts: list[str]):
        model = self._model
        if model is None:
            model = self._model = _load_model(self.model_name, self.dim, self.settings)
        return model.encode(texts)

    def _store(self, conn, tenant_id: int, texts: list[str], stats: EmbedStats) -> list[str]:
        """The keys of `texts`, computing and storing the vectors the tenant lacks."""
        keys = [embedding_key(self.model_name, t) for t in texts]
        known = {
            r[0]
            for r in conn.execute(KNOWN_KEYS, (tenant_id, self.model_name, keys)).fetchall()
            if self.reuse
        }
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if missing:
            vectors = self._encode(list(missing.values()))
            conn.execute(
                STORE_VECTORS,
                (
                    tenant_id,
                    self.model_name,
                    list(missing),
                    [_vector_literal(v) for v in vectors],
                ),
            )
        stats.computed += len(missing)
        stats.reused += len(keys) - len(missing)
        return keys

    def _claim(self, conn, statement: str, tenant_id: int) -> list[tuple]:
        args = {"tenant": tenant_id, "model": self.model_name, "limit": BATCH}
        for condition in PENDING:
            rows = conn.execute(statement.format(pending=condition), args).fetchall()
            if rows:
                return rows
        return []

    def one_batch(self, conn: psycopg.Connection, tenant_id: int) -> EmbedStats:
        """Claim, embed and commit one batch of the tenant's queue (symbols first).
        `conn` acts as the tenant; an empty result means the queue had nothing
        unclaimed."""
        stats = EmbedStats()
        with db.tenant_transaction(conn):
            if rows := self._claim(conn, CLAIM_SYMBOLS, tenant_id):
                keys = self._store(conn, tenant_id, [symbol_text(*r[1:]) for r in rows], stats)
                ids = [r[0] for r in rows]
                conn.execute(SET_SYMBOLS, {"ids": ids, "keys": keys, "tenant": tenant_id})
                stats.symbols = len(rows)
            elif rows := self._claim(conn, CLAIM_BLOBS, tenant_id):
                keys = self._store(conn, tenant_id, [file_text(r[1], r[2]) for r in rows], stats)
                ids = [r[0] for r in rows]
                conn.execute(SET_BLOBS, {"ids": ids, "keys": keys, "tenant": tenant_id})
                stats.blobs = len(rows)
        return stats

    def drain(
        self,
        conn: psycopg.Connection,
        tenant_id: int,
        advance: Callable[[int], None] = lambda n: None,
    ) -> EmbedStats:
        """Embed batches until the tenant has no unclaimed rows."""
        total = EmbedStats()
        while True:
            stats = self.one_batch(conn, tenant_id)
            if stats.symbols + stats.blobs == 0:
                return total
            total.add(stats)
            advance(stats.symbols + stats.blobs)


def embed_pending(conn: psycopg.Connection, tenant_id: int, show_progress: bool) -> EmbedStats:
    """Embed the tenant's backlog in this process, alongside any running workers, and
    return when none is left (rows other processes hold are waited for)."""
    embedding = Embedding(conn)
    n_symbols, n_blobs = pending(conn, tenant_id, embedding.model_name)
    stats = EmbedStats()
    if n_symbols + n_blobs == 0:
        return stats
    with progress_bar(show_progress) as bar:
        task = bar.add_task("embedding", total=n_symbols + n_blobs)
        stats = embedding.drain(conn, tenant_id, lambda n: bar.advance(task, n))
        while left := sum(pending(conn, tenant_id, embedding.model_name)):
            bar.update(task, completed=n_symbols + n_blobs - left)
            time.sleep(WAIT_POLL_SECONDS)
            stats.add(embedding.drain(conn, tenant_id))
        bar.update(task, completed=n_symbols + n_blobs)
    return stats
