"""A real OpenAI-compatible embeddings server on loopback, for the endpoint embedder's tests.

It answers POST /v1/embeddings with the built-in MiniLM's vectors (so results through the
endpoint can be compared with the built-in ones) in reverse order with explicit indexes, and
records every request. `mode` makes it misbehave: wrong_dim, garbage, huge, slow, error,
redirect, short (fewer vectors than inputs), unnormalised. Like a real server it also
refuses a request holding a text longer than `max_input_chars` (HTTP 413, `refusal` the
body), and answers the next `fail_next` requests with HTTP 500. Started on a given port it
stands for an endpoint that comes back up where it was down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from codesift_db.embed import minilm


class EmbeddingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.mode = "ok"
        self.max_input_chars: int | None = None
        self.refusal = b'{"error": {"message": "input is too long for this model"}}'
        self.fail_next = 0
        self.requests: list[dict] = []
        self.statuses: list[int] = []  # of every answer, in order
        self.answered: list[tuple[int, list[str]]] = []  # (status, the texts it answered)
        self.headers_seen: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def embedded(self) -> list[str]:
        """Every text the server answered with a vector."""
        with self.lock:
            return [t for status, texts in self.answered if status == 200 for t in texts]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer
    _texts: list[str] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        with self.server.lock:
            self.server.statuses.append(status)
            self.server.answered.append((status, list(self._texts)))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        self._texts = request.get("input", []) if isinstance(request, dict) else []
        mode = self.server.mode
        with self.server.lock:
            self.server.requests.append(request)
            self.server.headers_seen.append(dict(self.headers))
            failing = self.server.fail_next > 0
            self.server.fail_next -= failing
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": "not found"}')
            return
        if failing:
            self._send(500, b'{"error": {"message": "upstream worker crashed"}}')
            return
        limit = self.server.max_input_chars
        if limit is not None and any(len(t) > limit for t in request["input"]):
            self._send(413, self.server.refusal)
            return
        if mode == "error":
            self._send(500, b'{"error": {"message": "model not loaded"}}')
            return
        if mode == "redirect":
            self._send(307, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
            return
        if mode == "garbage":
            self._send(200, b"<html>this is not json</html>")
            return
        if mode == "huge":
            # a well-formed start, then far more than any embeddings answer needs
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": [{"index": 0, "embedding": [')
            chunk = b"0.1," * 16384
            try:
                for _ in range(4096):  # up to 256 MiB; the client hangs up long before
                    self.wfile.write(chunk)
            except OSError:
                pass
            return
        if mode == "slow":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(600):  # a byte every 0.1 s: never finishes in time
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return
        texts = request["input"]
        vectors = minilm.get_model().encode(texts).tolist()
        if mode == "wrong_dim":
            vectors = [v[:100] for v in vectors]
        if mode == "unnormalised":
            vectors = [[3.0 * x for x in v] for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if mode == "short":
            data = data[:-1]
        data.reverse()  # clients must order by index, not by position
        body = {"object": "list", "model": request.get("model"), "data": data}
        self._send(200, json.dumps(body).encode())


@contextmanager
def embedding_server(port: int = 0) -> Iterator[EmbeddingServer]:
    server = EmbeddingServer(port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
