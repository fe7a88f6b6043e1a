"""A real OpenID Connect issuer on loopback, for tests: an HTTP server thread serving the
discovery document and the JWKS of keys made with cryptography, counting what it serves,
and signing tokens with those keys (PyJWT)."""

import base64
import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "codesift-test"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """`url` is the issuer; `published` the kids its JWKS lists; `fetches` counts the
    documents served by path. mode: 'ok', 'huge' (a JWKS over the server's size limit),
    'error' (500) or 'trickle' (a byte every half second)."""

    def __init__(self, port: int = 0):
        self.private: dict[str, Any] = {}
        self.published: list[str] = []
        self.fetches: Counter[str] = Counter()
        self.mode = "ok"
        self._lock = threading.Lock()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with issuer._lock:
                    issuer.fetches[self.path] += 1
                    body = issuer._document(self.path)
                if body is None:
                    self.send_response(404 if issuer.mode == "ok" else 500)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if issuer.mode == "trickle":  # a byte now and then, never done in time
                    try:
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.5)
                    except OSError:
                        pass  # the client gave up
                    return
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "Issuer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def jwks_fetches(self) -> int:
        return self.fetches["/jwks"]

    def _document(self, path: str) -> bytes | None:
        if self.mode == "error":
            return None
        if path == "/.well-known/openid-configuration":
            return json.dumps({"issuer": self.url, "jwks_uri": self.url + "/jwks"}).encode()
        if path == "/jwks":
            if self.mode == "huge":
                return json.dumps({"keys": [], "padding": "x" * (1 << 20)}).encode()
            return json.dumps({"keys": [self.public_jwk(kid) for kid in self.published]}).encode()
        return None

    def add_key(self, kid: str, kind: str = "RSA", publish: bool = True) -> None:
        if kind == "RSA":
            self.private[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            self.private[kid] = ec.generate_private_key(ec.SECP256R1())
        if publish:
            with self._lock:
                self.published.append(kid)

    def public_jwk(self, kid: str) -> dict[str, Any]:
        key = self.private[kid]
        algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else None
        if algorithm is not None:
            jwk = algorithm.to_jwk(key.public_key(), as_dict=True)
        else:
            jwk = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        return {**jwk, "kid": kid, "use": "sig"}

    def public_pem(self, kid: str) -> bytes:
        return (
            self.private[kid]
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def claims(self, tenant: Any, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": f"dev-of-{tenant}",
            "iat": now,
            "exp": now + 600,
            "codesift_tenant": tenant,
        }
        claims.update(changes)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, kid: str, tenant: Any, alg: str | None = None, **changes: Any) -> str:
        key = self.private[kid]
        alg = alg or ("RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256")
        return jwt.encode(self.claims(tenant, **changes), key, algorithm=alg, headers={"kid": kid})


def unsigned(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
    """A token made by hand, as an attacker would: alg none (no signature), or HS256 with
    `secret` (e.g. the issuer's public key)."""
    signing = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    if secret is None:
        return signing + "."
    mac = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
    return signing + "." + b64(mac)


def with_claims(token: str, claims: dict[str, Any]) -> str:
    """`token` with its payload replaced and its signature kept (tampered)."""
    header, _, signature = token.split(".")
    return f"{header}.{b64(json.dumps(claims).encode())}.{signature}"
