"""The Prometheus metrics of `codesift worker` (served by observability.serve_metrics on
`--metrics-port`): batches, rows embedded and refused, vectors computed and reused, per
tenant id; the embedding backlog per tenant id; failures by kind. Tenant ids, never names:
whoever scrapes learns how busy each tenant is, not who it is."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .embedder import EmbedStats

# what the worker waits out: the embedding endpoint down or failing, the database gone, a
# conflict with another session (a deadlock) that rolled its claim back, or a statement the
# database cancelled (statement_timeout)
FAILURE_KINDS = (
    "endpoint_unreachable",
    "database_unreachable",
    "database_conflict",
    "database_timeout",
)


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.batches = Counter(
            "codesift_worker_batches", "Batches committed, by tenant id.", ["tenant"], registry=r
        )
        self.embedded = Counter(
            "codesift_worker_rows_embedded",
            "Rows given a vector, by tenant id and kind (symbol or file).",
            ["tenant", "kind"],
            registry=r,
        )
        self.refused = Counter(
            "codesift_worker_rows_refused",
            "Rows the embedding endpoint refused (kept with their error), by tenant id.",
            ["tenant"],
            registry=r,
        )
        self.computed = Counter(
            "codesift_worker_vectors_computed",
            "Vectors the model computed (texts not embedded before), by tenant id.",
            ["tenant"],
            registry=r,
        )
        self.reused = Counter(
            "codesift_worker_vectors_reused",
            "Vectors copied from a text the tenant embedded before, by tenant id.",
            ["tenant"],
            registry=r,
        )
        self.duration = Histogram(
            "codesift_worker_batch_duration_seconds",
            "How long a batch took, claim to commit.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
            registry=r,
        )
        self.failures = Counter(
            "codesift_worker_failures",
            "Waits for an embedding endpoint or a database that failed, by kind.",
            ["kind"],
            registry=r,
        )
        self.backlog = Gauge(
            "codesift_worker_embedding_backlog",
            "Rows waiting for a vector, by tenant id: counted at each pass over the tenants, "
            "lowered as batches commit.",
            ["tenant"],
            registry=r,
        )
        self._left: dict[str, float] = {}  # the backlog gauge's values
        for kind in FAILURE_KINDS:
            self.failures.labels(kind)

    def counted(self, backlog: dict[int, int]) -> None:
        """The backlog of every tenant, counted now."""
        for tenant_id, rows in backlog.items():
            self._left[str(tenant_id)] = rows
            self.backlog.labels(str(tenant_id)).set(rows)

    def batch(self, tenant_id: int, stats: EmbedStats, seconds: float) -> None:
        tenant = str(tenant_id)
        self.batches.labels(tenant).inc()
        self.embedded.labels(tenant, "symbol").inc(stats.symbols)
        self.embedded.labels(tenant, "file").inc(stats.blobs)
        self.refused.labels(tenant).inc(stats.refused)
        self.computed.labels(tenant).inc(stats.computed)
        self.reused.labels(tenant).inc(stats.reused)
        self.duration.observe(seconds)
        done = stats.symbols + stats.blobs + stats.refused
        self._left[tenant] = max(0.0, self._left.get(tenant, 0.0) - done)
        self.backlog.labels(tenant).set(self._left[tenant])

    def failure(self, kind: str) -> None:
        self.failures.labels(kind).inc()
