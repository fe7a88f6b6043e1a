"""`codesift mcp --http --oidc-issuer URL --oidc-audience AUD`: JWTs of a real OpenID
Connect issuer on loopback (tests/mcp/oidc_issuer.py) are accepted for the tenant their
claim names, and nothing else is: wrong audience or issuer, expired, not yet valid, an
unknown key, alg none, HS256 signed with the public key, a tampered payload, a missing or
unknown tenant. A rotation at the issuer is picked up; made-up kids do not make the server
hammer the issuer; an issuer that is down is a 503, not a crash."""

import asyncio
import base64
import json
import secrets
import time

import httpx2
import psycopg
import pytest
from codesift.mcp_tokens import create_token
from codesift.oidc import JWKS_BURST, JWKS_INTERVAL

from tests.mcp.harness import free_port, http_server, http_server_process, http_session, text_of
from tests.mcp.oidc_issuer import AUDIENCE, Issuer, b64, unsigned, with_claims
from tests.security.two_tenants import index_two_tenants

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "oidc-test", "version": "0"},
    },
}
SECRETS = ("zebra", "secret_", "token_vault", "follow_redirects")


def oidc_args(issuer_url: str) -> list[str]:
    return ["--oidc-issuer", issuer_url, "--oidc-audience", AUDIENCE]


def post(client: httpx2.Client, url: str, token: str) -> httpx2.Response:
    return client.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


async def search(url: str, token: str):
    async with http_session(url, token) as s:
        found = await s.call_tool("search_code", {"question": "token vault marker zebra"})
        mine = await s.call_tool("find_symbol", {"name": "acme_token_vault"})
        return found, mine


def paths(result) -> set[str]:
    return {r["path"] for r in result.structured_content["rows"]}


def test_a_token_reads_its_own_tenant_and_forged_ones_are_refused(dsn, two):
    with Issuer() as issuer:
        issuer.add_key("rsa-1")
        issuer.add_key("ec-1", kind="EC")
        issuer.add_key("stranger", publish=False)  # a key the issuer never published
        acme = issuer.token("rsa-1", "acme")
        globex = issuer.token("ec-1", "globex")
        now = int(time.time())
        good_claims = issuer.claims("acme")
        refused = {
            "wrong audience": issuer.token("rsa-1", "acme", aud="another-service"),
            "wrong issuer": issuer.token("rsa-1", "acme", iss="https://evil.example"),
            "expired": issuer.token("rsa-1", "acme", iat=now - 7200, exp=now - 3600),
            "not yet valid": issuer.token("rsa-1", "acme", nbf=now + 3600),
            "no exp": issuer.token("rsa-1", "acme", exp=None),
            "no aud": issuer.token("rsa-1", "acme", aud=None),
            "no iss": issuer.token("rsa-1", "acme", iss=None),
            "unknown kid": issuer.token("stranger", "acme"),
            "known kid, another key": with_kid(issuer.token("stranger", "acme"), "rsa-1"),
            "alg none": unsigned({"alg": "none", "kid": "rsa-1"}, good_claims),
            "alg none, no kid": unsigned({"alg": "none"}, good_claims),
            "HS256 with the public key": unsigned(
                {"alg": "HS256", "kid": "rsa-1", "typ": "JWT"},
                good_claims,
                secret=issuer.public_pem("rsa-1"),
            ),
            "RSA key, EC alg": with_kid(issuer.token("ec-1", "acme"), "rsa-1"),
            "tampered tenant": with_claims(acme, {**good_claims, "codesift_tenant": "globex"}),
            "tampered expiry": with_claims(acme, {**good_claims, "exp": now + 10**8}),
            "no tenant claim": issuer.token("rsa-1", None),
            "unknown tenant": issuer.token("rsa-1", "initech"),
            "tenant not a string": issuer.token("rsa-1", ["acme"]),
            "garbage": "a.b.c",
        }
        with http_server(dsn, args=oidc_args(issuer.url)) as url:
            acme_found, acme_mine = asyncio.run(search(url, acme))
            globex_found, globex_mine = asyncio.run(search(url, globex))
            with httpx2.Client(timeout=30) as client:
                statuses = {label: post(client, url, t) for label, t in refused.items()}
                still = post(client, url, acme)
                sessions = session_owners(client, url, issuer, acme, globex)
    assert not acme_found.is_error, text_of(acme_found)
    assert "app/secret_acme.py" in paths(acme_found)
    assert not any("globex" in p for p in paths(acme_found))
    assert paths(acme_mine) == {"app/secret_acme.py"}
    # a valid token for globex sees globex only
    assert "app/secret_globex.py" in paths(globex_found)
    assert not any("acme" in p for p in paths(globex_found))
    assert "acmezebra" not in text_of(globex_found)
    assert globex_mine.structured_content["rows"] == []
    for label, response in statuses.items():
        assert response.status_code == 401, (label, response.status_code, response.text)
        assert response.headers["www-authenticate"].startswith('Bearer realm="codesift", error=')
        assert not any(s in response.text for s in SECRETS), label
    assert still.status_code == 200
    # a session is its subject's: a refreshed token of the same subject goes on using it,
    # another subject (of the same tenant or another) cannot
    assert sessions["refreshed"] == 200
    assert sessions["another subject"] in (400, 403, 404)
    assert sessions["another tenant"] in (400, 403, 404)


def session_owners(client, url, issuer, acme, globex) -> dict[str, int]:
    opened = post(client, url, acme)
    assert opened.status_code == 200, opened.text
    session = {"mcp-session-id": opened.headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    later = int(time.time()) + 5
    tokens = {
        "refreshed": issuer.token("rsa-1", "acme", iat=later, exp=later + 600),
        "another subject": issuer.token("rsa-1", "acme", sub="someone-else"),
        "another tenant": globex,
    }
    out = {}
    for label, token in tokens.items():
        headers = {**ACCEPT, **session, "Authorization": f"Bearer {token}"}
        if label == "refreshed":
            done = client.post(url, json=initialized, headers=headers)
            assert done.status_code == 202, done.text
        response = client.post(url, json=listing, headers=headers)
        out[label] = response.status_code
        if label != "refreshed":
            assert not any(s in response.text for s in SECRETS), label
    return out


def with_kid(token: str, kid: str) -> str:
    """`token` with its header's kid changed (the signature no longer matches the key)."""
    header, payload, signature = token.split(".")
    fields = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    return f"{b64(json.dumps({**fields, 'kid': kid}).encode())}.{payload}.{signature}"


def test_rotation_is_picked_up_and_random_kids_do_not_hammer_the_issuer(dsn, two):
    """The issuer replaces its key: a token of the new key works (the unknown kid made the
    server fetch the JWKS again) and one of the withdrawn key no longer does. Then a storm
    of tokens with made-up kids: the JWKS is fetched at most JWKS_BURST times in all (and
    one more per JWKS_INTERVAL seconds the test ran), while the good token goes on working."""
    storm = 150
    with Issuer() as issuer:
        issuer.add_key("old")
        started = time.monotonic()
        with (
            http_server(dsn, args=oidc_args(issuer.url)) as url,
            httpx2.Client(timeout=60) as client,
        ):
            assert post(client, url, issuer.token("old", "acme")).status_code == 200
            assert issuer.jwks_fetches == 1
            issuer.add_key("new")
            issuer.published.remove("old")
            new = issuer.token("new", "acme")
            assert post(client, url, new).status_code == 200
            assert issuer.jwks_fetches == 2
            # withdrawn: the fetch that found the new key no longer lists it
            assert post(client, url, issuer.token("old", "acme")).status_code == 401
            forged = []
            for _ in range(storm):
                issuer.add_key(kid := secrets.token_hex(8), publish=False)
                forged.append(issuer.token(kid, "acme"))

            async def flood() -> list[int]:
                async with httpx2.AsyncClient(timeout=60) as aclient:
                    jobs = [
                        aclient.post(
                            url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {t}"}
                        )
                        for t in forged
                    ]
                    return [r.status_code for r in await asyncio.gather(*jobs)]

            codes = asyncio.run(flood())
            after = post(client, url, new).status_code
            elapsed = time.monotonic() - started
    assert codes == [401] * storm
    assert after == 200
    assert issuer.fetches["/.well-known/openid-configuration"] == 1
    assert issuer.jwks_fetches <= JWKS_BURST + int(elapsed / JWKS_INTERVAL), (
        issuer.jwks_fetches,
        elapsed,
    )


def test_an_issuer_that_is_down_is_a_503_and_the_server_goes_on(dsn, two):
    """Nothing listens at the issuer, then it answers a JWKS over the size limit: each is a
    503 with Retry-After (codesift's own tokens work all along); once the issuer answers
    properly the same token is accepted (three fetches: JWKS_BURST)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        _, own = create_token(conn, "acme")
    port = free_port()
    issuer_url = f"http://127.0.0.1:{port}"
    with (
        http_server_process(dsn, args=oidc_args(issuer_url)) as (url, proc),
        httpx2.Client(timeout=60) as client,
    ):
        with Issuer(port=0) as signer:  # keys only: its server is not the issuer
            signer.add_key("k1")
            signer.url = issuer_url
            token = signer.token("k1", "acme")
            down = post(client, url, token)
        assert post(client, url, own).status_code == 200
        with Issuer(port=port) as issuer:
            issuer.private, issuer.published = signer.private, ["k1"]
            issuer.mode = "huge"
            huge = post(client, url, token)
            issuer.mode = "ok"
            up = post(client, url, token)
        assert proc.poll() is None
    assert JWKS_BURST >= 3
    for response in (down, huge):
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"]
        assert "identity provider" in response.json()["error_description"]
    assert up.status_code == 200, up.text
