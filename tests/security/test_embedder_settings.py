"""The embedder's configuration is the owner's alone: no codesift role can point the database's
embed_query at another address (SSRF through codesift.settings), and `migrate` refuses
endpoints and models that would leak a secret into the database or not fit its columns."""

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from codesift.errors import MigrationError
from codesift.migrate import EmbedderChoice, migrate
from psycopg.conninfo import make_conninfo

from tests.embedding_server import embedding_server

ROLES = ("codesift_app", "codesift_loader", "codesift_tenant")
WRITES = (
    "update codesift.settings set value = 'http://169.254.169.254' where key = 'embedding_model'",
    "insert into codesift.settings (key, value) values ('embedding_endpoint', 'http://10.0.0.1')",
    "delete from codesift.settings where key = 'embedding_dim'",
    "truncate codesift.settings",
)


def _settings(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("select key, value from codesift.settings").fetchall())


@pytest.mark.parametrize("role", ROLES)
def test_no_role_can_change_the_embedder(db, dsn, role):
    before = _settings(db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"set role {role}")
        assert _settings(conn) == before  # they may read it (no secret is stored there)
        for statement in WRITES:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert _settings(db) == before


def test_app_role_cannot_shadow_the_settings_table(db, app_connect):
    """A temporary table named settings must not reach embed_query (pinned search_path,
    schema-qualified statement): the query embedding keeps using the real rows."""
    app = app_connect()
    app.execute("create temporary table settings (key text, value text)")
    app.execute(
        "insert into settings values ('embedding_provider', 'openai'),"
        " ('embedding_endpoint', 'http://169.254.169.254'), ('embedding_model', 'x'),"
        " ('embedding_dim', '384')"
    )
    notices: list[str] = []
    app.add_notice_handler(lambda n: notices.append(n.message_primary))
    app.execute("select codesift.embed_query('where are redirects followed?')")
    assert not any("169.254" in n for n in notices)


def test_no_role_may_install_or_migrate(db, dsn):
    with psycopg.connect(make_conninfo(dsn, user="codesift_app"), autocommit=True) as conn:
        with pytest.raises(MigrationError, match="may not install"):
            migrate(conn, embedder=EmbedderChoice("openai", "http://10.0.0.1", "evil", 384))
    assert "embedding_endpoint" not in _settings(db)


@pytest.mark.parametrize(
    "endpoint, message",
    [
        ("http://user:sk-secret@127.0.0.1:11434", "carries credentials"),
        ("https://api.example.com/?api_key=sk-secret", "without a query"),
        ("file:///etc/passwd", "http:// or https://"),
        ("ftp://127.0.0.1/", "http:// or https://"),
    ],
)
def test_migrate_refuses_unsafe_endpoints(db, endpoint, message):
    before = _settings(db)
    with pytest.raises(MigrationError, match=message):
        migrate(db, embedder=EmbedderChoice("openai", endpoint, "nomic-embed-text", 384))
    assert _settings(db) == before


def test_migrate_refuses_a_dimension_the_columns_cannot_hold(db):
    before = _settings(db)
    with pytest.raises(MigrationError, match="cannot hold another size"):
        migrate(db, embedder=EmbedderChoice("openai", "http://127.0.0.1:1", "nomic", 768))
    assert _settings(db) == before


@pytest.mark.parametrize(
    "choice, message",
    [
        (EmbedderChoice("openai", None, "m", 384), "needs --embedding-endpoint"),
        (EmbedderChoice("builtin", "http://127.0.0.1:1", None, None), "is for --embedder openai"),
        (EmbedderChoice("builtin", None, "nomic-embed-text", 768), "built-in embedder is"),
        (EmbedderChoice("telepathy", None, None, None), "--embedder is one of"),
        (EmbedderChoice("openai", "http://127.0.0.1:1", "m\x1b[2J", 384), "printable"),
    ],
)
def test_migrate_refuses_contradictions(db, choice, message):
    with pytest.raises(MigrationError, match=message):
        migrate(db, embedder=choice)


def test_a_new_model_of_the_same_size_makes_every_vector_pending(db, dsn, make_repo):
    from codesift.embedder import pending
    from codesift.indexer import index_repository

    root = make_repo({"a.py": "def one():\n    return 1\n"}, name="a")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="a", tenant="acme", show_progress=False)
        tenant = conn.execute("select id from codesift.tenants where name = 'acme'").fetchone()[0]
        with embedding_server() as server:
            migrate(conn, embedder=EmbedderChoice("openai", server.url, "another-model", 384))
            assert _settings(conn)["embedding_model"] == "another-model"
            assert pending(conn, tenant, "another-model") != (0, 0)  # nothing mixes spaces
            migrate(conn, embedder=EmbedderChoice("builtin"))
        settings = _settings(conn)
    assert "embedding_endpoint" not in settings
    assert (settings["embedding_provider"], settings["embedding_model"]) == (
        "builtin",
        "all-MiniLM-L6-v2",
    )


def test_cli_migrate_records_an_endpoint_and_refuses_a_bad_one(db, dsn):
    codesift = Path(sys.executable).with_name("codesift")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(codesift), "migrate", *args],
            env={**os.environ, "CODESIFT_DSN": dsn},
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    bad = cli(
        "--embedder",
        "openai",
        "--embedding-endpoint",
        "file:///etc/passwd",
        "--embedding-model",
        "m",
        "--embedding-dim",
        "384",
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "http:// or https://" in bad.stderr
    good = cli(
        "--embedder",
        "openai",
        "--embedding-endpoint",
        "http://127.0.0.1:11434",
        "--embedding-model",
        "nomic-embed-text",
        "--embedding-dim",
        "384",
    )
    assert good.returncode == 0, good.stderr
    assert "embedder: openai nomic-embed-text" in good.stderr
    settings = _settings(db)
    assert settings["embedding_endpoint"] == "http://127.0.0.1:11434"
    assert settings["embedding_model"] == "nomic-embed-text"
