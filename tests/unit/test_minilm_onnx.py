"""The ONNX Runtime engine of all-MiniLM-L6-v2 (the loader's fast path) gives the vectors of
the NumPy forward pass and of sentence-transformers (tests/unit/minilm_reference.json)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from codesift_db.embed import embedders, minilm, minilm_onnx

pytestmark = pytest.mark.skipif(
    not minilm_onnx.available(), reason="onnxruntime, onnx or the model package is not installed"
)

REFERENCE = Path(__file__).with_name("minilm_reference.json")
LONG_CODE = "\n".join(
    f"def handler_{i}(request, retries={i}):\n    return session.get(f'/items/{i}').json()"
    for i in range(80)
)
TEXTS = [
    "",
    "x",
    "where are redirects followed?",
    LONG_CODE,  # past 256 word pieces: truncated like the NumPy pass
    LONG_CODE[:700],
    "def 関数():\n    return '🚀'  # CJK and emoji",
    "class Session:\n    def send(self, request):\n        return self.adapter.send(request)\n",
]


@pytest.fixture(scope="module")
def engine() -> minilm_onnx.OnnxMiniLM:
    return minilm_onnx.get_model()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def test_matches_the_sentence_transformers_fixture(engine):
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    got = engine.encode(reference["texts"])
    expected = np.asarray(reference["vectors"], dtype=np.float64)
    assert _cosines(got, expected).min() >= 0.9999
    assert np.abs(got - expected).max() < 1e-5  # the fixture is rounded to 6 decimals


def test_matches_the_numpy_pass_in_input_order(engine):
    texts = TEXTS * 3  # several batches, lengths mixed: results must come back in order
    got = engine.encode(texts, batch_size=4)
    want = minilm.get_model().encode(texts)
    assert got.shape == (len(texts), minilm.DIMENSION)
    assert _cosines(got, want).min() >= 0.9999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_a_vector_does_not_depend_on_its_batch(engine):
    alone = engine.encode([TEXTS[2]])[0]
    padded = engine.encode([TEXTS[2], LONG_CODE])[0]  # padded to the long text's length
    assert float(alone @ padded) >= 0.99999


def test_empty_input_and_a_bare_string(engine):
    assert engine.encode([]).shape == (0, minilm.DIMENSION)
    with pytest.raises(TypeError):
        engine.encode("not a list")  # type: ignore[arg-type]


def test_builtin_embedder_uses_it_outside_the_server(monkeypatch):
    monkeypatch.delenv("CODESIFT_EMBED_ENGINE", raising=False)
    builtin = embedders.BuiltinMiniLM()
    builtin.encode(TEXTS[:2])
    assert isinstance(builtin._engine, minilm_onnx.OnnxMiniLM)
    monkeypatch.setenv("CODESIFT_EMBED_ENGINE", "numpy")
    numpy_only = embedders.BuiltinMiniLM()
    numpy_only.encode(TEXTS[:2])
    assert isinstance(numpy_only._engine, minilm.MiniLM)


def test_a_question_embedded_beside_the_caller_is_the_numpy_pass_vector(engine):
    want = minilm.get_model().encode(TEXTS)
    waits = [engine.start(text) for text in TEXTS]  # several queued on the one worker
    got = np.stack([wait() for wait in waits])
    assert np.abs(got - want).max() < 1e-5
    assert _cosines(got, want).min() >= 0.99999


def test_the_worker_thread_blocks_every_signal(engine):
    import signal

    from codesift_db.embed import worker_thread

    blocked = worker_thread.run_beside(
        lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [])
    ).result()
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGUSR1} <= set(blocked)
    # and the caller's own mask is as it was
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_an_error_on_the_worker_reaches_the_caller_and_the_worker_goes_on(engine):
    from codesift_db.embed import worker_thread

    def broken():
        raise RuntimeError("the session failed")

    with pytest.raises(RuntimeError, match="session failed"):
        worker_thread.run_beside(broken).result()
    assert np.allclose(
        engine.start("where are redirects followed?")(),
        engine.encode(["where are redirects followed?"])[0],
        atol=1e-6,
    )


def test_the_float32_graph_is_cached_and_a_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(tmp_path))
    stale = tmp_path / "minilm-float32-0123456789abcdef01234567.onnx"  # an older version's
    stale.write_bytes(b"old")
    base = minilm.get_model()
    built = minilm_onnx.build_graph(base)
    path = minilm_onnx.float32_path(base)
    assert minilm_onnx.float32_model(base) == str(path)  # built, cached, given by path
    assert path.parent == tmp_path and path.read_bytes() == built
    assert not stale.exists()  # the other version's graph went when this one was written
    monkeypatch.setattr(minilm_onnx, "build_graph", lambda model: pytest.fail("not from cache"))
    assert minilm_onnx.float32_model(base) == str(path)  # read back, not built
    damaged = bytearray(built)
    damaged[len(damaged) // 2] ^= 1  # one bit of a weight: the digest no longer matches
    path.write_bytes(bytes(damaged))
    monkeypatch.undo()
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(tmp_path))
    assert minilm_onnx.float32_model(base) == str(path)  # built again
    assert path.read_bytes() == built  # and the cache mended
    path.with_name(path.name + minilm_onnx.DIGEST_SUFFIX).unlink()  # half written
    assert minilm_onnx.float32_model(base) == str(path) and path.read_bytes() == built


def test_a_graph_hashed_whole_once_is_trusted_until_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(tmp_path))
    base = minilm.get_model()
    path = Path(minilm_onnx.float32_model(base))
    record = path.with_name(path.name + minilm_onnx.DIGEST_SUFFIX)
    hashed = []
    real = minilm_onnx.hashlib.sha256

    def counting(data=b""):
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(minilm_onnx.hashlib, "sha256", counting)
    assert minilm_onnx._intact(path) and len(hashed) == 1  # a record of the digest alone
    assert len(record.read_text().split()) == 4  # now digest, size, ctime, inode
    written = path.stat().st_ctime_ns
    os.utime(record, ns=(written, written))  # recorded in the tick the graph was written:
    assert minilm_onnx._intact(path) and len(hashed) == 2  # racily clean, hashed again
    os.utime(record, ns=(written + 2_000_000_000,) * 2)  # recorded a tick later
    assert minilm_onnx._intact(path) and len(hashed) == 2  # trusted, not read
    whole = path.read_bytes()
    damaged = bytearray(whole)
    damaged[len(damaged) // 2] ^= 1
    path.write_bytes(bytes(damaged))  # the same size and inode, a new ctime
    assert not minilm_onnx._intact(path) and len(hashed) == 3
    os.utime(path, ns=(written, written))  # an mtime put back changes the ctime too
    assert not minilm_onnx._intact(path) and len(hashed) == 4
    path.write_bytes(whole)
    assert minilm_onnx._intact(path) and len(hashed) == 5
    assert record.read_text().split()[1:] == [
        str(path.stat().st_size),
        str(path.stat().st_ctime_ns),
        str(path.stat().st_ino),
    ]


def test_an_unwritable_cache_still_gives_the_graph(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(blocked / "cache"))
    base = minilm.get_model()
    assert minilm_onnx.float32_model(base) == minilm_onnx.build_graph(base)
    engine = minilm_onnx.OnnxMiniLM(base)  # a session made from the bytes
    want = minilm.get_model().encode(["where are redirects followed?"])
    assert np.abs(engine.encode(["where are redirects followed?"]) - want).max() < 1e-5


def test_a_runtime_that_cannot_make_a_session_falls_back_to_the_numpy_pass(monkeypatch):
    calls = []

    def broken():
        calls.append(1)
        raise RuntimeError("this CPU lacks an instruction the kernels need")

    monkeypatch.setitem(__import__("sys").modules, "plpy", object())  # inside the server
    monkeypatch.delenv("CODESIFT_EMBED_ENGINE", raising=False)
    monkeypatch.setattr(embedders, "_ONNX_FAILED", [])
    monkeypatch.setattr(minilm_onnx, "get_model", broken)
    text = "where are redirects followed?"
    want = minilm.get_model().encode([text])[0]
    with pytest.warns(RuntimeWarning, match="NumPy pass embeds instead"):
        first = embedders.BuiltinMiniLM().start(text)()
    assert np.abs(np.asarray(first) - want).max() < 1e-6
    again = embedders.BuiltinMiniLM()  # the next question: no second try in this process
    assert np.abs(np.asarray(again.encode([text])[0]) - want).max() < 1e-6
    assert calls == [1] and again.engine == embedders.ENGINE_NUMPY


def test_the_int8_engine_never_stands_in_with_float32_vectors(monkeypatch):
    monkeypatch.setenv("CODESIFT_EMBED_ENGINE", "onnx-int8")
    monkeypatch.setattr(embedders, "_ONNX_FAILED", ["an earlier float32 failure"])

    def broken():
        raise RuntimeError("no session")

    monkeypatch.setattr(minilm_onnx, "get_int8_model", broken)
    with pytest.raises(RuntimeError, match="no session"):
        embedders.BuiltinMiniLM().encode(["a", "b"])
