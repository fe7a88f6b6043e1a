"""Attacks on `codesift mcp --http` and its tokens: no token, a wrong, revoked or other
tenant's token, session hijacking, path traversal, oversized budgets and inputs, index
writes over HTTP, and the token table and lookup function themselves."""

import asyncio
import uuid

import httpx2
import psycopg
import pytest
from codesift.mcp_server import MAX_BUDGET, Backend, Settings, token_hash
from codesift.mcp_tokens import create_token, revoke_token
from codesift.tenants import grant_login_role
from psycopg.conninfo import make_conninfo

from tests.mcp.harness import http_server, http_session, text_of
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
        assert not r.is_error, path
        assert r.structured_content["rows"] == [], path
        # the notice names the path asked for, nothing read from it
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
    # token_tenant is the one security definer function, with a pinned search_path
    definers = db.execute(
        "select p.proname, p.proconfig from pg_proc p join pg_namespace n on n.oid = p.pronamespace"
        " where n.nspname = 'codesift' and p.prosecdef"
    ).fetchall()
    assert [d[0] for d in definers] == ["token_tenant"]
    assert any(c.startswith("search_path=") for c in definers[0][1])
    assert db.execute(
        "select has_function_privilege('public', 'codesift.token_tenant(text)', 'execute')"
    ).fetchone() == (False,)


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
