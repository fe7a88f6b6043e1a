"""Team identity for `codesift mcp --http`: JWT bearer tokens of an OpenID Connect issuer.

Beside codesift's own tokens (mcp_tokens), the server accepts a JWT that the configured
issuer signed for the configured audience; a claim of it (--oidc-tenant-claim, default
codesift_tenant) names the tenant, which the server maps to its id with
codesift.tenant_named() (an unknown tenant is refused). PyJWT checks the signature and the
claims; this module only chooses the key and says which algorithms a key may verify:

* keys come from the issuer's JWKS, found through its discovery document
  (<issuer>/.well-known/openid-configuration, whose `issuer` must be the configured one),
  each fetched with a timeout and a size limit, without following redirects;
* only asymmetric keys and algorithms (RSA, EC, OKP: RS*, PS*, ES*, EdDSA), each key with
  the algorithms of its own type: `none`, HS256 signed with a public key and keys of type
  `oct` are refused;
* a token names its key (`kid`); a kid not among the cached keys makes the server fetch
  the JWKS again, which is how a rotation at the issuer is picked up, but at most
  JWKS_BURST times at once and then once per JWKS_INTERVAL seconds, so that tokens with
  made-up kids cannot make the server hammer the issuer; the keys are also fetched again
  when older than JWKS_MAX_AGE, so that a key the issuer withdrew stops working;
* exp, iss and aud are required (nbf is checked when present), with LEEWAY seconds for
  clock skew.

An issuer that cannot be reached when keys are needed is IssuerUnavailable (BearerGate
answers 503); a token that fails any check is None (401).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import jwt
from mcp.server.mcpserver.exceptions import ToolError

DEFAULT_TENANT_CLAIM = "codesift_tenant"
DISCOVERY = "/.well-known/openid-configuration"
FETCH_TIMEOUT = 5.0  # seconds for one document from the issuer
MAX_DOCUMENT_BYTES = 256 * 1024  # a discovery document or a JWKS larger than this is refused
MAX_KEYS = 100  # keys read from one JWKS
JWKS_BURST = 3  # JWKS fetches allowed at once ...
JWKS_INTERVAL = 60.0  # ... then one per this many seconds
JWKS_MAX_AGE = 3600.0  # seconds before cached keys are fetched again on next use
LEEWAY = 30  # seconds of clock skew allowed on exp and nbf
MAX_TOKEN_CHARS = 16_384
MAX_TENANT_CHARS = 200  # codesift.tenants.name (001-tenancy)

# the algorithms each key type may verify; nothing symmetric
ALGORITHMS: dict[str, frozenset[str]] = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512"}),
    "OKP": frozenset({"EdDSA"}),
}
EC_CURVES = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}

_log = logging.getLogger("codesift.oidc")


class IssuerUnavailable(ToolError):
    """The issuer's keys are needed and cannot be fetched (BearerGate answers 503)."""


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    audience: str
    tenant_claim: str = DEFAULT_TENANT_CLAIM


def check_issuer(issuer: str) -> str:
    """The issuer URL as configured, or ValueError: https, or http to a loopback address
    (a test issuer, or one behind a local proxy); no query or fragment (OIDC Discovery)."""
    parts = urllib.parse.urlsplit(issuer)
    if parts.query or parts.fragment or not parts.hostname:
        raise ValueError("the issuer is a URL with a host and no query or fragment")
    if parts.scheme == "https":
        return issuer
    if parts.scheme == "http" and _loopback(parts.hostname):
        return issuer
    raise ValueError("the issuer must be an https:// URL (http:// only on loopback)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def looks_like_jwt(token: str) -> bool:
    """A JWS in compact form: three base64url parts (codesift's own tokens have no dot)."""
    return token.count(".") == 2 and len(token) <= MAX_TOKEN_CHARS


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is an error: documents are read from the URLs named


_opener = urllib.request.build_opener(_NoRedirect)


def fetch_json(url: str) -> dict[str, Any]:
    """One JSON object from `url` (blocking): OSError when it cannot be had, or is not a
    JSON object of at most MAX_DOCUMENT_BYTES."""
    request = urllib.request.Request(url, headers={"accept": "application/json"})
    # the timeout bounds each read; the deadline the whole document, however it trickles
    deadline = time.monotonic() + FETCH_TIMEOUT
    body = b""
    try:
        with _opener.open(request, timeout=FETCH_TIMEOUT) as response:
            while len(body) <= MAX_DOCUMENT_BYTES:
                chunk = response.read1(65536)
                if not chunk:
                    break
                body += chunk
                if time.monotonic() > deadline:
                    raise OSError(f"{url}: not read within {FETCH_TIMEOUT:.0f} s")
    except (urllib.error.URLError, ValueError) as exc:  # HTTPError is a URLError
        raise OSError(f"{url}: {exc}") from None
    if len(body) > MAX_DOCUMENT_BYTES:
        raise OSError(f"{url}: larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise OSError(f"{url}: not JSON") from None
    if not isinstance(document, dict):
        raise OSError(f"{url}: not a JSON object")
    return document


@dataclass(frozen=True)
class SigningKey:
    key: jwt.PyJWK
    algorithms: frozenset[str]  # what it may verify


def usable_keys(jwks: dict[str, Any]) -> dict[str, SigningKey]:
    """The signing keys of a JWKS by kid: asymmetric ones with a kid; others are skipped."""
    keys: dict[str, SigningKey] = {}
    listed = jwks.get("keys")
    if not isinstance(listed, list):
        raise OSError("the JWKS has no 'keys' list")
    for jwk in listed[:MAX_KEYS]:
        if not isinstance(jwk, dict) or jwk.get("kty") not in ALGORITHMS:
            continue
        kid = jwk.get("kid")
        if not isinstance(kid, str) or not kid or jwk.get("use", "sig") != "sig":
            continue
        try:
            keys[kid] = SigningKey(jwt.PyJWK(jwk), algorithms_of(jwk))
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
            continue
    return keys


def algorithms_of(jwk: dict[str, Any]) -> frozenset[str]:
    """The algorithms a JWK may verify: those of its type (for EC, of its curve), or the
    one it names."""
    allowed = ALGORITHMS[jwk["kty"]]
    if jwk["kty"] == "EC":
        allowed = allowed & {EC_CURVES.get(jwk.get("crv", ""), "")}
    named = jwk.get("alg")
    if named is not None:
        allowed = allowed & {named}
    return allowed


class JwksCache:
    """The issuer's signing keys, fetched on first use and again for an unknown kid (at most
    `burst` fetches at once, then one per `interval` seconds) or when older than
    `max_age`. One fetch runs at a time; a request waiting for it uses what it found."""

    def __init__(
        self,
        issuer: str,
        burst: int = JWKS_BURST,
        interval: float = JWKS_INTERVAL,
        max_age: float = JWKS_MAX_AGE,
    ):
        self.issuer = issuer
        self.burst, self.interval, self.max_age = burst, interval, max_age
        self.keys: dict[str, SigningKey] = {}
        self.fetched_at: float | None = None  # when keys were last fetched
        self.jwks_uri: str | None = None
        self._allowance = float(burst)
        self._allowance_at = time.monotonic()
        self._lock = asyncio.Lock()

    async def key(self, kid: str) -> SigningKey | None:
        """The key `kid`, fetching the JWKS when it is not known (rate-limited), or None;
        IssuerUnavailable when no key is known at all and the issuer cannot be reached."""
        if kid in self.keys and not self._stale():
            return self.keys[kid]
        async with self._lock:
            if kid in self.keys and not self._stale():
                return self.keys[kid]  # fetched while this request waited
            if self._take():
                try:
                    await asyncio.to_thread(self._refresh)
                except OSError as exc:
                    _log.warning("codesift: the OpenID Connect issuer's keys: %s", exc)
                    if not self.keys:
                        raise IssuerUnavailable(
                            "the identity provider cannot be reached: try again later"
                        ) from None
            elif not self.keys:
                raise IssuerUnavailable("the identity provider cannot be reached: try again later")
            return self.keys.get(kid)

    def _stale(self) -> bool:
        return self.fetched_at is None or time.monotonic() - self.fetched_at > self.max_age

    def _take(self) -> bool:
        """One fetch from the allowance (refilled at one per interval up to burst)."""
        now = time.monotonic()
        self._allowance = min(
            float(self.burst), self._allowance + (now - self._allowance_at) / self.interval
        )
        self._allowance_at = now
        if self._allowance < 1:
            return False
        self._allowance -= 1
        return True

    def _refresh(self) -> None:
        """Discovery (until it succeeds once), then the JWKS (blocking; OSError)."""
        if self.jwks_uri is None:
            document = fetch_json(self.issuer.rstrip("/") + DISCOVERY)
            if document.get("issuer") != self.issuer:
                raise OSError("the discovery document names another issuer")
            uri = document.get("jwks_uri")
            if not isinstance(uri, str):
                raise OSError("the discovery document has no jwks_uri")
            try:
                check_issuer(uri)  # the same rule: https, or http on loopback
            except ValueError as exc:
                raise OSError(f"jwks_uri: {exc}") from None
            self.jwks_uri = uri
        self.keys = usable_keys(fetch_json(self.jwks_uri))
        self.fetched_at = time.monotonic()


@dataclass(frozen=True)
class Identity:
    tenant: str  # the tenant the token names
    subject: str  # who it was issued to (sub), for the sessions it owns


class OidcVerifier:
    """Checks a JWT against the configured issuer: its Identity, or None."""

    def __init__(self, config: OidcConfig, keys: JwksCache | None = None):
        self.config = config
        self.keys = keys or JwksCache(config.issuer)

    async def verify(self, token: str) -> Identity | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or not isinstance(kid, str):
            return None
        if not any(alg in algs for algs in ALGORITHMS.values()):
            return None  # none, HS*, anything unknown; a key must be named
        key = await self.keys.key(kid)
        if key is None or alg not in key.algorithms:
            return None
        try:
            claims = jwt.decode(
                token,
                key.key.key,
                algorithms=[alg],
                audience=self.config.audience,
                issuer=self.config.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidTokenError as exc:
            _log.info("codesift: an OpenID Connect token was refused: %s", exc)
            return None
        tenant = claims.get(self.config.tenant_claim)
        if not isinstance(tenant, str) or not tenant or len(tenant) > MAX_TENANT_CHARS:
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str):
            subject = hashlib.sha256(token.encode()).hexdigest()
        return Identity(tenant=tenant, subject=subject)


def client_id(identity: Identity) -> str:
    """The owner of the MCP sessions a token opens: its subject within its tenant, so that
    a client keeps its session when its token is refreshed."""
    digest = hashlib.sha256(f"{identity.tenant}\0{identity.subject}".encode()).hexdigest()
    return f"oidc-{digest[:16]}"
