"""Attacks on `codesift mcp --http` and its tokens: no token, a wrong, revoked or other
tenant's token (each refused with an RFC 6750 challenge, not an OAuth flow), a database
that is down, session hijacking, path traversal, oversized budgets and inputs, index
writes over HTTP, half-sent requests against the open-files limit, one token opening
sessions until others are refused, and the token table and lookup function themselves."""

import asyncio
import contextlib
import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx2
import psycopg
import pytest
from codesift.mcp_backend import Backend
from codesift.mcp_server import Settings, token_hash
from codesift.mcp_tokens import create_token, revoke_token
from codesift.mcp_tools import MAX_BUDGET
from codesift.tenants import grant_login_role
from psycopg.conninfo import make_conninfo

from tests.mcp.harness import (
    DatabaseSwitch,
    http_server,
    http_server_process,
    http_session,
    text_of,
)
from tests.security.two_tenants import index_two_tenants

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "0"},
    },
}
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search_code", "arguments": {"question": "token vault zebra"}},
}
SECRETS = ("zebra", "secret_", "token_vault", "shared", "follow_redirects")


@pytest.fixture
def two(dsn, make_repo):
    tenants = index_two_tenants(dsn, make_repo)
    tokens = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        for name in tenants:
            tokens[name] = create_token(conn, name)
    return tenants, tokens


def no_data(body: str) -> bool:
    return not any(s in body for s in SECRETS)


def test_no_wrong_or_revoked_token_is_401_without_data(dsn, two):
    _, tokens = two
    acme_id, acme_token = tokens["acme"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        revoked_id, revoked = create_token(conn, "acme")
        assert revoke_token(conn, "acme", revoked_id)
    cases = {
        "none": {},
        "empty": {"Authorization": "Bearer"},
        "wrong": {"Authorization": "Bearer csk_" + "A" * 43},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "hash instead of token": {"Authorization": f"Bearer {token_hash(acme_token)}"},
        "basic": {"Authorization": f"Basic {acme_token}"},
        "huge": {"Authorization": "Bearer " + "x" * 50_000},
    }
    with http_server(dsn) as url, httpx2.Client(timeout=30) as client:
        for label, headers in cases.items():
            for message in (INIT, CALL):
                r = client.post(url, json=message, headers={**ACCEPT, **headers})
                assert r.status_code in (401, 431), (label, r.status_code)
                assert no_data(r.text), label
        # the real token works on the same server
        ok = client.post(
            url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {acme_token}"}
        )
        assert ok.status_code == 200


def test_token_errors_are_bearer_challenges_that_start_no_oauth_flow(dsn, two):
    """RFC 6750: no credentials get a bare challenge (no error code), a wrong, revoked or
    empty token error="invalid_token" with a description; both name the resource's RFC 9728
    metadata, which says tokens go in the header and names no authorization server (they
    are issued out of band: `codesift token create`), so an OAuth-capable client reports
    the token instead of starting an OAuth flow. The server is no authorization server."""
    _, tokens = two
    acme_token = tokens["acme"][1]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        revoked_id, revoked = create_token(conn, "acme")
        assert revoke_token(conn, "acme", revoked_id)
    no_credentials = {"none": {}, "basic": {"Authorization": f"Basic {acme_token}"}}
    rejected = {
        "wrong": {"Authorization": "Bearer csk_" + "A" * 43},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "hash instead of token": {"Authorization": f"Bearer {token_hash(acme_token)}"},
        "empty": {"Authorization": "Bearer"},
    }
    with http_server(dsn) as url, httpx2.Client(timeout=30) as client:
        base = url.removesuffix("/mcp")
        metadata = f'resource_metadata="{base}/.well-known/oauth-protected-resource"'
        for label, headers in {**no_credentials, **rejected}.items():
            r = client.post(url, json=INIT, headers={**ACCEPT, **headers})
            assert r.status_code == 401, (label, r.status_code)
            challenge = r.headers["www-authenticate"]
            if label in no_credentials:
                assert challenge == f'Bearer realm="codesift", {metadata}', label
            else:
                assert challenge.startswith('Bearer realm="codesift", error="invalid_token", ')
                assert 'error_description="the bearer token is not a live codesift token' in (
                    challenge
                ), label
                assert challenge.endswith(metadata), label
                assert r.json()["error"] == "invalid_token", label
            assert "codesift token create" in r.json()["error_description"], label
            assert no_data(r.text), label
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            r = client.get(base + path)
            assert r.status_code == 200, path
            document = r.json()
            assert document["resource"] == url
            assert document["bearer_methods_supported"] == ["header"]
            assert "authorization_servers" not in document
            assert "codesift token create" in document["description"]
        assert client.post(base + "/.well-known/oauth-protected-resource").status_code == 405
        # nothing here speaks OAuth: no authorization server metadata, no registration
        for path in (
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ):
            assert client.get(base + path).status_code == 404, path
        assert client.post(base + "/register", json={}).status_code == 404


def test_a_database_down_is_503_and_names_nothing_of_it(dsn, two):
    """While the database is down no token can be checked: 503 with Retry-After, and
    nothing of where the database is; once it is back the same server serves again."""
    _, tokens = two
    headers = {**ACCEPT, "Authorization": f"Bearer {tokens['acme'][1]}"}
    with (
        DatabaseSwitch(dsn) as database,
        http_server(database.dsn) as url,
        httpx2.Client(timeout=30) as client,
    ):
        down = client.post(url, json=INIT, headers=headers)
        database.up()
        up = client.post(url, json=INIT, headers=headers)
    assert down.status_code == 503
    assert down.headers["retry-after"] == "5"
    assert down.json()["error_description"] == "database unreachable: try again later"
    assert str(database.port) not in down.text and "127.0.0.1" not in down.text
    assert up.status_code == 200


def test_another_tenants_token_cannot_use_a_session(dsn, two):
    _, tokens = two
    acme, globex = tokens["acme"][1], tokens["globex"][1]
    with http_server(dsn) as url, httpx2.Client(timeout=30) as client:
        opened = client.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {acme}"})
        session = opened.headers["mcp-session-id"]
        hijack = client.post(
            url,
            json=CALL,
            headers={**ACCEPT, "Authorization": f"Bearer {globex}", "mcp-session-id": session},
        )
        assert hijack.status_code in (400, 403, 404)
        assert no_data(hijack.text)


def test_path_traversal_in_related_files_returns_nothing(dsn, two):
    _, tokens = two
    attacks = [
        "../../etc/passwd",
        "/etc/passwd",
        "app/../../../../etc/passwd",
        "..\\..\\windows\\win.ini",
        "app/redirects.py/../../../acme-shared/app/secret_acme.py",
        "%2e%2e/%2e%2e/etc/passwd",
        "file:///etc/passwd",
    ]

    async def run(url):
        async with http_session(url, tokens["globex"][1]) as s:
            return [await s.call_tool("related_files", {"path": p}) for p in attacks]

    with http_server(dsn) as url:
        results = asyncio.run(run(url))
    for path, r in zip(attacks, results, strict=True):
        # a path that leaves the repository ('..', absolute) is refused; the others name no
        # file: no rows, a notice
        assert r.is_error is ("%2e" not in path and "file:" not in path), path
        assert r.is_error or r.structured_content["rows"] == [], path
        # the message names the path asked for, nothing read from it
        assert "root:x:" not in text_of(r) and "acmezebra" not in text_of(r)


def test_oversized_budgets_and_inputs_are_refused(dsn, two):
    _, tokens = two
    big = MAX_BUDGET + 1
    refused = [
        ("search_code", {"question": "redirects", "token_budget": big}),
        ("search_code", {"question": "redirects", "token_budget": 0}),
        ("search_code", {"question": "redirects", "token_budget": 10**12}),
        ("explain_search", {"question": "redirects", "token_budget": big}),
        ("find_symbol", {"name": "follow_redirects", "token_budget": big}),
        ("search_code", {"question": "x" * 20_001}),
        ("find_symbol", {"name": "n" * 100_000}),
        ("related_files", {"path": "a/" * 300_000}),
        ("related_files", {"path": "app/session.py", "depth": 50}),
        ("find_symbol", {"name": "follow_redirects", "max_results": 10**6}),
        ("explain_search", {"question": "redirects", "max_candidates": 10**6}),
    ]

    async def run(url):
        async with http_session(url, tokens["acme"][1]) as s:
            out = [await s.call_tool(name, args) for name, args in refused]
            ok = await s.call_tool(
                "search_code", {"question": "follow redirects", "token_budget": MAX_BUDGET}
            )
            return out, ok

    with http_server(dsn) as url:
        out, ok = asyncio.run(run(url))
    for (name, args), r in zip(refused, out, strict=True):
        assert r.is_error, (name, {k: str(v)[:40] for k, v in args.items()})
        assert len(text_of(r)) < 5_000  # the refusal does not echo a huge input back
    assert not ok.is_error
    assert sum(row["tokens"] for row in ok.structured_content["rows"]) <= MAX_BUDGET


def test_huge_request_body_is_refused(dsn, two):
    _, tokens = two
    body = dict(CALL, params={"name": "search_code", "arguments": {"question": "x" * 3_000_000}})
    with http_server(dsn) as url, httpx2.Client(timeout=60) as client:
        auth = {"Authorization": f"Bearer {tokens['acme'][1]}"}
        opened = client.post(url, json=INIT, headers={**ACCEPT, **auth})
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        r = client.post(url, json=body, headers={**ACCEPT, **auth, **session})
        assert r.status_code == 413
        assert no_data(r.text)


def test_sync_index_is_not_served_over_http(dsn, two):
    _, tokens = two

    async def run(url):
        async with http_session(url, tokens["acme"][1]) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            try:
                r = await s.call_tool("sync_index", {"path": "/"})
            except Exception as exc:  # an MCP error response is also a refusal
                return names, True, str(exc)
            return names, r.is_error, text_of(r)

    with http_server(dsn) as url:
        names, refused, text = asyncio.run(run(url))
    assert "sync_index" not in names
    assert refused and "indexed" not in text


def test_token_table_and_lookup_function_privileges(db, dsn, two, app_connect):
    tenants, tokens = two
    acme_token = tokens["acme"][1]
    app = app_connect(tenants["acme"].id)
    # the application role maps a token to its tenant, and reads no token row
    assert app.execute(
        "select codesift.token_tenant(%s)", (token_hash(acme_token),)
    ).fetchone() == (tenants["acme"].id,)
    assert app.execute("select codesift.token_tenant(%s)", ("0" * 64,)).fetchone() == (None,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("select * from codesift.mcp_tokens")
    # and the tenant an OpenID Connect token names, without seeing other tenants' rows
    named = "select codesift.tenant_named(%s)"
    assert app.execute(named, ("globex",)).fetchone() == (tenants["globex"].id,)
    assert app.execute(named, ("initech",)).fetchone() == (None,)
    assert app.execute("select name from codesift.tenants").fetchall() == [("acme",)]
    # the loader sees its tenant's tokens only
    with psycopg.connect(dsn, autocommit=True) as loader:
        loader.execute("set role codesift_loader")
        loader.execute(
            "select set_config('app.current_tenant_id', %s, false)", (str(tenants["globex"].id),)
        )
        seen = loader.execute("select tenant_id from codesift.mcp_tokens").fetchall()
        assert seen == [(tenants["globex"].id,)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            loader.execute("select codesift.token_tenant(%s)", (token_hash(acme_token),))
        # a token for another tenant cannot be planted
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            loader.execute(
                "insert into codesift.mcp_tokens (tenant_id, token_hash) values (%s, %s)",
                (tenants["acme"].id, "1" * 64),
            )
    # a per-tenant login role neither reads tokens nor looks them up
    role = f"bi_{uuid.uuid4().hex[:12]}"
    granted = grant_login_role(db, "acme", role)
    try:
        with psycopg.connect(
            make_conninfo(dsn, user=role, password=granted.password), autocommit=True
        ) as bi:
            for sql in (
                "select * from codesift.mcp_tokens",
                f"select codesift.token_tenant('{token_hash(acme_token)}')",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    bi.execute(sql)
    finally:
        db.execute(f"drop owned by {role}")
        db.execute(f"drop role if exists {role}")
    # token_tenant and tenant_named (OpenID Connect tokens), executable by codesift_app
    # alone, and the loader's refresh_statistics are the only security definer functions,
    # each with a pinned search_path
    definers = db.execute(
        "select format('%s(%s)', p.proname, oidvectortypes(p.proargtypes)), p.proconfig"
        " from pg_proc p"
        " join pg_namespace n on n.oid = p.pronamespace"
        " where n.nspname = 'codesift' and p.prosecdef order by p.proname"
    ).fetchall()
    runs = {
        "refresh_statistics()": "codesift_loader",
        "tenant_named(text)": "codesift_app",
        "token_tenant(text)": "codesift_app",
    }
    assert [d[0] for d in definers] == list(runs)
    for signature, config in definers:
        assert any(c.startswith("search_path=") for c in config), signature
        for role in ("public", "codesift_app", "codesift_loader", "codesift_tenant"):
            assert db.execute(
                "select has_function_privilege(%s, %s, 'execute')", (role, "codesift." + signature)
            ).fetchone() == (role == runs[signature],), (signature, role)


def test_a_pooled_connection_keeps_no_tenant_between_requests(dsn, two):
    """The server's Backend, in process: one pooled connection serves acme then globex;
    between and after their transactions it carries no tenant."""
    tenants, _ = two

    async def run():
        backend = Backend(Settings(dsn=dsn, http=True, pool_min=1, pool_max=1))
        await backend.open()
        try:
            seen = []
            for name in ("acme", "globex", "acme"):
                _, rows, _ = await backend.query(
                    tenants[name].id,
                    "select current_setting('app.current_tenant_id', true),"
                    " pg_backend_pid(), current_user,"
                    " (select array_agg(path order by path) from codesift.files)",
                    {},
                )
                seen.append(rows[0])
                async with backend.pool.connection() as conn:
                    cur = await conn.execute(
                        "select current_setting('app.current_tenant_id', true),"
                        " (select count(*) from codesift.files)"
                    )
                    seen.append(await cur.fetchone())
            return seen
        finally:
            await backend.close()

    seen = asyncio.run(run())
    queries, between = seen[0::2], seen[1::2]
    assert len({q[1] for q in queries}) == 1  # the same backend served all three
    assert {q[2] for q in queries} == {"codesift_app"}
    for name, q in zip(("acme", "globex", "acme"), queries, strict=True):
        assert q[0] == str(tenants[name].id)
        assert f"app/secret_{name}.py" in q[3]
        assert not any(f"secret_{o}" in p for o in ("acme", "globex") if o != name for p in q[3])
    assert all(b in (("", 0), (None, 0)) for b in between)


def test_a_tenant_login_role_runs_the_lookups_on_its_own_tenant(db, dsn, two):
    """find_symbol, related_files and repository_status are granted to per-tenant roles:
    acme's role sees acme's rows only, whatever it sets app.current_tenant_id to."""
    tenants, _ = two
    role = f"bi_{uuid.uuid4().hex[:12]}"
    granted = grant_login_role(db, "acme", role)
    try:
        with psycopg.connect(
            make_conninfo(dsn, user=role, password=granted.password), autocommit=True
        ) as bi:
            bi.execute(
                "select set_config('app.current_tenant_id', %s, false)",
                (str(tenants["globex"].id),),
            )
            assert bi.execute(
                "select path from codesift.find_symbol('acme_token_vault')"
            ).fetchall() == [("app/secret_acme.py",)]
            assert bi.execute(
                "select count(*) from codesift.find_symbol('globex_token_vault')"
            ).fetchone() == (0,)
            related = bi.execute(
                "select related_path from codesift.related_files('app/redirects.py')"
            ).fetchall()
            assert ("app/secret_acme.py",) in related
            assert not any("globex" in r[0] for r in related)
            assert bi.execute(
                "select repository, live_files from codesift.repository_status()"
            ).fetchall() == [("shared", 4)]
    finally:
        db.execute(f"drop owned by {role}")
        db.execute(f"drop role if exists {role}")


def head(port: int) -> bytes:
    """The start of a request head (more header lines may follow)."""
    return b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port


def closed_by_server(sock: socket.socket, deadline: float) -> bool:
    """Whether the server closes `sock` before `deadline` (what it says first is read)."""
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(4096):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


async def acme_search(url: str, token: str) -> list[str]:
    async with http_session(url, token) as s:
        r = await s.call_tool("search_code", {"question": "token vault zebra"})
    assert not r.is_error, text_of(r)
    return [row["path"] for row in r.structured_content["rows"]]


def test_half_sent_requests_cannot_use_up_the_open_files_limit(dsn, two):
    """Slowloris, no token needed: 300 connections that send part of a request (100 part of
    the head, 200 a whole head, answered 401, and part of a body) and stall,
    against a server allowed 256 open files and a read timeout far longer than the test.
    The server neither dies of EMFILE nor stops accepting: the oldest stalled connections
    are closed to make room, and an authorised MCP session works while the others are
    still held."""
    _, tokens = two
    args = ["--read-timeout", "600"]
    with http_server_process(dsn, args=args, nofile=256) as (url, proc):
        port = urlsplit(url).port
        held: list[socket.socket] = []
        try:
            for i in range(300):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                held.append(sock)
                with contextlib.suppress(OSError):  # already closed to make room
                    # 100 stall in the head; 200 send a whole head (no token: 401 at once)
                    # and stall in a body the server has no reason to wait for
                    stall = b"" if i < 100 else b"Content-Length: 100000\r\n\r\n{"
                    sock.sendall(head(port) + stall)
            assert "app/secret_acme.py" in asyncio.run(acme_search(url, tokens["acme"][1]))
            assert proc.poll() is None
            assert closed_by_server(held[0], time.monotonic() + 30)
        finally:
            for sock in held:
                sock.close()
        assert proc.poll() is None


def test_a_request_sent_too_slowly_is_cut_off(dsn, two):
    """A connection that sends part of a request head and stalls, one that sends its head a
    byte at a time (never idle), and one with a valid token that sends its head and part of
    its body: each is closed once --read-timeout has passed since its request began, and
    the server goes on serving."""
    _, tokens = two
    acme = tokens["acme"][1]
    with http_server(dsn, args=["--read-timeout", "2"]) as url:
        port = urlsplit(url).port
        stalled, trickle, body = (
            socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)
        )
        try:
            stalled.sendall(head(port))
            body.sendall(
                head(port) + b"Accept: application/json, text/event-stream\r\n"
                b"Authorization: Bearer " + acme.encode() + b"\r\n"
                b'Content-Length: 1000\r\n\r\n{"jsonrpc": '
            )
            # a byte every 0.2 s, for 60 s at most
            deadline = time.monotonic() + 60
            cut = False
            for byte in head(port) + b"X-Pad: " + b"a" * 300:
                try:
                    trickle.sendall(bytes([byte]))
                except OSError:
                    cut = True
                    break
                if closed_by_server(trickle, min(deadline, time.monotonic() + 0.2)):
                    cut = True
                    break
            assert cut, "a request head sent a byte at a time was never cut off"
            deadline = time.monotonic() + 60
            assert closed_by_server(stalled, deadline)
            assert closed_by_server(body, deadline)
        finally:
            for sock in (stalled, trickle, body):
                sock.close()
        assert "app/secret_acme.py" in asyncio.run(acme_search(url, acme))


PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
FIND_GLOBEX = {
    "jsonrpc": "2.0",
    "id": 4,
    "method": "tools/call",
    "params": {"name": "find_symbol", "arguments": {"name": "globex_token_vault"}},
}


class Sessions:
    """Raw MCP sessions over one HTTP client: open one with a token, send in one."""

    def __init__(self, client: httpx2.Client, url: str):
        self.client, self.url = client, url

    def open(self, token: str) -> str:
        auth = {"Authorization": f"Bearer {token}"}
        r = self.client.post(self.url, json=INIT, headers={**ACCEPT, **auth})
        assert r.status_code == 200, (r.status_code, r.text)
        session = r.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.client.post(self.url, json=done, headers={**ACCEPT, **auth, "mcp-session-id": session})
        return session

    def send(self, token: str, session: str, message: dict = PING) -> httpx2.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {token}", "mcp-session-id": session}
        return self.client.post(self.url, json=message, headers=headers)

    def status(self, token: str, session: str) -> int:
        return self.send(token, session).status_code


def test_one_token_opening_sessions_ends_its_own_oldest_not_other_tenants(dsn, two):
    """One token opens 40 sessions (caps: 3 a token, 4 a tenant, 6 in all). It keeps its 3
    newest; the older ones answer 404 (an unknown session, as the MCP spec says); another
    tenant's token still opens a session that works and keeps it."""
    _, tokens = two
    acme, globex = tokens["acme"][1], tokens["globex"][1]
    caps = ["--sessions-per-token", "3", "--sessions-per-tenant", "4", "--max-sessions", "6"]
    with http_server(dsn, args=caps) as url, httpx2.Client(timeout=30) as client:
        sessions = Sessions(client, url)
        opened = [sessions.open(acme) for _ in range(40)]
        other = sessions.open(globex)
        found = sessions.send(globex, other, FIND_GLOBEX)
        assert found.status_code == 200
        assert "app/secret_globex.py" in found.text and "acme" not in found.text
        assert [sessions.status(acme, s) for s in opened[:-3]] == [404] * 37
        assert [sessions.status(acme, s) for s in opened[-3:]] == [200] * 3
        # the flood goes on; the other tenant's session stays
        for _ in range(10):
            sessions.open(acme)
        assert sessions.status(globex, other) == 200


def test_session_caps_end_the_least_recently_used_and_share_the_total(dsn, two):
    """Caps 2 a token, 3 a tenant, 4 in all. A session used lately outlives an older unused
    one of its token; a second token of the same tenant ends that tenant's least recently
    used session; past the total, the tenant with the most sessions gives one up, not the
    one asking."""
    _, tokens = two
    acme, globex = tokens["acme"][1], tokens["globex"][1]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        acme2 = create_token(conn, "acme")[1]
    caps = ["--sessions-per-token", "2", "--sessions-per-tenant", "3", "--max-sessions", "4"]
    with http_server(dsn, args=caps) as url, httpx2.Client(timeout=30) as client:
        sessions = Sessions(client, url)
        a1, a2 = sessions.open(acme), sessions.open(acme)
        assert sessions.status(acme, a1) == 200  # a1 is now used more lately than a2
        a3 = sessions.open(acme)
        assert [sessions.status(acme, s) for s in (a2, a1, a3)] == [404, 200, 200]
        # acme's second token: b2 makes acme 4 > 3, and a1 is acme's least recently used
        b1 = sessions.open(acme2)
        b2 = sessions.open(acme2)
        assert sessions.status(acme, a1) == 404
        assert [sessions.status(acme, a3), sessions.status(acme2, b1)] == [200, 200]
        assert sessions.status(acme2, b2) == 200
        # globex opens 2: 5 > 4 in all, and acme, holding 3, gives up a3
        g1, g2 = sessions.open(globex), sessions.open(globex)
        assert sessions.status(acme, a3) == 404
        assert [sessions.status(globex, s) for s in (g1, g2)] == [200, 200]
        assert [sessions.status(acme2, s) for s in (b1, b2)] == [200, 200]
        # 2 each: globex's third is past its token's cap and ends its own oldest
        g3 = sessions.open(globex)
        assert [sessions.status(globex, s) for s in (g1, g2, g3)] == [404, 200, 200]
        assert [sessions.status(acme2, s) for s in (b1, b2)] == [200, 200]
