"""The embedding queue: symbols and files without a vector from the active model.

A batch is claimed with `for update skip locked` and committed together with its
vectors, so any number of processes (`codesift worker` on several machines, `codesift
index --wait`) share one queue: each row is embedded by one of them, and a process
killed mid-batch loses only its uncommitted batch, which the next claim takes again.

A vector belongs to the text it embeds (codesift_db/embedtext.py `embedding_key`): a
row whose text the tenant has embedded before, with the same model, copies the stored
vector from codesift.embeddings instead of running the model.

Failures are of two kinds. The endpoint refusing a text (HTTP 400, 413 or 422, e.g. a text
too long for the model) is the row's: the batch is split in halves until the refused text
is alone, the others are embedded, and the row keeps the error (embedding_error, shown by
`codesift status`) and leaves the queue until embedding_retry_at, at most MAX_ATTEMPTS
times. The endpoint being down or failing (refused connections, timeouts, HTTP 5xx, 429) is
nobody's row: the request is repeated with exponential backoff (Backoff), and when it still
fails the batch is rolled back, untouched, for a later claim.
"""

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from codesift_db.embed.embedders import (
    EmbedderUnavailable,
    EndpointUnreachable,
    InputRejected,
    vector_identity,
)
from codesift_db.embedtext import embedding_key, file_text, symbol_text

from . import db
from .errors import CodesiftError, IndexingError
from .progress import progress_bar

BATCH = 64
CHANNEL = "codesift_embedding"  # NOTIFY payload: the tenant id with new work
WAIT_POLL_SECONDS = 0.5

# A row the endpoint refused is claimed again after these waits, one per refusal; after
# MAX_ATTEMPTS refusals it stays out of the queue (a new text is a new row, and starts over).
RETRY_REFUSED_AFTER = ("1 hour", "1 day")
MAX_ATTEMPTS = len(RETRY_REFUSED_AFTER) + 1
ERROR_CHARS = 500  # of the endpoint's message, kept with the row
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]+")

# The queue, in the order claims read it: rows never embedded (the partial index), rows
# embedded by another model (after a switch), then refused rows whose retry time came. `a`
# is the table's alias.
PENDING = (
    "{a}.embedding_model is null and {a}.embedding_retry_at is null",
    "{a}.embedding_model <> %(model)s and {a}.embedding_retry_at is null",
    "{a}.embedding_retry_at <= now() and {a}.embedding_model is distinct from %(model)s",
)

CLAIM_SYMBOLS = """
select s.id, b.path_hint, s.kind, s.qualified_name, s.signature, s.body, s.doc
from codesift.code_symbols s
join codesift.blobs b on b.tenant_id = s.tenant_id and b.sha = s.blob_sha
where s.tenant_id = %(tenant)s and {pending}
order by s.id limit %(limit)s
for update of s skip locked
"""

CLAIM_BLOBS = """
select b.sha, b.path_hint, b.content from codesift.blobs b
where b.tenant_id = %(tenant)s and {pending}
order by b.sha limit %(limit)s
for update skip locked
"""

# What is left to embed now: rows refused and waiting for their retry time are not.
PENDING_COUNTS = """
select
    (select count(*) from codesift.code_symbols
        where tenant_id = %(t)s and embedding_model is distinct from %(m)s
            and (embedding_retry_at is null or embedding_retry_at <= now())),
    (select count(*) from codesift.blobs
        where tenant_id = %(t)s and embedding_model is distinct from %(m)s
            and (embedding_retry_at is null or embedding_retry_at <= now()))
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
set embedding = e.embedding, embedding_key = e.key, embedding_model = e.model,
    embedding_error = null, embedding_attempts = 0, embedding_retry_at = null
from unnest(%(ids)s::bigint[], %(keys)s::text[]) v(id, key)
join codesift.embeddings e on e.tenant_id = %(tenant)s and e.key = v.key
where s.tenant_id = %(tenant)s and s.id = v.id
"""

SET_BLOBS = """
update codesift.blobs b
set embedding = e.embedding, embedding_key = e.key, embedding_model = e.model,
    embedding_error = null, embedding_attempts = 0, embedding_retry_at = null
from unnest(%(ids)s::text[], %(keys)s::text[]) v(sha, key)
join codesift.embeddings e on e.tenant_id = %(tenant)s and e.key = v.key
where b.tenant_id = %(tenant)s and b.sha = v.sha
"""

# A refused row keeps the error and waits for its next try; after the last, for ever.
REFUSE = """
set embedding_error = v.error,
    embedding_attempts = {a}.embedding_attempts + 1,
    embedding_retry_at = coalesce(
        now() + (%(retry)s::interval[])[{a}.embedding_attempts + 1], 'infinity'
    )
"""

REFUSE_SYMBOLS = (
    "update codesift.code_symbols s"
    + REFUSE.format(a="s")
    + """from unnest(%(ids)s::bigint[], %(errors)s::text[]) v(id, error)
where s.tenant_id = %(tenant)s and s.id = v.id
returning s.id, s.embedding_attempts
"""
)

REFUSE_BLOBS = (
    "update codesift.blobs b"
    + REFUSE.format(a="b")
    + """from unnest(%(ids)s::text[], %(errors)s::text[]) v(sha, error)
where b.tenant_id = %(tenant)s and b.sha = v.sha
returning b.sha, b.embedding_attempts
"""
)


@dataclass
class EmbedStats:
    symbols: int = 0  # symbol rows given a vector
    blobs: int = 0  # file rows given a vector
    computed: int = 0  # vectors the model computed
    reused: int = 0  # rows that took a stored vector
    refused: int = 0  # rows the endpoint refused (kept with their error)

    def add(self, other: "EmbedStats") -> None:
        self.symbols += other.symbols
        self.blobs += other.blobs
        self.computed += other.computed
        self.reused += other.reused
        self.refused += other.refused


BACKOFF_ENV = "CODESIFT_EMBED_BACKOFF"  # seconds before the first retry
BACKOFF_MAX_ENV = "CODESIFT_EMBED_BACKOFF_MAX"  # the longest wait between two tries
TRIES_ENV = "CODESIFT_EMBED_TRIES"  # requests for one batch before it is given back


@dataclass(frozen=True)
class Backoff:
    """How an endpoint that is down or failing is retried: after `first` seconds, then
    twice as long each time, at most `cap`. One batch is sent at most `tries` times (its
    rows stay claimed meanwhile); the worker then waits out the outage with the same
    delays, holding nothing."""

    first: float = 1.0
    cap: float = 60.0
    tries: int = 4

    def delays(self) -> Iterator[float]:
        delay = self.first
        while True:
            yield delay
            delay = min(delay * 2, self.cap)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> "Backoff":
        """The defaults, or what CODESIFT_EMBED_BACKOFF, CODESIFT_EMBED_BACKOFF_MAX and
        CODESIFT_EMBED_TRIES say (tests set short ones)."""
        default = cls()
        first = _env_number(environ, BACKOFF_ENV, default.first, 0.001, 3600)
        cap = _env_number(environ, BACKOFF_MAX_ENV, max(default.cap, first), first, 3600)
        tries = _env_number(environ, TRIES_ENV, default.tries, 1, 100)
        if tries != int(tries):
            raise CodesiftError(f"{TRIES_ENV}={environ[TRIES_ENV]!r}: a whole number")
        return cls(first, cap, int(tries))


def _env_number(
    environ: Mapping[str, str], name: str, default: float, low: float, high: float
) -> float:
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not low <= number <= high:  # nan fails too
        raise CodesiftError(f"{name}={value!r}: a number from {low:g} to {high:g}")
    return number


def error_text(exc: BaseException) -> str:
    """An error as kept with a row and shown to a person: one line, no control
    characters (the endpoint wrote part of it), at most ERROR_CHARS characters."""
    text = _UNPRINTABLE.sub(" ", str(exc)).strip() or type(exc).__name__
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def active_model(conn: psycopg.Connection) -> tuple[str, int]:
    rows: dict[str, str] = dict(
        conn.execute(
            "select key, value from codesift.settings"
            " where key in ('embedding_model', 'embedding_dim')"
        ).fetchall()
    )
    return rows["embedding_model"], int(rows["embedding_dim"])


def pending(conn: psycopg.Connection, tenant_id: int, model: str) -> tuple[int, int]:
    """(symbols, files) of the tenant without a vector from `model`, but for the rows the
    endpoint refused that wait for their next try."""
    with db.tenant_transaction(conn):
        row = conn.execute(PENDING_COUNTS, {"t": tenant_id, "m": model}).fetchone()
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
    from codesift_db.embed import embedders

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


@dataclass
class _Refused:
    """Rows of a batch the endpoint refused, as logged: what and why."""

    what: str
    error: str
    attempt: int = 0


class Embedding:
    """Embeds claimed batches of one database's queue; loads the model on first need, so
    a batch whose texts are all stored never loads it."""

    def __init__(
        self,
        conn: psycopg.Connection,
        reuse: bool = True,
        backoff: Backoff | None = None,
        log: Callable[[str], None] = lambda line: None,
    ):
        self.model_name, self.dim = active_model(conn)
        self.settings = load_settings(conn)
        # the name vectors are keyed under: the model's, or its int8 variant's (embedders)
        try:
            settings = {**self.settings, "embedding_model": self.model_name}
            self.vector_identity = vector_identity(settings)
        except EmbedderUnavailable as exc:
            raise IndexingError(str(exc)) from None
        self.reuse = reuse  # False only to measure the cost of embedding every row
        self.backoff = backoff if backoff is not None else Backoff.from_env()
        self.log = log
        self._model: Any = None

    def _loaded(self):
        if self._model is None:
            self._model = _load_model(self.model_name, self.dim, self.settings)
        return self._model

    def _encode(self, texts: list[str]):
        """The model's vectors for texts; a failing endpoint is asked again, `tries`
        times in all, before EndpointUnreachable goes up."""
        model = self._loaded()
        delays = self.backoff.delays()
        for attempt in range(1, self.backoff.tries + 1):
            try:
                return model.encode(texts)
            except EndpointUnreachable as exc:
                if attempt == self.backoff.tries:
                    raise
                delay = next(delays)
                self.log(f"{error_text(exc)}; trying again in {delay:g} s")
                time.sleep(delay)
        raise AssertionError("unreachable")  # the last try returned or raised

    def _encode_isolating(self, texts: list[str]) -> list[list[float] | InputRejected]:
        """A vector for each text, or the refusal of the texts the endpoint refuses: a
        refused batch is split in halves until each refused text is alone."""
        try:
            return list(self._encode(texts))
        except InputRejected as exc:
            if len(texts) == 1:
                return [exc]
            half = len(texts) // 2
            return self._encode_isolating(texts[:half]) + self._encode_isolating(texts[half:])

    def _store(
        self, conn, tenant_id: int, texts: list[str], stats: EmbedStats
    ) -> tuple[list[str], dict[str, str]]:
        """The keys of `texts`, computing and storing the vectors the tenant lacks, and the
        error of each key whose text the endpoint refused."""
        keys = [embedding_key(self.vector_identity, t) for t in texts]
        known = {
            r[0]
            for r in conn.execute(KNOWN_KEYS, (tenant_id, self.model_name, keys)).fetchall()
            if self.reuse
        }
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        refused: dict[str, str] = {}
        if missing:
            # a request at a time (the endpoint's embedding_batch), so that a refusal
            # costs the vectors of that request only
            step = getattr(self._loaded(), "batch", None) or len(missing)
            texts_missing = list(missing.values())
            results: list[list[float] | InputRejected] = []
            for start in range(0, len(texts_missing), step):
                results += self._encode_isolating(texts_missing[start : start + step])
            vectors = {}
            for key, result in zip(missing, results, strict=True):
                if isinstance(result, InputRejected):
                    refused[key] = error_text(result)
                else:
                    vectors[key] = _vector_literal(result)
            if vectors:
                conn.execute(
                    STORE_VECTORS,
                    (tenant_id, self.model_name, list(vectors), list(vectors.values())),
                )
            stats.computed += len(vectors)
        stats.reused += len(keys) - len(missing)
        return keys, refused

    def _claim(self, conn, statement: str, alias: str, tenant_id: int) -> list[tuple]:
        args = {"tenant": tenant_id, "model": self.model_name, "limit": BATCH}
        for condition in PENDING:
            pending_rows = condition.format(a=alias)
            rows = conn.execute(statement.format(pending=pending_rows), args).fetchall()
            if rows:
                return rows
        return []

    def one_batch(self, conn: psycopg.Connection, tenant_id: int) -> EmbedStats:
        """Claim, embed and commit one batch of the tenant's queue (symbols first).
        `conn` acts as the tenant; an empty result means the queue had nothing
        unclaimed. Rows the endpoint refuses are committed with their error."""
        stats = EmbedStats()
        refused: list[_Refused] = []
        with db.tenant_transaction(conn):
            if rows := self._claim(conn, CLAIM_SYMBOLS, "s", tenant_id):
                symbols = True
                texts = [symbol_text(*r[1:]) for r in rows]
                names = {r[0]: f"symbol {r[3]} in {r[1]}" for r in rows}
            elif rows := self._claim(conn, CLAIM_BLOBS, "b", tenant_id):
                symbols = False
                texts = [file_text(r[1], r[2]) for r in rows]
                names = {r[0]: f"file {r[1]} (blob {r[0][:12]})" for r in rows}
            else:
                return stats
            keys, errors = self._store(conn, tenant_id, texts, stats)
            ids = [r[0] for r in rows]
            done = [(i, k) for i, k in zip(ids, keys, strict=True) if k not in errors]
            bad = [(i, errors[k]) for i, k in zip(ids, keys, strict=True) if k in errors]
            if done:
                conn.execute(
                    SET_SYMBOLS if symbols else SET_BLOBS,
                    {
                        "ids": [i for i, _ in done],
                        "keys": [k for _, k in done],
                        "tenant": tenant_id,
                    },
                )
            if bad:
                args = {
                    "ids": [i for i, _ in bad],
                    "errors": [e for _, e in bad],
                    "retry": list(RETRY_REFUSED_AFTER),
                    "tenant": tenant_id,
                }
                tries: dict[Any, int] = dict(
                    conn.execute(REFUSE_SYMBOLS if symbols else REFUSE_BLOBS, args).fetchall()
                )
                refused = [_Refused(names[i], e, tries.get(i, 1)) for i, e in bad]
            if symbols:
                stats.symbols = len(done)
            else:
                stats.blobs = len(done)
            stats.refused = len(bad)
        for r in refused:  # after the commit: what the log says is recorded
            then = (
                f"tried again in {RETRY_REFUSED_AFTER[r.attempt - 1]}"
                if r.attempt < MAX_ATTEMPTS
                else "not tried again (codesift status lists it)"
            )
            self.log(
                f"tenant {tenant_id}: {r.what} not embedded, the endpoint refused it"
                f" (try {r.attempt} of {MAX_ATTEMPTS}; {then}): {r.error}"
            )
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
            if stats.symbols + stats.blobs + stats.refused == 0:
                return total
            total.add(stats)
            advance(stats.symbols + stats.blobs + stats.refused)


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
