"""`codesift worker`: embeds every tenant's backlog in the background.

It drains the queue (embedder.py) tenant by tenant, then sleeps until a loader's NOTIFY
names a tenant with new work, or until the poll interval passes (a notification sent
while the worker was down is not kept by PostgreSQL; the poll finds that work). A lost
connection, e.g. a database restart, is retried with backoff; nothing is lost, since a
batch commits with its vectors or not at all.

The embedding endpoint failing does not stop it either: a text the endpoint refuses is
left out with its error and the rest of its batch embedded (embedder.py), and an endpoint
that is down or failing is waited for, with the delays of embedder.Backoff, holding no
rows meanwhile. With `once`, an endpoint still down after a batch's tries is an error.

SIGTERM or Ctrl-C (Shutdown): a worker waiting (for work, for the endpoint, for the
database) stops at once; one in a batch finishes that batch, within a grace period, then
stops; past it, or on a second signal, it abandons the batch: the batch is one transaction,
rolled back whole, and the next claim takes its rows again.
"""

import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import psycopg
from codesift_db.embed.embedders import EndpointUnreachable

from . import db
from .embedder import CHANNEL, Backoff, Embedding, EmbedStats, error_text, pending
from .errors import ConnectionFailed
from .tenants import use_tenant
from .worker_metrics import WorkerMetrics

MAX_BACKOFF_SECONDS = 30.0


@dataclass
class WorkerOptions:
    once: bool = False  # drain what is there and exit
    poll_seconds: float = 30.0
    dsn: str | None = None
    log: Callable[[str], None] = print
    backoff: Backoff | None = None  # None: Backoff.from_env()
    metrics: WorkerMetrics = field(default_factory=WorkerMetrics)
    shutdown: "Shutdown | None" = None  # None: signals are not the worker's


class Stopped(KeyboardInterrupt):
    """The worker stopped after the batch it was in (Shutdown)."""


class Shutdown:
    """SIGTERM and SIGINT for a worker: outside a batch they stop it at once (nothing is
    half done); inside one they let it finish and stop it after (Stopped), or, past
    `grace` seconds or on a second signal, abandon it (KeyboardInterrupt inside the batch's
    transaction, which rolls it back whole)."""

    def __init__(self, grace: float, say: Callable[[str], object] = lambda text: None):
        self.grace = grace
        self.say = say  # called in a signal handler: it must not take a lock
        self.requested = False
        self.in_batch = False
        self.signalled = False  # any signal came: a database error after it is not retried

    def install(self) -> None:
        for stop in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop, self._signalled)

    def _signalled(self, signum: int, frame: object) -> None:
        self.signalled = True
        if self.requested or not self.in_batch or self.grace <= 0:
            raise KeyboardInterrupt
        self.requested = True
        self.say(f"stopping after the batch in flight (abandoned in {self.grace:g} s)")
        signal.signal(signal.SIGALRM, self._abandon)
        signal.setitimer(signal.ITIMER_REAL, self.grace)

    def _abandon(self, signum: int, frame: object) -> None:
        self.say("abandoning the batch in flight: it is rolled back")
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self.in_batch = True
        try:
            yield
        finally:
            self.in_batch = False
        if self.requested:
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise Stopped


@dataclass
class WorkerTotals:
    stats: EmbedStats = field(default_factory=EmbedStats)
    reconnects: int = 0
    outages: int = 0  # waits for an embedding endpoint that was down


def _tenants_with_work(conn: psycopg.Connection, model: str) -> dict[int, int]:
    """The backlog of every tenant."""
    tenants = [r[0] for r in conn.execute("select id from codesift.tenants order by id")]
    backlog = {}
    for tenant_id in tenants:
        use_tenant(conn, tenant_id)
        backlog[tenant_id] = sum(pending(conn, tenant_id, model))
    return backlog


def _drain(
    conn: psycopg.Connection, embedding: Embedding, tenant_id: int, options: WorkerOptions
) -> EmbedStats:
    """Embedding.drain, a batch at a time: each one counted, and one a stop waits for."""
    total = EmbedStats()
    batch = options.shutdown.batch if options.shutdown else contextlib.nullcontext
    while True:
        started = time.monotonic()
        with batch():
            stats = embedding.one_batch(conn, tenant_id)
        if stats.symbols + stats.blobs + stats.refused == 0:
            return total
        options.metrics.batch(tenant_id, stats, time.monotonic() - started)
        total.add(stats)


def _drain_all(
    conn: psycopg.Connection, embedding: Embedding, totals: WorkerTotals, options: WorkerOptions
) -> int:
    """Drain every tenant with work; how many rows were embedded."""
    log = options.log
    done = 0
    backlog = _tenants_with_work(conn, embedding.model_name)
    options.metrics.counted(backlog)
    for tenant_id in (tenant for tenant, rows in backlog.items() if rows):
        use_tenant(conn, tenant_id)
        stats = _drain(conn, embedding, tenant_id, options)
        if stats.symbols + stats.blobs + stats.refused:
            refused = f", {stats.refused} refused by the endpoint" if stats.refused else ""
            log(
                f"tenant {tenant_id}: embedded {stats.symbols} symbols + {stats.blobs} files"
                f" ({stats.computed} computed, {stats.reused} reused{refused})"
            )
        totals.stats.add(stats)
        done += stats.symbols + stats.blobs + stats.refused
    return done


def _wait_for_work(listener: psycopg.Connection, seconds: float) -> None:
    for _ in listener.notifies(timeout=seconds, stop_after=1):
        pass


def _serve(options: WorkerOptions, totals: WorkerTotals) -> None:
    backoff = options.backoff if options.backoff is not None else Backoff.from_env()
    with (
        db.connect(options.dsn, autocommit=True) as conn,
        db.connect(options.dsn, autocommit=True) as listener,
        db.acting_as_loader(conn),
    ):
        listener.execute(f"listen {CHANNEL}")
        embedding = Embedding(conn, backoff=backoff, log=options.log)
        outage: Iterator[float] | None = None  # the waits while the endpoint is down
        while True:
            try:
                done = _drain_all(conn, embedding, totals, options)
            except EndpointUnreachable as exc:
                options.metrics.failure("endpoint_unreachable")
                if options.once:
                    raise
                outage = outage or backoff.delays()
                delay = next(outage)
                options.log(
                    f"embedding endpoint unavailable ({error_text(exc)}); waiting {delay:g} s"
                )
                totals.outages += 1
                time.sleep(delay)
                continue
            outage = None
            if options.once and done == 0:
                return
            if done == 0:
                _wait_for_work(listener, options.poll_seconds)


UNREACHABLE = "database_unreachable"
CONFLICT = "database_conflict"
TIMEOUT = "database_timeout"
# the database answered and rolled the claim back: a deadlock, a serialization failure, a
# lock it could not take (codesift migrate's); the connection itself is sound
CONFLICT_STATES = ("40001", "40P01", "55P03")
# the database cancelled a statement: its statement_timeout ran out, or an operator's
# pg_cancel_backend; the connection is sound, and the same statement may run out again
CANCELLED_STATES = ("57014",)
# what the log says stopped the work, by kind
FAILURE_TEXT = {
    UNREACHABLE: "database unreachable",
    CONFLICT: "transaction rolled back",
    TIMEOUT: "statement cancelled",
}


def failure_kind(exc: Exception) -> str:
    """What stopped the worker's work: the database out of reach, a conflict with another
    session that rolled the claim back, or a statement the database cancelled (nothing is
    lost in any case: the claim is rolled back and taken again)."""
    state = getattr(exc, "sqlstate", None)
    if state in CONFLICT_STATES:
        return CONFLICT
    if state in CANCELLED_STATES:
        return TIMEOUT
    return UNREACHABLE


def run(options: WorkerOptions) -> WorkerTotals:
    """Serve until interrupted (or, with once, until the queue is empty)."""
    totals = WorkerTotals()
    backoff = 1.0
    while True:
        started = time.monotonic()
        try:
            _serve(options, totals)
            return totals
        except (psycopg.OperationalError, ConnectionFailed) as exc:
            if options.shutdown and options.shutdown.signalled:
                # a stop interrupted a query: the error is the interruption's, not an outage
                raise KeyboardInterrupt from exc
            kind = failure_kind(exc)
            options.metrics.failure(kind)
            if options.once:
                raise
            if time.monotonic() - started > MAX_BACKOFF_SECONDS:
                backoff = 1.0  # it ran a while: a new outage starts over
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            options.log(f"{FAILURE_TEXT[kind]} ({reason}); retrying in {backoff:.0f} s")
            totals.reconnects += 1
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
