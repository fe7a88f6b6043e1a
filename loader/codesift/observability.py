"""What `codesift mcp --http` and `codesift worker` tell an operator: JSON log lines on
stderr and Prometheus metrics on a port of their own.

The metrics are served apart from the MCP port, on `--metrics-port`, bound to loopback
unless `--metrics-host` says otherwise, and then only with a token: CODESIFT_METRICS_TOKEN,
sent as `Authorization: Bearer <token>`. So a tenant holding an MCP token (or anyone who
reaches the MCP port) never reads them; what they hold is counts labelled by tenant id,
tool name and error kind, never a tenant's name, a token, a path or a question.

The log lines are JSON objects, one a line, through the stdlib logging module
(REQUEST_LOGGER): a field a client sent is escaped by the encoder, so no request can
forge a line.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from .errors import CodesiftError

REQUEST_LOGGER = "codesift.requests"
METRICS_TOKEN_VARIABLE = "CODESIFT_METRICS_TOKEN"
METRICS_PATH = "/metrics"
MAX_TOKEN_CHARS = 200


class JsonLines(logging.Formatter):
    """A record as one JSON object: its time, level and message, then the fields passed
    as `extra={"fields": {...}}`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        return json.dumps(line, default=str, ensure_ascii=True)


def request_logger() -> logging.Logger:
    """REQUEST_LOGGER, writing JSON lines to stderr (set up once; not the root logger's
    handlers, so that the SDK's own logging keeps its form)."""
    logger = logging.getLogger(REQUEST_LOGGER)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLines())
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metrics_token(host: str, environ: dict[str, str] | None = None) -> str | None:
    """The token /metrics requires (CODESIFT_METRICS_TOKEN), or None on loopback without
    one. Beyond loopback a token is required: CodesiftError without one."""
    token = (environ if environ is not None else dict(os.environ)).get(METRICS_TOKEN_VARIABLE)
    token = (token or "").strip() or None
    if token is not None and (len(token) < 16 or len(token) > MAX_TOKEN_CHARS):
        raise CodesiftError(
            f"{METRICS_TOKEN_VARIABLE}: a secret of 16 to {MAX_TOKEN_CHARS} characters"
        )
    if token is None and not _loopback(host):
        raise CodesiftError(
            f"--metrics-host {host} is not loopback: set {METRICS_TOKEN_VARIABLE} to a secret "
            "that scrapers send as 'Authorization: Bearer <token>', or serve the metrics on "
            "127.0.0.1"
        )
    return token


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass


def metrics_app(registry: CollectorRegistry, token: str | None) -> Callable:
    """A WSGI app answering GET/HEAD /metrics from `registry`, with the bearer `token`
    when there is one; 404 elsewhere, 405 for other methods, 401 without the token."""
    exposition = make_wsgi_app(registry, disable_compression=True)
    expected = f"Bearer {token}".encode() if token else None

    def app(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        def answer(status: str, body: bytes, *headers: tuple[str, str]) -> list[bytes]:
            start_response(
                status,
                [("Content-Type", "text/plain; charset=utf-8"), *headers],
            )
            return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]

        if environ.get("PATH_INFO") != METRICS_PATH:
            return answer("404 Not Found", b"not found\n")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return answer("405 Method Not Allowed", b"GET or HEAD\n", ("Allow", "GET, HEAD"))
        if expected is not None:
            sent = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
            if not hmac.compare_digest(sent, expected):
                return answer(
                    "401 Unauthorized",
                    b"send the metrics token\n",
                    ("WWW-Authenticate", 'Bearer realm="codesift-metrics"'),
                )
        head = environ["REQUEST_METHOD"] == "HEAD"
        # the whole registry (no name[] filter), and for HEAD its headers only
        body = exposition({**environ, "QUERY_STRING": "", "REQUEST_METHOD": "GET"}, start_response)
        return [b""] if head else body

    return app


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int, token: str | None
) -> ThreadingWSGIServer:
    """Serve `registry` at http://host:port/metrics from a daemon thread; the server (its
    port: server_address[1])."""

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    try:
        httpd = make_server(host, port, metrics_app(registry, token), Server, _Quiet)
    except OSError as exc:
        raise CodesiftError(f"cannot serve metrics on {host}:{port}: {exc.strerror}") from None
    threading.Thread(target=httpd.serve_forever, name="codesift-metrics", daemon=True).start()
    return httpd
