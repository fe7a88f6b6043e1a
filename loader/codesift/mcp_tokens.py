"""Bearer tokens of `codesift mcp --http`: create (printed once), list, revoke.

Only the sha256 of a token is stored (codesift.mcp_tokens); the loader manages its
tenant's tokens under row-level security, acting as that tenant."""

import hashlib
import secrets
from dataclasses import dataclass

import psycopg

from .tenants import use_tenant

PREFIX = "csk_"


def token_hash(token: str) -> str:
    """What is stored of a token, and what the server looks a presented one up by."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class TokenRow:
    id: int
    label: str
    created_at: object
    last_used_at: object
    revoked_at: object


def create_token(conn: psycopg.Connection, tenant: str, label: str = "") -> tuple[int, str]:
    """A new token for `tenant`: (its id, the token itself, which is not stored)."""
    tenant_id = use_tenant(conn, tenant)
    token = PREFIX + secrets.token_urlsafe(32)
    row = conn.execute(
        "insert into codesift.mcp_tokens (tenant_id, token_hash, label) values (%s, %s, %s)"
        " returning id",
        (tenant_id, token_hash(token), label[:200]),
    ).fetchone()
    assert row is not None  # insert ... returning returns the row
    return row[0], token


def list_tokens(conn: psycopg.Connection, tenant: str) -> list[TokenRow]:
    tenant_id = use_tenant(conn, tenant)
    rows = conn.execute(
        "select id, label, created_at, last_used_at, revoked_at from codesift.mcp_tokens"
        " where tenant_id = %s order by id",
        (tenant_id,),
    ).fetchall()
    return [TokenRow(*r) for r in rows]


def revoke_token(conn: psycopg.Connection, tenant: str, token_id: int) -> bool:
    tenant_id = use_tenant(conn, tenant)
    return (
        conn.execute(
            "update codesift.mcp_tokens set revoked_at = now()"
            " where tenant_id = %s and id = %s and revoked_at is null",
            (tenant_id, token_id),
        ).rowcount
        == 1
    )
