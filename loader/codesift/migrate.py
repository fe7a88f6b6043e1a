"""The migration runner (`codesift migrate`).

sql/incremental/NNN-name.sql run once and are recorded with their checksum;
sql/idempotent/NNN-name.sql (create-or-replace functions, views, policies) are
re-run whenever they change, and after anything else ran (a new table needs the policies
and grants of the files after it). All of it happens in one transaction under an advisory
lock: two installers serialise, and a failure leaves the database exactly as it was.

Its tables may be in use (a worker embedding, an indexer, long questions): a lock not
granted within LOCK_TIMEOUT, or a deadlock with such a session (the policies are re-made
table by table), rolls the whole attempt back, so the other session goes on, and it is
tried again after a pause, up to ATTEMPTS times.

A re-run leaves alone the functions whose definition and grants it would not change
(`_run_idempotent`): redefining a function, even identically, makes every session that
runs it rebuild it, and PostgreSQL 15 can crash when that happens to a PL/Python function
in the middle of a call, so a migrate that changes no function is safe while serving.
"""

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import sqlparse
from psycopg import sql

from .db import PROJECT_ROOT
from .errors import MigrationError

SQL_DIR = PROJECT_ROOT / "sql"
LOCK_KEY = 0x636F646573696674  # 'codesift' as an advisory lock key
MIN_PGVECTOR = (0, 8, 0)
LOCK_TIMEOUT = "5s"  # a table lock waited for longer rolls the attempt back
ATTEMPTS = 8
PAUSES_S = (1, 2, 4, 8)  # between attempts; the last one repeats
BUSY = (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable)
NAME_PATTERN = re.compile(r"^\d{3}-[a-z0-9_-]+\.sql$")


@dataclass(frozen=True)
class Migration:
    kind: str  # 'incremental' or 'idempotent'
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass
class MigrateResult:
    applied: list[str] = field(default_factory=list)


def discover(sql_dir: Path = SQL_DIR) -> list[Migration]:
    migrations = []
    for kind in ("incremental", "idempotent"):
        for path in sorted((sql_dir / kind).glob("*.sql")):
            if not NAME_PATTERN.match(path.name):
                raise MigrationError(f"{path}: migration files are named NNN-name.sql")
            migrations.append(Migration(kind, path.name, path.read_text()))
    return migrations


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def check_extensions(conn: psycopg.Connection) -> None:
    """Refuse early, with the fix, on a server lacking pgvector or plpython3u."""
    available: dict[str, str] = dict(
        conn.execute(
            "select name, default_version from pg_available_extensions"
            " where name in ('vector', 'plpython3u')"
        ).fetchall()
    )
    if "plpython3u" not in available:
        raise MigrationError(
            "this PostgreSQL server has no plpython3u: install postgresql-plpython3-<major> "
            "(Debian) on the server, or use Dockerfile.postgres / the embedded database (make db)"
        )
    if "vector" not in available:
        raise MigrationError(
            "this PostgreSQL server has no pgvector extension: install pgvector >= 0.8 "
            "(postgresql-<major>-pgvector), or use Dockerfile.postgres / the embedded database"
        )
    installed = conn.execute(
        "select extversion from pg_extension where extname = 'vector'"
    ).fetchone()
    version = installed[0] if installed else available["vector"]
    if _version_tuple(version) < MIN_PGVECTOR:
        raise MigrationError(
            f"pgvector {version} is too old: codesift needs >= 0.8 (iterative index scans); "
            "upgrade it on the server (ALTER EXTENSION vector UPDATE after installing)"
        )


def _applied(conn: psycopg.Connection) -> dict[tuple[str, str], str]:
    conn.execute(
        """
        create schema if not exists codesift;
        create table if not exists codesift.schema_migrations (
            kind text not null,
            name text not null,
            checksum text not null,
            applied_at timestamptz not null default now(),
            primary key (kind, name)
        )
        """
    )
    rows = conn.execute("select kind, name, checksum from codesift.schema_migrations").fetchall()
    return {(kind, name): checksum for kind, name, checksum in rows}


def _check_history(migrations: list[Migration], applied: dict[tuple[str, str], str]) -> None:
    known = {(m.kind, m.name): m for m in migrations}
    for (kind, name), checksum in sorted(applied.items()):
        if kind != "incremental":
            continue
        if (kind, name) not in known:
            raise MigrationError(
                f"the database has migration {kind}/{name}, which this codesift does not know: "
                "it was migrated by a newer codesift. Upgrade codesift (git pull) and retry."
            )
        if known[(kind, name)].checksum != checksum:
            raise MigrationError(
                f"sql/{kind}/{name} was edited after it was applied to this database "
                f"(checksum {checksum[:12]} recorded, {known[(kind, name)].checksum[:12]} now). "
                "Released incremental migrations are never edited: restore the file and put the "
                "change in a new migration."
            )


APPLIED = "select kind, name, checksum from codesift.schema_migrations"


def pending(migrations: list[Migration], applied: dict[tuple[str, str], str]) -> list[str]:
    """What a database whose schema_migrations holds `applied` ((kind, name) -> checksum)
    is missing: the incremental files it lacks, and the idempotent ones it lacks or holds
    another version of (`migrate` runs these and the idempotent files after them). When
    the database knows an incremental file this codesift does not, a newer codesift
    migrated it (during a rolling upgrade, say): its idempotent files are newer ones, not
    pending."""
    known = {(m.kind, m.name) for m in migrations}
    newer = any(kind == "incremental" and (kind, name) not in known for kind, name in applied)
    return [
        f"{m.kind}/{m.name}"
        for m in migrations
        if (m.kind, m.name) not in applied
        or (m.kind == "idempotent" and not newer and applied[(m.kind, m.name)] != m.checksum)
    ]


@dataclass(frozen=True)
class EmbedderChoice:
    """`codesift migrate --embedder ...`: what embeds, recorded in codesift.settings."""

    provider: str = "builtin"
    endpoint: str | None = None
    model: str | None = None
    dim: int | None = None

    def checked(self) -> "EmbedderChoice":
        """The choice with its defaults filled in; MigrationError on a contradiction."""
        from codesift_db.embed import embedders, minilm

        if self.provider == embedders.BUILTIN:
            if self.endpoint is not None:
                raise MigrationError("--embedding-endpoint is for --embedder openai")
            if self.model not in (None, minilm.MODEL_NAME) or self.dim not in (
                None,
                minilm.DIMENSION,
            ):
                raise MigrationError(
                    f"the built-in embedder is {minilm.MODEL_NAME} ({minilm.DIMENSION} "
                    "dimensions); another model needs --embedder openai and its endpoint"
                )
            return EmbedderChoice(self.provider, None, minilm.MODEL_NAME, minilm.DIMENSION)
        if self.provider != embedders.OPENAI:
            raise MigrationError(f"--embedder is one of {', '.join(embedders.PROVIDERS)}")
        if not self.endpoint or not self.model or self.dim is None:
            raise MigrationError(
                "--embedder openai needs --embedding-endpoint URL, --embedding-model NAME "
                "and --embedding-dim N (the model's vector size)"
            )
        try:
            endpoint = embedders.check_endpoint(self.endpoint)
        except embedders.EmbedderUnavailable as exc:
            raise MigrationError(str(exc)) from None
        if len(self.model) > 200 or not self.model.isprintable():
            raise MigrationError("--embedding-model: a printable name of at most 200 characters")
        return EmbedderChoice(self.provider, endpoint, self.model, self.dim)


def migrate(
    conn: psycopg.Connection,
    embedding_dim: int | None = None,
    sql_dir: Path = SQL_DIR,
    embedder: EmbedderChoice | None = None,
    attempts: int = ATTEMPTS,
    on_busy: Callable[[int, float, str], None] | None = None,
) -> MigrateResult:
    """Apply what is pending, in one transaction under an advisory lock; with `embedder`,
    record that choice of embedder (at first install, or a model the columns can hold).
    An attempt that meets busy tables (BUSY) is rolled back and made again, up to
    `attempts` in all; on_busy(attempt, pause_s, why) is told before each pause."""
    if embedder is not None:
        embedder = embedder.checked()
        if embedding_dim is not None and embedding_dim != embedder.dim:
            raise MigrationError(
                f"--embedding-dim {embedding_dim} contradicts the embedder's {embedder.dim}"
            )
        embedding_dim = embedder.dim
    for attempt in range(1, attempts + 1):
        try:
            return _migrate_once(conn, embedding_dim, sql_dir, embedder)
        except BUSY as exc:
            why = exc.diag.message_primary or str(exc)
            if attempt == attempts:
                raise MigrationError(
                    f"the tables stayed in use by other sessions ({why}) through {attempts} "
                    "attempts. Nothing was changed. Retry when the load is lighter, or stop "
                    "the worker (codesift worker) while migrating."
                ) from None
            pause = PAUSES_S[min(attempt, len(PAUSES_S)) - 1]
            if on_busy is not None:
                on_busy(attempt, pause, why)
            time.sleep(pause)
    raise MigrationError("attempts must be at least 1")


def _migrate_once(
    conn: psycopg.Connection,
    embedding_dim: int | None,
    sql_dir: Path,
    embedder: EmbedderChoice | None,
) -> MigrateResult:
    """One attempt of migrate (the embedder already checked): everything or nothing."""
    migrations = discover(sql_dir)
    result = MigrateResult()
    try:
        with conn.transaction():
            conn.execute("select pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            # set after the advisory lock: a second installer waits its turn in full
            conn.execute("select set_config('lock_timeout', %s, true)", (LOCK_TIMEOUT,))
            check_extensions(conn)
            applied = _applied(conn)
            _check_history(migrations, applied)
            _check_embedding_dim(conn, embedding_dim)
            if embedding_dim is not None:
                conn.execute(
                    "select set_config('codesift.embedding_dim', %s, true)", (str(embedding_dim),)
                )
            for m in migrations:
                recorded = applied.get((m.kind, m.name))
                if m.kind == "incremental" and recorded is not None:
                    continue
                if m.kind == "idempotent" and recorded == m.checksum and not result.applied:
                    continue
                _run(conn, m)
                result.applied.append(f"{m.kind}/{m.name}")
            if embedder is not None:
                _record_embedder(conn, embedder)
            if result.applied:
                conn.execute(
                    sql.SQL("alter database {} set search_path = codesift, public").format(
                        sql.Identifier(conn.info.dbname)
                    )
                )
    except psycopg.errors.InsufficientPrivilege as exc:
        raise MigrationError(
            f"the DSN's role may not install codesift ({exc.diag.message_primary}); "
            "run `codesift migrate` as the database owner or a superuser. Nothing was changed."
        ) from None
    return result


def _check_embedding_dim(conn: psycopg.Connection, wanted: int | None) -> None:
    if wanted is None:
        return
    exists = conn.execute("select to_regclass('codesift.settings')").fetchone()
    assert exists is not None  # a select without from returns one row
    if exists[0] is None:
        return
    row = conn.execute("select value from codesift.settings where key = 'embedding_dim'").fetchone()
    if row and int(row[0]) != wanted:
        raise MigrationError(
            f"this database was installed with embedding dimension {row[0]}, not {wanted}: "
            "its vector columns cannot hold another size. Choose a model of "
            f"{row[0]} dimensions, or install into a fresh database"
        )


def _record_embedder(conn: psycopg.Connection, choice: EmbedderChoice) -> None:
    """Write the embedder rows of codesift.settings. A new model name makes every stored
    vector pending again (they are kept per model): nothing mixes two vector spaces; and
    what the old model's endpoint refused is offered to the new one afresh."""
    before = conn.execute(
        "select value from codesift.settings where key = 'embedding_model'"
    ).fetchone()
    rows = {
        "embedding_provider": choice.provider,
        "embedding_model": choice.model,
        "embedding_endpoint": choice.endpoint,
    }
    for key, value in rows.items():
        if value is None:
            conn.execute("delete from codesift.settings where key = %s", (key,))
        else:
            conn.execute(
                "insert into codesift.settings (key, value) values (%s, %s)"
                " on conflict (key) do update set value = excluded.value",
                (key, value),
            )
    if before is not None and before[0] != choice.model:
        for table in ("code_symbols", "blobs"):
            conn.execute(
                sql.SQL(
                    "update codesift.{} set embedding_error = null, embedding_attempts = 0,"
                    " embedding_retry_at = null where embedding_error is not null"
                ).format(sql.Identifier(table))
            )


# Statements that write only function definitions or their grants (pg_proc rows).
DEFINES_FUNCTIONS = re.compile(
    r"^(create\s+or\s+replace\s+(function|procedure)\b"
    r"|alter\s+(function|procedure)\b"
    r"|(grant|revoke)\b.*?\bon\s+(function|procedure|all\s+functions)\b)",
    re.IGNORECASE | re.DOTALL,
)
FUNCTIONS_STATE = (
    "select coalesce(md5(string_agg(p::text, ',' order by p.oid)), '') from pg_proc as p"
    " where p.pronamespace = 'codesift'::regnamespace"
)


def _functions_state(conn: psycopg.Connection) -> str:
    row = conn.execute(FUNCTIONS_STATE).fetchone()
    assert row is not None  # an aggregate returns one row
    return str(row[0])


def _run_idempotent(conn: psycopg.Connection, text: str) -> None:
    """Run an idempotent file a statement at a time; a statement that defines functions or
    grants on them and leaves every codesift function as it was is rolled back, so their
    catalog rows, and the sessions running them, are not touched."""
    for statement in sqlparse.split(text):
        code = sqlparse.format(statement, strip_comments=True).strip()
        if not code:
            continue
        if not DEFINES_FUNCTIONS.match(code):
            conn.execute(statement)
            continue
        before = _functions_state(conn)
        with conn.transaction():  # a savepoint
            conn.execute(statement)
            if _functions_state(conn) == before:
                raise psycopg.Rollback()


def _run(conn: psycopg.Connection, m: Migration) -> None:
    try:
        with conn.transaction():  # a savepoint: name the failing file precisely
            if m.kind == "idempotent":
                _run_idempotent(conn, m.text)
            else:
                conn.execute(m.text)
    except (psycopg.errors.InsufficientPrivilege, *BUSY):
        raise
    except psycopg.Error as exc:
        message = exc.diag.message_primary or str(exc)
        raise MigrationError(
            f"migration sql/{m.kind}/{m.name} failed: {message}. The database was left unchanged."
        ) from None
    conn.execute(
        """
        insert into codesift.schema_migrations (kind, name, checksum) values (%s, %s, %s)
        on conflict (kind, name) do update
        set checksum = excluded.checksum, applied_at = excluded.applied_at
        """,
        (m.kind, m.name, m.checksum),
    )
