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

-- MCP bearer tokens: the loader (codesift token create/list/revoke) manages its
-- tenant's; per-tenant login roles see none
grant select, insert, update on codesift.mcp_tokens to codesift_loader;

-- Who may run the functions: the three service roles, but for the (function, role) pairs
-- in `barred`, and never PUBLIC. Granted or revoked only where a function's privileges
-- differ, so a migrate that changes no function rewrites none (loader/codesift/migrate.py).
do $$
declare
    f record;
begin
    for f in
        with barred (signature, role) as (
            values
            -- writing and forgetting are not for read-only tenant roles; forgetting is
            -- the loader's
            ('resolve_edges(bigint)', 'codesift_tenant'),
            ('resolve_edges(bigint, text[])', 'codesift_tenant'),
            ('extract_blobs()', 'codesift_tenant'),
            ('backfill_references(integer)', 'codesift_tenant'),
            ('rank_files(bigint)', 'codesift_tenant'),
            -- the loader's, after a ref's first index
            ('refresh_statistics()', 'codesift_app'),
            ('refresh_statistics()', 'codesift_tenant'),
            ('_collect_garbage()', 'codesift_app'),
            ('_collect_garbage()', 'codesift_tenant'),
            ('_forget_blobs(text[])', 'codesift_app'),
            ('_forget_blobs(text[])', 'codesift_tenant'),
            ('forget_repository(text, text)', 'codesift_app'),
            ('forget_repository(text, text)', 'codesift_tenant'),
            ('forget_tenant()', 'codesift_app'),
            ('forget_tenant()', 'codesift_tenant'),
            -- migrations only
            ('_policy_tenant()', 'codesift_app'),
            ('_policy_tenant()', 'codesift_loader'),
            ('_policy_tenant()', 'codesift_tenant'),
            -- codesift tenant create --login-role (a superuser's), and the upgrade
            ('_limit_login_role(text, integer)', 'codesift_app'),
            ('_limit_login_role(text, integer)', 'codesift_loader'),
            ('_limit_login_role(text, integer)', 'codesift_tenant'),
            -- MCP bearer tokens: the MCP HTTP server (codesift_app) maps a token's hash to
            -- its tenant through token_tenant() only, and the tenant an OpenID Connect
            -- token names through tenant_named() only
            ('token_tenant(text)', 'codesift_loader'),
            ('token_tenant(text)', 'codesift_tenant'),
            ('tenant_named(text)', 'codesift_loader'),
            ('tenant_named(text)', 'codesift_tenant')
        ),

        functions as (
            select
                p.oid,
                format('codesift.%I(%s)', p.proname, pg_catalog.oidvectortypes(p.proargtypes))
                    as qualified,
                format('%s(%s)', p.proname, pg_catalog.oidvectortypes(p.proargtypes))
                    as signature,
                coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) as acl
            from pg_catalog.pg_proc as p
            where p.pronamespace = 'codesift'::regnamespace
        ),

        wanted as (
            select
                fn.oid,
                fn.qualified,
                r.rolname,
                r.oid as role_oid,
                not exists (
                    select from barred as b
                    where b.signature = fn.signature and b.role = r.rolname
                ) as allowed
            from functions as fn
            cross join pg_catalog.pg_roles as r
            where r.rolname in ('codesift_app', 'codesift_loader', 'codesift_tenant')
        )

        select
            w.qualified,
            w.rolname,
            w.allowed,
            exists (
                select from functions as fn, pg_catalog.aclexplode(fn.acl) as a
                where fn.oid = w.oid and a.grantee = w.role_oid and a.privilege_type = 'EXECUTE'
            ) as granted
        from wanted as w
        union all
        select
            fn.qualified,
            'public',
            false,
            exists (
                select from pg_catalog.aclexplode(fn.acl) as a
                where a.grantee = 0 and a.privilege_type = 'EXECUTE'
            )
        from functions as fn
    loop
        if f.allowed and not f.granted then
            execute format('grant execute on function %s to %I', f.qualified, f.rolname);
        elsif f.granted and not f.allowed and f.rolname = 'public' then
            execute format('revoke all on function %s from public', f.qualified);
        elsif f.granted and not f.allowed then
            execute format('revoke execute on function %s from %I', f.qualified, f.rolname);
        end if;
    end loop;
end
$$;

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
