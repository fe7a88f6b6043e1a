"""`codesift index --dry-run`: what an index run would push and embed, by folder, what it
would skip, by reason (naming the first paths of each), and an estimate of the embedding
work, without writing anything (the database is only read, in read-only transactions, to
tell new blobs and stored vectors from the rest; with no database, all are new).

The embedding estimate: the texts `index --wait` or `codesift worker` would embed for the
new blobs (each file's and each symbol's, the symbols found by the extraction the database
runs, extraction.extract_blob, run here; past EXTRACT_SECONDS the rest of the files' symbols
are extrapolated from those found per byte), how many of them need a vector computed (not
stored for the tenant under the same key, embedtext.embedding_key), and how long that takes
at a rate measured here on a sample of those texts with the loader's embedder (the built-in
model, loaded as `index --wait` loads it), or, when it cannot be measured (an endpoint: a
dry run sends it nothing; no database; the model not installed), at ASSUMED_TEXTS_PER_SECOND,
labelled as assumed. Either way an estimate: the database's own work (extraction, storing
vectors) is not counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from codesift_db.embed import embedders
from codesift_db.embedtext import embedding_key, file_text, symbol_text
from codesift_db.ingest import extraction
from codesift_db.ingest.symbols import detect_language

from . import git, ignore, tenants
from .embedder import PENDING_COUNTS
from .indexer import IndexSummary, _classify, _decode, _overlay_worktree

EXTRACT_SECONDS = 20.0  # extracting symbols here; then extrapolated by bytes
SAMPLE_TEXTS = 32  # texts the measured rate is timed on
WARM_UP_TEXTS = 2  # embedded first, untimed: the engine loads (not every text pays it)
# What the estimate assumes when it cannot measure (yours differs): the built-in model
# (all-MiniLM-L6-v2, ONNX Runtime) embedded 18 to 22 texts/s, in batches of 64, of
# codesift's own symbols and files (755 characters on average) on a shared 2-core machine.
ASSUMED_TEXTS_PER_SECOND = 20.0
KEYS_PER_QUERY = 10_000


@dataclass
class Embedding:
    """The embedding work the new blobs bring."""

    symbols: int = 0  # symbol rows (estimated past EXTRACT_SECONDS)
    files: int = 0  # file rows: one per new blob
    to_compute: int = 0  # distinct texts without a stored vector
    extracted: int = 0  # new blobs whose symbols were extracted here (the rest extrapolated)
    backlog: int = 0  # texts of the tenant already waiting for a vector
    model: str = embedders.BUILTIN
    rate: float = ASSUMED_TEXTS_PER_SECOND  # texts per second
    measured: int = 0  # texts the rate was timed on; 0: assumed
    why_assumed: str = ""

    @property
    def texts(self) -> int:
        return self.symbols + self.files

    @property
    def seconds(self) -> float:
        return self.to_compute / self.rate if self.rate > 0 else 0.0


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
    skipped: ignore.Skipped = field(default_factory=ignore.Skipped)
    database: str = "read"  # or why it was not read
    embedding: Embedding = field(default_factory=Embedding)


def _folder(path: str) -> str:
    return path.split("/", 1)[0] + "/" if "/" in path else "."


class _Texts:
    """The texts of the new blobs, as the embedding queue will read them: each file's, and
    each symbol's once the blob's symbols are extracted (while time is left)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.deadline = clock() + EXTRACT_SECONDS
        self.texts: list[str] = []
        self.symbols = 0
        self.extracted_bytes = 0
        self.skipped_bytes = 0  # of new blobs not extracted: their symbols extrapolated
        self.extracted = 0
        self.files = 0

    def add(self, path: str, text: str) -> None:
        self.files += 1
        self.texts.append(file_text(path, text))
        size = len(text.encode("utf-8", "surrogatepass"))
        if self.clock() > self.deadline:
            self.skipped_bytes += size
            return
        found = extraction.extract_blob(path, text, detect_language(path))["symbols"]
        self.symbols += len(found)
        self.texts += [
            symbol_text(path, s["kind"], s["qualified_name"], s["signature"], s["body"], s["doc"])
            for s in found
        ]
        self.extracted += 1
        self.extracted_bytes += size

    def estimated_symbols(self) -> int:
        if not self.skipped_bytes:
            return self.symbols
        per_byte = self.symbols / self.extracted_bytes if self.extracted_bytes else 0.0
        return self.symbols + round(per_byte * self.skipped_bytes)


def plan_index(
    conn: psycopg.Connection | None,
    path: str | Path,
    name: str | None = None,
    tenant: str = "default",
    ref: str = "HEAD",
    worktree: bool = False,
    max_bytes: int = 1024 * 1024,
    clock: Callable[[], float] = time.perf_counter,
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
    tenant_id, known = _stored(conn, tenant, [c.sha for c in files], plan)
    decided: dict[str, bool] = {}  # sha -> would be stored
    texts = _Texts(clock)
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
                    plan.skipped.add(exc.reason, c.path)
                    continue
                text, reason = _decode(data)
                if text is not None:
                    reason = check(c.path, text) or ""
                if reason:
                    plan.skipped.add(reason, c.path)
                keep = new = decided[c.sha] = not reason
                if new:
                    assert text is not None  # decoded, or there is a reason
                    plan.new_blobs += 1
                    plan.new_bytes += len(data)
                    texts.add(c.path, text)
            if not keep:
                continue
            plan.files += 1
            counts = plan.by_folder.setdefault(_folder(c.path), [0, 0])
            counts[0] += 1
            counts[1] += new
    plan.stored_blobs = len({c.sha for c in files} & known)
    plan.embedding = _estimate(conn, tenant_id, texts, clock)
    return plan


def _stored(conn, tenant: str, shas: list[str], plan: Plan) -> tuple[int | None, set[str]]:
    """The tenant's id and the blobs it already has, read in a read-only transaction."""
    if conn is None:
        plan.database = "not connected: every blob counted as new"
        return None, set()
    try:
        with _reading(conn, None):
            tid = tenants.tenant_id(conn, tenant)
    except tenants.UnknownTenant:
        plan.database = f"tenant '{tenant}' does not exist yet: every blob is new"
        return None, set()
    with _reading(conn, tid):
        return tid, {
            r[0]
            for r in conn.execute(
                "select sha from codesift.blobs where tenant_id = %s and sha = any(%s)",
                (tid, list(set(shas))),
            ).fetchall()
        }


def _estimate(conn, tenant_id: int | None, texts: _Texts, clock) -> Embedding:
    settings = _settings(conn)
    model = settings.get("embedding_model") or embedders.BUILTIN
    est = Embedding(
        symbols=texts.estimated_symbols(),
        files=texts.files,
        extracted=texts.extracted,
        model=model,
    )
    try:
        identity = embedders.vector_identity({**settings, "embedding_model": model})
    except embedders.EmbedderUnavailable:
        identity = model  # the estimate below says why the model cannot load
    keys = {embedding_key(identity, t): t for t in texts.texts}
    stored = _stored_keys(conn, tenant_id, model, list(keys))
    missing = [t for k, t in keys.items() if k not in stored]
    # the texts not extracted (extrapolated symbols) have no key: counted as to compute
    est.to_compute = len(missing) + (est.symbols - texts.symbols)
    est.backlog = _backlog(conn, tenant_id, model)
    if conn is None:
        est.why_assumed = "no database: its embedder is unknown"
    elif (settings.get("embedding_provider") or embedders.BUILTIN) != embedders.BUILTIN:
        est.why_assumed = "the embedding endpoint is not asked during a dry run"
    elif not missing:
        est.why_assumed = "nothing to compute"
    else:
        try:
            encoder = embedders.from_settings(settings)
            est.rate, est.measured = measure_rate(encoder.encode, missing, clock)
        except embedders.EmbedderUnavailable as exc:
            est.why_assumed = f"the built-in model cannot load here ({exc})"
    return est


def _settings(conn) -> dict[str, str]:
    if conn is None:
        return {}
    with _reading(conn, None):
        return dict(conn.execute("select key, value from codesift.settings").fetchall())


def _stored_keys(conn, tenant_id: int | None, model: str, keys: list[str]) -> set[str]:
    """Of `keys`, those with a vector the tenant stored (reused, not computed)."""
    if conn is None or tenant_id is None or not keys:
        return set()
    found: set[str] = set()
    with _reading(conn, tenant_id):
        for start in range(0, len(keys), KEYS_PER_QUERY):
            found.update(
                r[0]
                for r in conn.execute(
                    "select key from codesift.embeddings"
                    " where tenant_id = %s and model = %s and key = any(%s)",
                    (tenant_id, model, keys[start : start + KEYS_PER_QUERY]),
                ).fetchall()
            )
    return found


def _backlog(conn, tenant_id: int | None, model: str) -> int:
    """Texts of the tenant already waiting for a vector (embedder.pending, read only)."""
    if conn is None or tenant_id is None:
        return 0
    with _reading(conn, tenant_id):
        row = conn.execute(PENDING_COUNTS, {"t": tenant_id, "m": model}).fetchone()
    return sum(row) if row else 0


@contextmanager
def _reading(conn, tenant_id: int | None) -> Iterator[None]:
    """A read-only transaction acting as the tenant (row-level security applies)."""
    with conn.transaction() if tenant_id is None else tenants.as_tenant(conn, tenant_id):
        conn.execute("set transaction read only")
        yield


def measure_rate(
    encode: Callable[[list[str]], object],
    texts: Sequence[str],
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, int]:
    """(texts per second, texts timed): `encode` timed on up to SAMPLE_TEXTS of `texts`,
    spread over them, after WARM_UP_TEXTS untimed ones (loading the engine)."""
    step = max(len(texts) // SAMPLE_TEXTS, 1)
    sample = list(texts[::step][:SAMPLE_TEXTS])
    encode(list(texts[:WARM_UP_TEXTS]))
    start = clock()
    encode(sample)
    elapsed = clock() - start
    if elapsed <= 0:
        return ASSUMED_TEXTS_PER_SECOND, 0
    return len(sample) / elapsed, len(sample)


def duration(seconds: float) -> str:
    """'under a second', '45 s', '3 min 20 s', '2 h 5 min'."""
    s = round(seconds)
    if s < 1:
        return "under a second"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def report(p: Plan) -> list[str]:
    """The dry run's lines, as `codesift index --dry-run` prints them."""
    out = [
        f"dry run: {p.repository} @ {p.commit[:12]} for tenant '{p.tenant}' (nothing written)",
        f"would index {p.files} files: push and embed {p.new_blobs} new blobs"
        f" ({p.new_bytes:,} bytes) and their symbols; {p.stored_blobs} already stored",
    ]
    if p.database != "read":
        out.append(f"database: {p.database}")
    for folder, (files, new) in sorted(p.by_folder.items()):
        out.append(f"  {folder:<40} {files:>6} files  {new:>6} new")
    for reason, count in sorted(p.skipped.items()):
        out.append(f"  skipped {count} file(s): {reason}")
        shown = p.skipped.paths.get(reason, [])
        out += [f"    {path}" for path in shown]
        if count > len(shown):
            out.append(f"    ... and {count - len(shown)} more")
    return out + _embedding_lines(p.embedding, p.new_blobs)


def _embedding_lines(e: Embedding, new_blobs: int) -> list[str]:
    symbols = f"{e.symbols:,} symbols" + (
        f" (estimated: extracted {e.extracted:,} of {new_blobs:,} files in"
        f" {EXTRACT_SECONDS:g} s, the rest from their symbols per byte)"
        if e.extracted < new_blobs
        else ""
    )
    out = [
        f"would embed {e.texts:,} texts ({symbols} + {e.files:,} files):"
        f" {e.to_compute:,} vectors to compute, {e.texts - e.to_compute:,} stored or repeated"
    ]
    if e.to_compute:
        how = (
            f"measured here on {e.measured} of those texts with the loader's {e.model}"
            if e.measured
            else f"assumed, not measured: {e.why_assumed}"
        )
        when = duration(e.seconds)
        out.append(
            f"  estimate: {when if when.startswith('under') else 'about ' + when}"
            f" at {e.rate:,.1f} texts/s ({how}; the database's own work not counted)"
        )
    if e.backlog:
        out.append(
            f"  the tenant's queue already holds {e.backlog:,} texts to embed"
            " (codesift worker, or index --wait, embeds them too)"
        )
    return out
