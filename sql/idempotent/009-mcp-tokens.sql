-- MCP bearer tokens (sql/incremental/010-mcp-tokens.sql): the loader manages its
-- tenant's tokens; nobody else reads the table.
drop policy if exists tenant_isolation on codesift.mcp_tokens;
do $$
begin
    execute format(
        'create policy tenant_isolation on codesift.mcp_tokens '
        'using (tenant_id = %1$s) with check (tenant_id = %1$s)',
        codesift._policy_tenant()
    );
end
$$;

-- token_tenant runs as the owner of this function (the role that migrates): when
-- that is not a superuser, forced row-level security applies to it too, and this
-- policy lets it (and only it) read tokens by hash.
drop policy if exists token_lookup on codesift.mcp_tokens;
create policy token_lookup on codesift.mcp_tokens for all to current_user
using (true) with check (true);

-- token_tenant: the tenant of a live token, from its hash; null for an unknown or
-- revoked one. A security definer function (with tenant_named, below, and the loader's
-- refresh_statistics in 002-ingestion.sql, the only ones):
-- the MCP HTTP server calls it as codesift_app before any tenant is set (a token is
-- what names the tenant). Tiny on purpose: one lookup by hash and a last-used stamp at
-- most once a minute.
create or replace function codesift.token_tenant(token_hash text)
returns bigint
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
begin atomic
    with live as (
        select
            t.tenant_id,
            t.id
        from codesift.mcp_tokens as t
        where t.token_hash = token_tenant.token_hash and t.revoked_at is null
        order by t.tenant_id, t.id
        limit 1
    ),

    stamp as (
        -- runs whether or not it is read: a data-modifying WITH always does
        update codesift.mcp_tokens as u set last_used_at = now()
        from live
        where
            u.tenant_id = live.tenant_id and u.id = live.id
            and (u.last_used_at is null or u.last_used_at < now() - interval '1 minute')
    )

    select live.tenant_id from live;
end;

comment on function codesift.token_tenant(text) is
'The tenant of a live MCP bearer token given its sha256 (hex), or null. Security definer, '
'executable by codesift_app only: the MCP HTTP server maps a request''s token to its tenant.';

-- tenant_named reads tenants by name as the owner of this function: when that is not
-- a superuser, forced row-level security applies to it too, and this policy lets it
-- (and only it) do so.
drop policy if exists tenant_lookup on codesift.tenants;
create policy tenant_lookup on codesift.tenants for select to current_user using (true);

-- tenant_named: the id of the tenant of that name, or null. The MCP HTTP server calls it
-- as codesift_app for an OpenID Connect token, whose claim names its tenant (the
-- issuer's signature, checked before, is what vouches for the name); codesift_app sees
-- no tenant's name otherwise.
create or replace function codesift.tenant_named(tenant_name text)
returns bigint
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
begin atomic
    select t.id
    from codesift.tenants as t
    where t.name = tenant_named.tenant_name;
end;

comment on function codesift.tenant_named(text) is
'The id of the tenant of that name, or null. Security definer, executable by codesift_app '
'only: the MCP HTTP server maps the tenant named by a verified OpenID Connect token to its id.';
