-- Tenant isolation: row-level security on every table that holds tenant data,
-- keyed on the session setting app.current_tenant_id. With no tenant set the
-- setting is null and every policy is false: a session sees nothing.
-- FORCE applies the policies to the tables' owner too; only superusers (the
-- installer) bypass them, and the application connects as codesift_app.

do $$
begin
    if not exists (select from pg_roles where rolname = 'codesift_app') then
        create role codesift_app login nosuperuser nocreatedb nocreaterole noinherit nobypassrls;
    end if;
end
$$;

grant usage on schema codesift to codesift_app;
grant select on codesift.settings, codesift.tenants to codesift_app;
grant select, insert, update, delete on
codesift.repositories,
codesift.blobs,
codesift.files,
codesift.code_symbols,
codesift.blob_imports,
codesift.code_symbol_edges,
codesift.symbol_terms,
codesift.blob_terms,
codesift.term_stats,
codesift.corpus_stats
to codesift_app;
grant usage on all sequences in schema codesift to codesift_app;

alter table codesift.tenants enable row level security;
alter table codesift.tenants force row level security;
drop policy if exists tenant_isolation on codesift.tenants;
create policy tenant_isolation on codesift.tenants
using (id = nullif(current_setting('app.current_tenant_id', true), '')::bigint);

-- The same policy on every table keyed by tenant_id.
do $$
declare
    t text;
begin
    foreach t in array array[
        'repositories', 'blobs', 'files', 'code_symbols', 'blob_imports', 'code_symbol_edges',
        'symbol_terms', 'blob_terms', 'term_stats', 'corpus_stats'
    ] loop
        execute format('alter table codesift.%I enable row level security', t);
        execute format('alter table codesift.%I force row level security', t);
        execute format('drop policy if exists tenant_isolation on codesift.%I', t);
        execute format(
            'create policy tenant_isolation on codesift.%I '
            'using (tenant_id = nullif(current_setting(''app.current_tenant_id'', true), '''')::bigint) '
            'with check (tenant_id = nullif(current_setting(''app.current_tenant_id'', true), '''')::bigint)',
            t
        );
    end loop;
end
$$;
