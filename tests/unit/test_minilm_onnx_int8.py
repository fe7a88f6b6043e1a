"""The int8 ONNX engine: the quantized graph (per-channel MatMul weights), its disk cache
(keyed apart from the float32 graph's, written atomically, rebuilt when damaged), how close
its vectors are to the float32 ones, and how the engine is chosen and named."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from codesift_db.embed import embedders, minilm, minilm_onnx
from codesift_db.embedtext import embedding_key

pytestmark = pytest.mark.skipif(
    not minilm_onnx.available(), reason="onnxruntime, onnx or the model package is not installed"
)

REFERENCE = Path(__file__).with_name("minilm_reference.json")
SETTINGS = {"embedding_model": minilm.MODEL_NAME, "embedding_dim": str(minilm.DIMENSION)}


@pytest.fixture(scope="module")
def fp32_graph() -> bytes:
    return minilm_onnx.build_graph(minilm.get_model())


@pytest.fixture(scope="module")
def int8_bytes(fp32_graph) -> bytes:
    return minilm_onnx.quantize(fp32_graph)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def quantize_calls(monkeypatch, int8_bytes) -> list[int]:
    """Counts quantizations; each returns the module's (real) quantized graph."""
    calls: list[int] = []

    def counted(graph: bytes) -> bytes:
        calls.append(len(graph))
        return int8_bytes

    monkeypatch.setattr(minilm_onnx, "quantize", counted)
    return calls


def test_the_quantized_graph_has_int8_matmuls_with_a_scale_per_channel(int8_bytes):
    import onnx
    from onnx import numpy_helper

    model = onnx.load_model_from_string(int8_bytes)
    ops = {n.op_type for n in model.graph.node}
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    int8_weights = [w for w in weights.values() if w.dtype == np.int8 and w.ndim == 2]
    # every linear layer (q/k/v, out, ff1, ff2 in 6 layers) is quantized, attention is not
    assert len(int8_weights) == 6 * 4
    ff1_scale = next(w for n, w in weights.items() if "ff1" in n and "scale" in n)
    assert ff1_scale.shape == (1536,)  # one scale per output channel, not one per tensor


def test_the_int8_graph_is_cached_and_read_back(cache, quantize_calls):
    first = minilm_onnx.OnnxMiniLM(int8=True)
    names = sorted(f.name for f in cache.iterdir() if minilm_onnx.QUANTIZATION in f.name)
    assert len(names) == 2 and names[1] == names[0] + minilm_onnx.DIGEST_SUFFIX  # as fp32's
    assert len(list(cache.iterdir())) == 4  # and the float32 graph's two
    assert len(quantize_calls) == 1
    second = minilm_onnx.OnnxMiniLM(int8=True)
    assert len(quantize_calls) == 1  # read from the cache, not quantized again
    texts = ["where are redirects followed?", "def send(self, request): pass"]
    assert np.array_equal(first.encode(texts), second.encode(texts))


def test_float32_caches_its_graph_and_never_quantizes(cache, quantize_calls):
    minilm_onnx.OnnxMiniLM()
    names = sorted(f.name for f in cache.iterdir())
    assert len(names) == 2 and all(n.startswith("minilm-float32-") for n in names)
    assert names[1] == names[0] + minilm_onnx.DIGEST_SUFFIX
    assert quantize_calls == []


def test_the_cache_key_follows_the_graph_and_the_quantizer(cache, fp32_graph, monkeypatch):
    path = minilm_onnx.cache_path(fp32_graph)
    assert path.parent == cache
    quantization = minilm_onnx.QUANTIZATION
    other = bytearray(fp32_graph)
    other[-1] ^= 1  # another model (one byte of a weight)
    assert minilm_onnx.cache_path(bytes(other)) != path
    monkeypatch.setattr(minilm_onnx, "QUANTIZATION", "dynamic-int8-per-tensor-all")
    assert minilm_onnx.cache_path(fp32_graph) != path
    import onnxruntime

    monkeypatch.setattr(minilm_onnx, "QUANTIZATION", quantization)
    assert minilm_onnx.cache_path(fp32_graph) == path
    monkeypatch.setattr(onnxruntime, "__version__", "0.0.0")
    assert minilm_onnx.cache_path(fp32_graph) != path


def test_a_cached_float32_graph_keys_the_int8_graph_by_its_name(cache, fp32_graph, quantize_calls):
    fp32 = cache / "minilm-float32-0123456789abcdef01234567.onnx"
    cache.mkdir()
    fp32.write_bytes(fp32_graph)
    built = minilm_onnx.int8_model(str(fp32))
    assert built == str(minilm_onnx.cache_path(str(fp32))) and len(quantize_calls) == 1
    assert minilm_onnx.cache_path(str(fp32)) != minilm_onnx.cache_path(fp32_graph)
    other = str(fp32.with_name("minilm-float32-76543210fedcba9876543210.onnx"))
    assert minilm_onnx.cache_path(other) != minilm_onnx.cache_path(str(fp32))
    fp32.unlink()  # a warm start reads the float32 file no more: its name is the key
    assert minilm_onnx.int8_model(str(fp32)) == built and len(quantize_calls) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda good: b"",  # empty
        lambda good: good[: len(good) // 2],  # cut short
        lambda good: b"not a cache file at all",
        lambda good: good[:-1] + bytes([good[-1] ^ 0xFF]),  # one byte changed: digest fails
    ],
    ids=["empty", "partial", "garbage", "flipped-byte"],
)
def test_a_damaged_cache_file_is_rebuilt(cache, fp32_graph, int8_bytes, quantize_calls, damage):
    path = Path(minilm_onnx.int8_model(fp32_graph))
    assert path == minilm_onnx.cache_path(fp32_graph) and path.read_bytes() == int8_bytes
    path.write_bytes(damage(int8_bytes))
    assert minilm_onnx.int8_model(fp32_graph) == str(path)
    assert len(quantize_calls) == 2  # quantized again, not read damaged
    assert path.read_bytes() == int8_bytes  # and the file is whole again
    digest = path.name + minilm_onnx.DIGEST_SUFFIX
    assert sorted(p.name for p in cache.iterdir()) == [path.name, digest]  # no temporary files


def test_a_whole_cache_file_that_is_not_a_model_is_rebuilt(cache, quantize_calls):
    # the engine's int8 graph: the one made from its cached float32 graph
    path = Path(minilm_onnx.int8_model(minilm_onnx.float32_model(minilm.get_model())))
    good = path.read_bytes()
    garbage = b"this is no ONNX model"
    path.write_bytes(garbage)  # and a digest that matches it: whole, but no model
    path.with_name(path.name + minilm_onnx.DIGEST_SUFFIX).write_text(
        hashlib.sha256(garbage).hexdigest()
    )
    engine = minilm_onnx.OnnxMiniLM(int8=True)
    assert len(quantize_calls) == 2 and path.read_bytes() == good
    assert engine.encode(["a", "b"]).shape == (2, minilm.DIMENSION)


def test_the_older_cache_format_is_pruned(cache, fp32_graph, int8_bytes, quantize_calls):
    old = minilm_onnx.cache_path(fp32_graph).with_suffix(".onnx.cache")  # tag, digest, model
    old.parent.mkdir(parents=True)
    old.write_bytes(b"codesift-onnx-1\n" + hashlib.sha256(int8_bytes).digest() + int8_bytes)
    path = Path(minilm_onnx.int8_model(fp32_graph))
    assert path.read_bytes() == int8_bytes and not old.exists()


def test_an_unwritable_cache_is_not_an_error(tmp_path, monkeypatch, fp32_graph, quantize_calls):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(blocker / "cache"))
    assert isinstance(minilm_onnx.int8_model(fp32_graph), bytes)  # given as bytes, not a path
    assert isinstance(minilm_onnx.int8_model(fp32_graph), bytes)
    assert len(quantize_calls) == 2  # nothing cached: quantized each time


def test_int8_vectors_are_close_to_float32_but_not_equal(cache):
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    texts = reference["texts"] + [
        "class Session:\n    def send(self, request):\n        return self.adapter.send(request)",
        "func (c *Context) JSON(code int, obj any) { c.Render(code, render.JSON{Data: obj}) }",
    ]
    fp32 = minilm.get_model().encode(texts)
    int8 = minilm_onnx.OnnxMiniLM(int8=True).encode(texts)
    cosines = np.sum(fp32 * int8, axis=1)
    # short texts move most (the fixture's one-liners: ~0.976); the margin is for int8
    # kernels that round differently on other CPUs
    assert cosines.min() >= 0.96
    assert cosines.mean() >= 0.985
    assert cosines.min() < 0.9999  # really quantized: not the float32 vectors
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    # the nearest text of each text is itself under both: the geometry is kept
    assert (np.argmax(int8 @ fp32.T, axis=1) == np.arange(len(texts))).all()


def test_the_engine_is_chosen_by_the_environment(monkeypatch, cache):
    env = embedders.ENGINE_ENV
    assert embedders.builtin_engine({}) == embedders.DEFAULT_ENGINE
    for name in embedders.ENGINES:
        assert embedders.builtin_engine({env: name}) == name
    with pytest.raises(embedders.EmbedderUnavailable, match="onnx-int8"):
        embedders.builtin_engine({env: "int4"})
    monkeypatch.setenv(env, "onnx-int8")
    builtin = embedders.BuiltinMiniLM()
    builtin.encode(["a", "b"])
    assert isinstance(builtin._engine, minilm_onnx.OnnxMiniLM) and builtin._engine.int8
    # one text too (a loader embeds documents; the server's questions are float32):
    # a vector stored under the int8 identity is always the int8 engine's
    one = builtin.encode(["where are redirects followed?"])
    assert one == builtin._engine.encode(["where are redirects followed?"]).tolist()
    assert one != minilm.get_model().encode(["where are redirects followed?"]).tolist()
    monkeypatch.setenv(env, "onnx")
    fp32 = embedders.BuiltinMiniLM()
    fp32.encode(["a", "b"])
    assert isinstance(fp32._engine, minilm_onnx.OnnxMiniLM) and not fp32._engine.int8


def test_inside_the_server_a_question_is_embedded_in_float32(monkeypatch):
    env = embedders.ENGINE_ENV
    monkeypatch.setitem(__import__("sys").modules, "plpy", object())
    assert embedders.builtin_engine({}) == "onnx"
    assert embedders.builtin_engine({env: "onnx-int8"}) == "onnx"
    assert embedders.builtin_engine({env: "numpy"}) == "numpy"
    with pytest.raises(embedders.EmbedderUnavailable, match="onnx-int8"):
        embedders.builtin_engine({env: "nonsense"})
    assert embedders.vector_identity(SETTINGS, {env: "onnx-int8"}) == minilm.MODEL_NAME


def test_int8_vectors_are_stored_under_their_own_identity():
    env = embedders.ENGINE_ENV
    fp32 = {embedders.vector_identity(SETTINGS, {env: e}) for e in ("numpy", "onnx")}
    assert fp32 == {minilm.MODEL_NAME}  # the same vectors, the same keys
    int8 = embedders.vector_identity(SETTINGS, {env: "onnx-int8"})
    assert int8 == minilm.MODEL_NAME + minilm_onnx.INT8_SUFFIX
    assert embedding_key(int8, "def f(): pass") != embedding_key(minilm.MODEL_NAME, "def f(): pass")
    endpoint = {**SETTINGS, "embedding_provider": "openai", "embedding_model": "nomic"}
    assert embedders.vector_identity(endpoint, {env: "onnx-int8"}) == "nomic"
