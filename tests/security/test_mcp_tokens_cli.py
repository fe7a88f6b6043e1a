"""`codesift token create/list/revoke`: the token is printed once and never stored or
listed; only its sha256 is kept; a revoked token maps to no tenant."""

import hashlib
import os
import subprocess

import psycopg

from tests.mcp.harness import CODESIFT


def cli(dsn: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CODESIFT, "token", *args],
        env={**os.environ, "CODESIFT_DSN": dsn},
        capture_output=True,
        text=True,
        check=check,
    )


def test_token_lifecycle(db, dsn, app_connect):
    db.execute("insert into codesift.tenants (name) values ('acme'), ('globex')")
    created = cli(dsn, "create", "--tenant", "acme", "--label", "ci")
    token = created.stdout.strip()
    assert token.startswith("csk_") and len(token) > 40 and "\n" not in token
    digest = hashlib.sha256(token.encode()).hexdigest()
    stored = db.execute("select tenant_id, token_hash, label from codesift.mcp_tokens").fetchall()
    acme = db.execute("select id from codesift.tenants where name = 'acme'").fetchone()[0]
    assert stored == [(acme, digest, "ci")]
    # nowhere in the database is the token itself
    dump = db.execute("select string_agg(t::text, ' ') from codesift.mcp_tokens t").fetchone()[0]
    assert token not in dump

    listed = cli(dsn, "list", "--tenant", "acme")
    assert token not in listed.stdout and digest not in listed.stdout
    assert "ci" in listed.stdout and "live" in listed.stdout
    assert cli(dsn, "list", "--tenant", "globex").stdout.strip() == ""

    app = app_connect()
    assert app.execute("select codesift.token_tenant(%s)", (digest,)).fetchone() == (acme,)
    token_id = db.execute("select id from codesift.mcp_tokens").fetchone()[0]
    # another tenant cannot revoke it
    other = cli(dsn, "revoke", str(token_id), "--tenant", "globex", check=False)
    assert other.returncode != 0
    assert app.execute("select codesift.token_tenant(%s)", (digest,)).fetchone() == (acme,)
    cli(dsn, "revoke", str(token_id), "--tenant", "acme")
    assert app.execute("select codesift.token_tenant(%s)", (digest,)).fetchone() == (None,)
    assert "revoked" in cli(dsn, "list", "--tenant", "acme").stdout
    unknown = cli(dsn, "create", "--tenant", "nobody", check=False)
    assert unknown.returncode != 0 and "unknown tenant" in unknown.stderr
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select count(*) from codesift.mcp_tokens").fetchone() == (1,)
