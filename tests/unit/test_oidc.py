"""oidc.py without a database: which issuers are accepted, which keys of a JWKS are used and
with which algorithms, the JWKS cache against a real issuer on loopback (a rotation is
picked up, made-up kids fetch at most JWKS_BURST times, an oversized JWKS is refused), and
the flags `codesift mcp` refuses."""

import asyncio
import json

import jwt
import pytest
from codesift import cli
from codesift.errors import CodesiftError
from codesift.oidc import (
    JWKS_BURST,
    IssuerUnavailable,
    JwksCache,
    OidcConfig,
    OidcVerifier,
    algorithms_of,
    check_issuer,
    looks_like_jwt,
    usable_keys,
)
from typer.testing import CliRunner

from tests.mcp.oidc_issuer import AUDIENCE, Issuer, unsigned


@pytest.mark.parametrize(
    "issuer",
    ["https://login.example.com/realms/dev", "http://127.0.0.1:8080", "http://localhost/x"],
)
def test_issuers_accepted(issuer):
    assert check_issuer(issuer) == issuer


@pytest.mark.parametrize(
    "issuer",
    [
        "http://login.example.com",  # plain http off loopback
        "ftp://127.0.0.1",
        "https://login.example.com/?tenant=x",
        "https://login.example.com/#x",
        "https:///nohost",
        "file:///etc/passwd",
    ],
)
def test_issuers_refused(issuer):
    with pytest.raises(ValueError):
        check_issuer(issuer)


def test_what_looks_like_a_jwt():
    assert looks_like_jwt("a.b.c")
    assert not looks_like_jwt("csk_abc")
    assert not looks_like_jwt("a.b.c.d.e")  # JWE, not accepted
    assert not looks_like_jwt("a." + "b" * 20_000 + ".c")


def test_only_asymmetric_signing_keys_with_a_kid_are_used():
    with Issuer() as issuer:
        issuer.add_key("rsa", publish=False)
        issuer.add_key("ec", kind="EC", publish=False)
        rsa_jwk, ec_jwk = issuer.public_jwk("rsa"), issuer.public_jwk("ec")
    keys = usable_keys(
        {
            "keys": [
                rsa_jwk,
                ec_jwk,
                {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
                {**rsa_jwk, "kid": "encryption", "use": "enc"},
                {**rsa_jwk, "kid": None},
                {"kty": "RSA", "kid": "broken", "n": "!", "e": "AQAB"},
                "not a key",
            ]
        }
    )
    assert sorted(keys) == ["ec", "rsa"]
    assert keys["rsa"].algorithms == {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
    assert keys["ec"].algorithms == {"ES256"}  # P-256 only
    assert algorithms_of({**rsa_jwk, "alg": "PS256"}) == {"PS256"}
    assert algorithms_of({**rsa_jwk, "alg": "HS256"}) == frozenset()
    with pytest.raises(OSError):
        usable_keys({"keys": "none"})


def test_the_cache_follows_a_rotation_and_rate_limits_unknown_kids():
    async def run(issuer: Issuer) -> None:
        cache = JwksCache(issuer.url, interval=3600)
        assert (await cache.key("one")) is not None
        assert issuer.jwks_fetches == 1
        assert (await cache.key("one")) is not None  # cached
        assert issuer.jwks_fetches == 1
        issuer.add_key("two")
        assert (await cache.key("two")) is not None  # unknown kid: fetched again
        assert issuer.jwks_fetches == 2
        found = await asyncio.gather(*(cache.key(f"made-up-{i}") for i in range(50)))
        assert found == [None] * 50
        assert issuer.jwks_fetches == JWKS_BURST  # and no more, until the interval passes
        assert (await cache.key("two")) is not None

    with Issuer() as issuer:
        issuer.add_key("one")
        asyncio.run(run(issuer))
        assert issuer.fetches["/.well-known/openid-configuration"] == 1


def test_an_oversized_slow_or_missing_jwks_is_unavailable_not_a_crash():
    async def first_key(url: str) -> None:
        await JwksCache(url).key("k")

    with Issuer() as issuer:
        issuer.add_key("k")
        issuer.mode = "huge"
        with pytest.raises(IssuerUnavailable):
            asyncio.run(first_key(issuer.url))
        issuer.mode = "error"
        with pytest.raises(IssuerUnavailable):
            asyncio.run(first_key(issuer.url))
        issuer.mode = "trickle"  # each read within the timeout, the whole never
        with pytest.raises(IssuerUnavailable):
            asyncio.run(first_key(issuer.url))
        url = issuer.url
    with pytest.raises(IssuerUnavailable):
        asyncio.run(first_key(url))  # nothing listens there now


def test_a_discovery_document_naming_another_issuer_is_refused():
    with Issuer() as issuer:
        issuer.add_key("k")
        # the issuer's document names itself; the server was configured with another URL
        # that reaches the same documents
        other = issuer.url.replace("127.0.0.1", "localhost")
        verifier = OidcVerifier(OidcConfig(other, AUDIENCE))
        token = issuer.token("k", "acme", iss=other)
        with pytest.raises(IssuerUnavailable):
            asyncio.run(verifier.verify(token))
        # and alg none is refused before any key is fetched
        before = issuer.jwks_fetches
        claims = issuer.claims("acme")
        assert asyncio.run(verifier.verify(unsigned({"alg": "none", "kid": "k"}, claims))) is None
        assert issuer.jwks_fetches == before


def test_the_verifier_reads_the_tenant_claim_it_is_told():
    with Issuer() as issuer:
        issuer.add_key("k")
        verifier = OidcVerifier(OidcConfig(issuer.url, AUDIENCE, tenant_claim="team"))
        named = issuer.token("k", None, team="acme", sub="dev-1")
        identity = asyncio.run(verifier.verify(named))
        assert identity is not None and (identity.tenant, identity.subject) == ("acme", "dev-1")
        assert asyncio.run(verifier.verify(issuer.token("k", "acme"))) is None  # other claim
        header = jwt.get_unverified_header(named)
        assert header["kid"] == "k" and json.dumps(header)


@pytest.mark.parametrize(
    "args",
    [
        ["--oidc-issuer", "https://login.example.com"],  # no audience
        ["--oidc-audience", "codesift"],  # no issuer
        ["--oidc-issuer", "http://login.example.com", "--oidc-audience", "a"],  # plain http
        ["--oidc-issuer", "https://x.example", "--oidc-audience", "a", "--oidc-tenant-claim", ""],
    ],
)
def test_mcp_refuses_incomplete_or_unsafe_oidc_flags(args):
    result = CliRunner().invoke(cli.app, ["mcp", "--http", *args])
    assert isinstance(result.exception, CodesiftError), result.output
    stdio = CliRunner().invoke(
        cli.app, ["mcp", "--oidc-issuer", "https://x", "--oidc-audience", "a"]
    )
    assert isinstance(stdio.exception, CodesiftError)  # OpenID Connect is for --http only
