"""The parts of observability that need no server: what readiness counts as a pending
migration, when a metrics token is required, and that a log line is one JSON line whatever
a client put in it."""

import json
import logging

import pytest
from codesift.errors import CodesiftError
from codesift.migrate import Migration, discover, pending
from codesift.observability import JsonLines, metrics_token

TOKEN = "a-metrics-secret-of-some-length"


def _applied(migrations: list[Migration]) -> dict[tuple[str, str], str]:
    return {(m.kind, m.name): m.checksum for m in migrations}


def test_a_database_with_every_migration_has_none_pending():
    migrations = discover()
    assert pending(migrations, _applied(migrations)) == []


def test_a_missing_incremental_or_a_changed_idempotent_file_is_pending():
    migrations = discover()
    applied = _applied(migrations)
    last = [m for m in migrations if m.kind == "incremental"][-1]
    del applied[(last.kind, last.name)]
    assert pending(migrations, applied) == [f"incremental/{last.name}"]
    applied = _applied(migrations)
    first = next(m for m in migrations if m.kind == "idempotent")
    applied[(first.kind, first.name)] = "0" * 64
    assert pending(migrations, applied) == [f"idempotent/{first.name}"]
    assert pending(migrations, {}) == [f"{m.kind}/{m.name}" for m in migrations]


def test_a_database_a_newer_codesift_migrated_is_not_pending():
    """Its idempotent files are newer ones: during a rolling upgrade the old servers stay
    ready."""
    migrations = discover()
    applied = {key: "f" * 64 for key in _applied(migrations)}
    for m in migrations:
        if m.kind == "incremental":
            applied[(m.kind, m.name)] = m.checksum
    applied[("incremental", "999-from-the-future.sql")] = "e" * 64
    assert pending(migrations, applied) == []


def test_metrics_beyond_loopback_need_a_token():
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert metrics_token(host, {}) is None
        assert metrics_token(host, {"CODESIFT_METRICS_TOKEN": TOKEN}) == TOKEN
    for host in ("0.0.0.0", "::", "10.0.0.5", "metrics.example.com"):
        with pytest.raises(CodesiftError, match="CODESIFT_METRICS_TOKEN"):
            metrics_token(host, {})
        assert metrics_token(host, {"CODESIFT_METRICS_TOKEN": TOKEN}) == TOKEN
    for weak in ("short", "x" * 201):
        with pytest.raises(CodesiftError, match="16 to 200"):
            metrics_token("0.0.0.0", {"CODESIFT_METRICS_TOKEN": weak})


def test_a_log_line_is_one_json_object_whatever_its_fields_hold():
    hostile = 'x"}\n{"event": "forged"\r\n\x1b[31m\u2028'
    record = logging.LogRecord("codesift.requests", logging.INFO, "", 0, "tool_call", (), None)
    record.fields = {"tool": hostile, "arguments": {"question": hostile}}
    line = JsonLines().format(record)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.isascii()
    parsed = json.loads(line)
    assert parsed["event"] == "tool_call" and parsed["tool"] == hostile
