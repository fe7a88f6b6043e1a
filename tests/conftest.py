"""Fixtures: a real PostgreSQL (CODESIFT_DSN, else the embedded cluster), a
template database migrated once per session, and a fresh clone of it per test."""

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from codesift.db import current_dsn
from codesift.migrate import migrate
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql import factories

SERVER = conninfo_to_dict(current_dsn())
CONNECT = {
    "host": SERVER.get("host", "localhost"),
    "port": SERVER.get("port", 5432),
    "user": SERVER.get("user", "postgres"),
    "password": SERVER.get("password"),
}


def migrate_template(host, port, user, dbname, password=None, **_) -> None:
    """Install codesift into the template database that every test clones."""
    with psycopg.connect(host=host, port=port, user=user, dbname=dbname, password=password) as conn:
        migrate(conn)


codesift_template = factories.postgresql_noproc(
    **CONNECT, dbname=f"codesift_test_{os.getpid()}", load=[migrate_template]
)
blank_server = factories.postgresql_noproc(**CONNECT, dbname=f"codesift_blank_{os.getpid()}")
postgresql = factories.postgresql("codesift_template")
blank_postgresql = factories.postgresql("blank_server")


def _dsn_of(conn: psycopg.Connection, **overrides) -> str:
    params = {k: v for k, v in conninfo_to_dict(conn.info.dsn).items() if v}
    if CONNECT["password"]:
        params["password"] = CONNECT["password"]
    params.update(overrides)
    return make_conninfo(**params)


@pytest.fixture
def db(postgresql: psycopg.Connection) -> psycopg.Connection:
    """A superuser connection to a fresh, migrated database (autocommit)."""
    postgresql.autocommit = True
    # database-level settings are not copied from a template: set it again
    postgresql.execute(
        f'alter database "{postgresql.info.dbname}" set search_path = codesift, public'
    )
    postgresql.execute("set search_path = codesift, public")
    return postgresql


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


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Create a real git repository in a temp folder from {path: text}."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        write_files(root, files)
        commit(root, "initial")
        return root

    return make


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
