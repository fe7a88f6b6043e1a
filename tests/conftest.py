"""Fixtures: a real PostgreSQL (CODESIFT_DSN, else the embedded cluster), a
template database migrated once per session, and per test a database in the state of a
fresh clone of it (each worker's one clone, reset between tests: reusable_database.py).

Sample repositories that many tests index are indexed once per session into a
snapshot database (a clone of the migrated template); each test gets the snapshot's
rows copied into its own database and the repositories copied into its own
folder (`Snapshots.load`), so a test that changes them changes only its copy.
"""

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from codesift.db import current_dsn
from codesift.indexer import index_repository
from codesift.migrate import migrate
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql import factories
from pytest_postgresql.executors import NoopExecutor
from pytest_postgresql.janitor import DatabaseJanitor

from tests.reusable_database import ReusableDatabase, clone_janitor, state, table_columns

SERVER = conninfo_to_dict(current_dsn())
CONNECT = {
    "host": SERVER.get("host", "localhost"),
    "port": SERVER.get("port", 5432),
    "user": SERVER.get("user", "postgres"),
    "password": SERVER.get("password"),
}


# The test folders whose files share a costly session fixture: with pytest-xdist's
# --dist loadfile (scripts/test.sh) all their files go to one worker, which starts it
# once (a Citus cluster: ~20 s of three servers starting and a repository indexed).
ONE_WORKER_FOLDERS = ("tests/citus/",)


@pytest.hookimpl(optionalhook=True)  # pytest -p no:xdist has no such hook
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with each of ONE_WORKER_FOLDERS one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own
    from xdist.scheduler import LoadFileScheduling

    class LoadFileOrFolder(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return next((f for f in ONE_WORKER_FOLDERS if scope.startswith(f)), scope)

    return LoadFileOrFolder(config, log)


def migrate_template(host, port, user, dbname, password=None, **_) -> None:
    """Install codesift into the template database that every test clones."""
    with psycopg.connect(host=host, port=port, user=user, dbname=dbname, password=password) as conn:
        migrate(conn)


codesift_template = factories.postgresql_noproc(
    **CONNECT, dbname=f"codesift_test_{os.getpid()}", load=[migrate_template]
)
blank_server = factories.postgresql_noproc(**CONNECT, dbname=f"codesift_blank_{os.getpid()}")
blank_postgresql = factories.postgresql("blank_server")


@pytest.fixture(scope="session")
def test_database(codesift_template: NoopExecutor) -> Iterator[ReusableDatabase]:
    """This worker's test database (dropped at the end of the session).
    CODESIFT_TEST_FRESH_DATABASES=1 drops it after every test instead of resetting it."""
    fresh_each_test = os.environ.get("CODESIFT_TEST_FRESH_DATABASES", "") not in ("", "0")
    database = ReusableDatabase(codesift_template, reuse=not fresh_each_test)
    yield database
    if database.exists:
        database.drop()


@pytest.fixture
def postgresql(test_database: ReusableDatabase) -> Iterator[psycopg.Connection]:
    """A superuser connection to a database in the state of a fresh clone of the
    migrated template; after the test it is reset for the next one, or dropped when a
    reset cannot restore it (tests/reusable_database.py)."""
    conn = test_database.open()
    conn.autocommit = False  # as a new connection from pytest-postgresql's fixture
    try:
        yield conn
    finally:
        conn.close()
        test_database.close()


def _dsn_of(conn: psycopg.Connection, **overrides) -> str:
    params = {k: v for k, v in conninfo_to_dict(conn.info.dsn).items() if v}
    if CONNECT["password"]:
        params["password"] = CONNECT["password"]
    params.update(overrides)
    return make_conninfo(**params)


@pytest.fixture
def db(postgresql: psycopg.Connection, snapshots: "Snapshots") -> psycopg.Connection:
    """A superuser connection to a fresh, migrated database (autocommit)."""
    postgresql.autocommit = True
    _search_codesift(postgresql)
    postgresql.execute("set search_path = codesift, public")
    return postgresql


def _search_codesift(conn: psycopg.Connection) -> None:
    """The database's search_path, as migrate sets it: database-level settings are not
    copied from a template. `conn` in autocommit."""
    conn.execute(f'alter database "{conn.info.dbname}" set search_path = codesift, public')


@pytest.fixture
def dsn(db: psycopg.Connection) -> str:
    """The DSN of the fresh test database, for the CLI and the loader."""
    return _dsn_of(db)


@pytest.fixture
def app_connect(db: psycopg.Connection) -> Iterator[Callable[..., psycopg.Connection]]:
    """Open connections as the non-owner application role, optionally with a tenant set."""
    opened: list[psycopg.Connection] = []

    def connect(tenant_id: int | None = None) -> psycopg.Connection:
        conn = psycopg.connect(_dsn_of(db, user="codesift_app"), autocommit=True)
        if tenant_id is not None:
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant_id),))
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()


class RepoMaker:
    """make_repo(files, name): a real git repository in folder/name from {path: text}."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, files: dict[str, str], name: str = "repo") -> Path:
        root = self.folder / name
        root.mkdir()
        # without git's sample hooks and other template files: half the files a snapshot
        # copies for each test
        git(root, "init", "-q", "-b", "main", "--template=")
        (root / ".git" / "hooks").mkdir()
        write_files(root, files)
        commit(root, "initial")
        return root


@pytest.fixture
def make_repo(tmp_path: Path) -> RepoMaker:
    """Create a real git repository in the test's temp folder from {path: text}."""
    return RepoMaker(tmp_path)


T = TypeVar("T")
_SESSION_SNAPSHOTS: "Snapshots | None" = None


@dataclass
class Snapshot:
    """A database that the sample repositories were indexed into, and its repositories."""

    dbname: str
    folder: Path  # the repositories it indexed, each a folder here
    value: Any  # what the indexing function returned
    fresh: tuple  # the state of a freshly migrated database, which a restore starts from
    tables: list[tuple[str, list[str], bytes]]  # (table, its stored columns, binary COPY)
    sequences: list[tuple[str, int]]  # (sequence, last_value) of those used


class Snapshots:
    """Indexed once per session, copied into each test's fresh database.

    load(key, index, dsn, make_repo): the first call of the session runs index(dsn, make_repo)
    against a new clone of the migrated template with a session folder for its repositories,
    and keeps that database's codesift rows (binary COPY) and sequence positions; every call
    then writes them into the test's database (triggers off: the extraction already ran),
    and copies the repositories into
    make_repo's folder (checkout paths rewritten to the copies), and returns index's value. When
    the test's database is not a fresh clone (the test indexed something first) it runs
    index(dsn, make_repo) there instead. index's value must not hold make_repo's paths:
    the copies have the same names in the test's folder.
    """

    def __init__(self, template: NoopExecutor, folder: Path) -> None:
        self.template = template
        self.folder = folder
        self.built: dict[str, Snapshot] = {}
        self.created: set[str] = set()

    def load(self, key: str, index: Callable[[str, RepoMaker], T], dsn: str, make_repo) -> T:
        snap = self.built.get(key) or self._build(key, index)
        if not self._restore(snap, dsn, make_repo.folder):
            return index(dsn, make_repo)
        value: T = snap.value
        return value

    def load_repos(
        self, key: str, repos: dict[str, tuple[str, dict[str, str]]], dsn: str, make_repo
    ) -> None:
        """load() of {name: (tenant, files)}: each made a repository in make_repo's folder
        and indexed under its name for its tenant, without vectors."""
        self.load(key, self.repos(repos), dsn, make_repo)

    @contextmanager
    def database(
        self, key: str, index: Callable[[str, RepoMaker], Any], folder: Path
    ) -> Iterator[tuple[str, Any]]:
        """A database of its own holding what load(key, index) loads, and the repositories
        copied into `folder`; yields its DSN and index's value, and drops it at the end. For
        the tests of a module that only read, sharing a server: no per-test reset is there
        to undo what one test would change for the next."""
        snap = self.built.get(key) or self._build(key, index)
        dbname, janitor = self._clone("shared", key)
        try:
            dsn = self._dsn(dbname)
            with psycopg.connect(dsn, autocommit=True) as conn:
                _search_codesift(conn)
            assert self._restore(snap, dsn, folder)
            yield dsn, snap.value
        finally:
            janitor.drop()
            self.created.discard(dbname)

    def repos(
        self, repos: dict[str, tuple[str, dict[str, str]]]
    ) -> Callable[[str, RepoMaker], None]:
        """The index function of load_repos(key, repos)."""
        return functools.partial(index_repos, repos=repos)

    def _dsn(self, dbname: str) -> str:
        t = self.template
        return make_conninfo(
            host=t.host, port=t.port, user=t.user, password=t.password or None, dbname=dbname
        )

    def _janitor(self, dbname: str) -> DatabaseJanitor:
        return clone_janitor(self.template, dbname)

    def _clone(self, kind: str, key: str) -> tuple[str, DatabaseJanitor]:
        """A new clone of the migrated template named after `kind` and `key` (one left by an
        earlier failure is dropped first), dropped at the end of the session if not before."""
        name = f"codesift_{kind}_{os.getpid()}_{re.sub(r'[^a-z0-9_]', '_', key.lower())}"[:63]
        janitor = self._janitor(name)
        janitor.drop()
        self.created.add(name)
        janitor.init()
        return name, janitor

    def _build(self, key: str, index: Callable[[str, RepoMaker], Any]) -> Snapshot:
        dbname, _ = self._clone("snap", key)
        folder = self.folder / dbname
        shutil.rmtree(folder, ignore_errors=True)  # a build that failed in an earlier test
        folder.mkdir()
        dsn = self._dsn(dbname)
        with psycopg.connect(dsn) as conn:
            fresh = state(conn)
        value = index(dsn, RepoMaker(folder))
        with psycopg.connect(dsn) as conn:
            empty = {t for t, n in fresh[0].items() if n == 0}
            counts = state(conn)[0]
            tables = [
                (t, cols, _copy_out(conn, t, cols))
                for t, cols in table_columns(conn)
                if counts[t] or t not in empty
            ]
            sequences = conn.execute(
                "select format('codesift.%I', sequencename), last_value from pg_sequences"
                " where schemaname = 'codesift' and last_value is not null"
            ).fetchall()
        snap = Snapshot(dbname, folder, value, fresh, tables, sequences)
        self.built[key] = snap
        return snap

    def _restore(self, snap: Snapshot, dsn: str, folder: Path) -> bool:
        with psycopg.connect(dsn) as dst:
            if state(dst) != snap.fresh:
                return False
            dst.execute("set session_replication_role = replica")  # no triggers, no FK checks
            for table, cols, rows in snap.tables:
                name = sql.Identifier("codesift", table)
                columns = sql.SQL(", ").join(map(sql.Identifier, cols))
                write = sql.SQL("copy {} ({}) from stdin (format binary)")
                dst.execute(sql.SQL("delete from only {}").format(name))
                with dst.cursor().copy(write.format(name, columns)) as into:
                    into.write(rows)
            for sequence, last in snap.sequences:
                dst.execute("select setval(%s::regclass, %s)", (sequence, last))
            for repo in sorted(snap.folder.iterdir()):
                shutil.copytree(repo, folder / repo.name, symlinks=True)
            dst.execute(
                "update codesift.repositories set checkout_path = %s || substr(checkout_path, %s)"
                " where starts_with(checkout_path, %s)",
                (str(folder), len(str(snap.folder)) + 1, f"{snap.folder}/"),
            )
        return True

    def drop(self) -> None:
        for dbname in self.created:
            self._janitor(dbname).drop()


def _copy_out(conn: psycopg.Connection, table: str, cols: list[str]) -> bytes:
    """A table's rows as binary COPY, held for every restore (the snapshot database is not
    read again)."""
    read = sql.SQL("copy (select {} from only {}) to stdout (format binary)").format(
        sql.SQL(", ").join(map(sql.Identifier, cols)), sql.Identifier("codesift", table)
    )
    with conn.cursor().copy(read) as copy:
        return b"".join(bytes(block) for block in copy)


def index_repos(dsn: str, make_repo, repos: dict[str, tuple[str, dict[str, str]]]) -> None:
    """Each repository {name: (tenant, files)} made and indexed without vectors."""
    with psycopg.connect(dsn) as conn:
        for name, (tenant, files) in repos.items():
            root = make_repo(files, name=name)
            index_repository(conn, root, name=name, tenant=tenant, embed=False, show_progress=False)


@pytest.fixture(scope="session")
def snapshots(
    codesift_template: NoopExecutor, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Snapshots]:
    """The session's snapshot databases (dropped at the end of the session)."""
    global _SESSION_SNAPSHOTS
    registry = Snapshots(codesift_template, tmp_path_factory.mktemp("snapshots"))
    _SESSION_SNAPSHOTS = registry
    yield registry
    _SESSION_SNAPSHOTS = None
    registry.drop()


def session_snapshots() -> Snapshots | None:
    """The snapshots fixture's registry while a database test runs (for helpers that are
    plain functions, such as tests/security/two_tenants.py), else None."""
    return _SESSION_SNAPSHOTS


def git(root: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    ).stdout


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()
