-- Every grant, in one place, run last. Functions are not executable by PUBLIC:
-- a database that hardens with `revoke all on functions ... from public` keeps
-- working, and a role that is none of codesift's runs nothing of codesift's.
--   codesift_app     reads and writes its session's tenant, runs the queries
--   codesift_loader  the same, plus creating tenants and forgetting
--   codesift_tenant  (per-tenant login roles) reads its tenant and runs the
--                    queries; it writes nothing

grant usage on schema codesift to codesift_app, codesift_loader, codesift_tenant;
grant usage on schema public to codesift_app, codesift_loader, codesift_tenant;

grant select on codesift.settings, codesift.tenants, codesift.tenant_roles
to codesift_app, codesift_loader, codesift_tenant;
grant insert, delete on codesift.tenants to codesift_loader;

grant select, insert, update, delete on
codesift.repositories,
codesift.blobs,
codesift.files,
codesift.code_symbols,
codesift.blob_imports,
codesift.file_edges,
codesift.symbol_terms,
codesift.blob_terms,
codesift.term_stats,
codesift.corpus_stats,
codesift.embeddings,
codesift.code_references
to codesift_app, codesift_loader;

grant select on
codesift.repositories,
codesift.blobs,
codesift.files,
codesift.code_symbols,
codesift.blob_imports,
codesift.file_edges,
codesift.symbol_terms,
codesift.blob_terms,
codesift.term_stats,
codesift.corpus_stats,
codesift.live_files,
codesift.code_references
to codesift_tenant;
grant select on codesift.live_files to codesift_app, codesift_loader;

grant usage on all sequences in schema codesift to codesift_app, codesift_loader;

-- readiness (/readyz of codesift mcp --http): whether every migration the server's
-- code knows is applied; file names and checksums only (made by migrate.py)
grant select on codesift.schema_migrations to codesift_app;

revoke all on all functions in schema codesift from public;
grant execute on all functions in schema codesift
to codesift_app, codesift_loader, codesift_tenant;
-- writing and forgetting are not for read-only tenant roles; forgetting is the loader's
revoke execute on function codesift.resolve_edges(bigint) from codesift_tenant;
revoke execute on function codesift.resolve_edges(bigint, text[]) from codesift_tenant;
revoke execute on function codesift.extract_blobs() from codesift_tenant;
revoke execute on function codesift.backfill_references(integer) from codesift_tenant;
revoke execute on function codesift._collect_garbage() from codesift_app, codesift_tenant;
revoke execute on function codesift._forget_blobs(text[]) from codesift_app, codesift_tenant;
revoke execute on function codesift.forget_repository(text, text) from codesift_app, codesift_tenant;
revoke execute on function codesift.forget_tenant() from codesift_app, codesift_tenant;
-- migrations only
revoke execute on function codesift._policy_tenant() from codesift_app, codesift_loader, codesift_tenant;
-- codesift tenant create --login-role (a superuser's), and the upgrade
revoke execute on function codesift._limit_login_role(text, integer)
from codesift_app, codesift_loader, codesift_tenant;

-- MCP bearer tokens: the loader (codesift token create/list/revoke) manages its
-- tenant's; the MCP HTTP server (codesift_app) maps a token's hash to its tenant
-- through token_tenant() only; per-tenant login roles see neither.
grant select, insert, update on codesift.mcp_tokens to codesift_loader;
revoke execute on function codesift.token_tenant(text) from codesift_loader, codesift_tenant;
-- and the tenant an OpenID Connect token names, through tenant_named() only
revoke execute on function codesift.tenant_named(text) from codesift_loader, codesift_tenant;

-- PostgreSQL 16+: the service roles may use the connections the server keeps in
-- reserve (reserved_connections), which per-tenant login roles cannot, so no
-- number of BI sessions locks the application or the loader out. Granting a
-- predefined role needs a superuser: a migration by the schema owner leaves it
-- to the administrator (GRANT pg_use_reserved_connections TO codesift_app WITH
-- INHERIT TRUE), and the per-tenant roles' limits then leave the reserve instead
-- (codesift tenant create refuses limits that would not).
do $$
declare
    service text;
begin
    if to_regrole('pg_use_reserved_connections') is null
        or not (select a.rolsuper from pg_catalog.pg_roles as a where a.rolname = current_user) then
        return;
    end if;
    foreach service in array array['codesift_app', 'codesift_loader'] loop
        if not pg_has_role(service, 'pg_use_reserved_connections', 'USAGE') then
            execute format('grant pg_use_reserved_connections to %I with inherit true', service);
        end if;
    end loop;
end
$$;
