"""What `codesift mcp` runs first, before the MCP SDK is imported: over stdio, the answer
to `initialize` (its Settings are in mcp_settings).

An agent that starts a stdio server waits for the answer to `initialize` before anything
else, and importing the SDK (mcp, mcp_types, pydantic, starlette) takes most of a second, on
a loaded machine several. So serve() reads the client's first message itself and, when it is
`initialize`, answers it at once from constants (codesift's name, version, instructions
(mcp_settings) and capabilities, and the protocol version chosen as the SDK chooses it).
Only then does it import mcp_server, which gives that same message to the SDK (its session
must see the handshake), drops the SDK's own answer to it (a difference from ours is
reported on stderr; tests/mcp checks there is none) and serves the rest. Nothing here
touches the database either: the first tool call does (mcp_server.Backend), so a server
whose database is down still starts, lists its tools and says per call what is wrong.

CODESIFT_MCP_MODULES_LOG (for tests): a file to which every answer the stdio server sends
appends one JSON line, {"id": <the answer's id>, "modules": [the modules loaded then]}; it
shows what had been imported when `initialize` was answered.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import sys
from typing import Any, BinaryIO

from .mcp_settings import INSTRUCTIONS, NAME, Settings

# what build_server's server advertises (tests/mcp compares this answer with the SDK's)
CAPABILITIES: dict[str, Any] = {
    "resources": {"subscribe": False, "listChanged": False},
    "tools": {"listChanged": False},
}
# the protocol versions the SDK negotiates with `initialize` (mcp_types.version
# HANDSHAKE_PROTOCOL_VERSIONS, oldest first): the client's if listed, else the newest
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODULES_LOG = "CODESIFT_MCP_MODULES_LOG"


def serve(settings: Settings) -> None:
    """Serve until the client leaves (stdio) or the process is stopped (HTTP)."""
    if settings.http:
        from .mcp_server import serve_http

        serve_http(settings)
        return
    wire_in, wire_out = _claim_stdio()
    lines = Lines(io.TextIOWrapper(wire_in, encoding="utf-8", errors="replace"))
    first = lines.first()
    if not first:
        return  # the client left without a word
    answer = early_answer(first)
    wire = Wire(wire_out, answer)
    if answer is not None:
        wire.write(json.dumps(answer, separators=(",", ":")) + "\n", early=True)
        wire.flush()
    from .mcp_server import serve_stdio  # the SDK, the tools, the database: only now

    serve_stdio(settings, lines, wire)


def early_answer(line: str) -> dict[str, Any] | None:
    """The answer to the client's first message when it is a well-formed `initialize`
    request, the same the SDK gives; None for anything else (the SDK answers it)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    ident, params = message.get("id"), message.get("params")
    if message.get("method") != "initialize" or not isinstance(params, dict):
        return None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    requested, info = params.get("protocolVersion"), params.get("clientInfo")
    if not (
        isinstance(requested, str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        return None
    from . import version

    return {
        "jsonrpc": "2.0",
        "id": ident,
        "result": {
            "capabilities": CAPABILITIES,
            "instructions": INSTRUCTIONS,
            "protocolVersion": requested
            if requested in HANDSHAKE_VERSIONS
            else HANDSHAKE_VERSIONS[-1],
            "serverInfo": {"name": NAME, "version": version()},
        },
    }


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The client's pipes, moved to private descriptors: fd 0 then reads the null device and
    fd 1 writes to stderr, so that nothing else (a child process, a stray print) reads the
    client's messages or writes between the answers (as the SDK's stdio transport does)."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


class Lines:
    """The client's messages, one a line, as the SDK's stdio transport reads them: the first
    one, which serve() has read (and maybe answered), comes again."""

    def __init__(self, stream: io.TextIOWrapper):
        self.stream = stream
        self.pending: list[str] = []

    def first(self) -> str:
        line = self.stream.readline()
        if line:
            self.pending.append(line)
        return line

    def readline(self) -> str:
        return self.pending.pop() if self.pending else self.stream.readline()


class Wire:
    """The answers to the client, one JSON line each (the SDK's stdio transport writes a
    whole message, then flushes). After an early answer to `initialize`, the SDK's own
    answer to that request is not sent: the client has its answer."""

    def __init__(self, stream: BinaryIO, early: dict[str, Any] | None):
        self.stream = stream
        self.early = early
        self.modules_log = os.environ.get(MODULES_LOG)

    def write(self, text: str, early: bool = False) -> int:
        if self.early is not None and not early and self._drop(text):
            return len(text)
        self.stream.write(text.encode("utf-8"))
        if self.modules_log:
            with open(self.modules_log, "a", encoding="utf-8") as log:
                ident = json.loads(text).get("id")
                log.write(json.dumps({"id": ident, "modules": sorted(sys.modules)}) + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def _drop(self, text: str) -> bool:
        """Whether `text` is the SDK's answer to the `initialize` answered early."""
        assert self.early is not None
        try:
            message = json.loads(text)
        except ValueError:
            return False
        if message.get("id") != self.early["id"] or "method" in message:
            return False
        if message.get("result") != self.early["result"]:
            sys.stderr.write(
                "codesift mcp: the SDK answers initialize otherwise than mcp_start did:"
                f" {text.strip()[:2000]}\n"
            )
        self.early = None
        return True
