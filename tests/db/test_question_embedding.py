"""A question embedded by the database (ONNX Runtime, on a worker thread beside the lexical
legs): the same vector as the loader's NumPy pass, the same pack as with that vector given,
and a backend that stays sound when a call is cancelled while the worker runs."""

import numpy as np
import psycopg
import pytest
from codesift_db.embed import minilm, minilm_onnx
from codesift_db.pipeline import question

from tests.db.test_retrieval import _index_requestsish

pytestmark = pytest.mark.skipif(
    not minilm_onnx.available(), reason="onnxruntime, onnx or the model package is not installed"
)

SHORT = "where are redirects followed?"
LONG = (
    "Session.send loses cookies after a redirect. When `allow_redirects` is true, "
    "`resolve_redirects` follows the Location header but the cookies merged by "
    "`merge_cookies` on the first response are not sent with the next request. "
    + "Steps: create a Session, send a request that answers 302 with Set-Cookie. " * 6
    + "Expected the cookie on the second request; it is missing."
)


@pytest.fixture
def acme(db, dsn, make_repo, snapshots) -> int:
    snapshots.load("requestsish", _index_requestsish, dsn, make_repo)
    tenant = db.execute("select id from tenants where name = 'acme'").fetchone()[0]
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return tenant


def _vector(db, text: str) -> np.ndarray:
    literal = db.execute("select embed_query(%s)::text", (text,)).fetchone()[0]
    return np.asarray([float(x) for x in literal.strip("[]").split(",")], dtype=np.float32)


def _pack(db, text: str, embedding: str | None = None) -> list[tuple]:
    rows = db.execute(
        "select path, start_line, end_line, round(score::numeric, 6) from pack_context("
        "%s, repo => 'requestsish', query_embedding => %s::vector)",
        (text, embedding),
    ).fetchall()
    assert rows
    return rows


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def test_the_databases_vector_is_the_numpy_pass_vector(db, acme):
    for text in (SHORT, LONG, "x"):
        want = minilm.get_model().encode([text])[0]
        assert np.abs(_vector(db, text) - want).max() < 1e-5


@pytest.mark.parametrize("text", [SHORT, LONG])
def test_a_question_embedded_beside_the_legs_packs_as_its_vector_given(db, acme, text):
    reading = question.read(text)
    embedded = reading.digest if reading.long else text  # what the database embeds
    assert reading.long == (text is LONG)
    given = _literal(minilm.get_model().encode([embedded])[0])
    assert _pack(db, text) == _pack(db, text, given)


def test_a_call_cancelled_while_the_worker_runs_leaves_the_backend_sound(db, acme):
    want = _pack(db, LONG)
    cancelled = 0
    for ms in (1, 2, 3, 5, 8, 12, 20, 30, 50, 80):
        db.execute(f"set statement_timeout = {ms}")
        try:
            _pack(db, LONG)
        except psycopg.errors.QueryCanceled:
            cancelled += 1
        finally:
            db.execute("reset statement_timeout")
        # the same connection: every later question still gets its own vector and pack
        assert _pack(db, LONG) == want
        assert np.abs(_vector(db, SHORT) - minilm.get_model().encode([SHORT])[0]).max() < 1e-5
    assert cancelled  # at least the shortest timeouts cancelled the call
