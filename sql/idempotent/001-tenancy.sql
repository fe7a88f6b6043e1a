-- Tenant isolation: row-level security on every table that holds tenant data.
-- Who may act as which tenant:
--   codesift_app     the shared application role of a trusted server: acts as
--                    the tenant its session names in app.current_tenant_id
--   codesift_loader  the loader (index, ask, status, forget): the same, and it
--                    may create tenants and see their names
--   per-tenant login roles (members of codesift_tenant, listed in
--                    codesift.tenant_roles): their own tenant only, whatever
--                    they set; read-only
-- With no tenant set every policy is false: a session sees nothing. FORCE
-- applies the policies to the tables' owner too; only superusers bypass them.
-- Grants are in the last idempotent migration (privileges).

do $$
begin
    if not exists (select from pg_roles where rolname = 'codesift_app') then
        create role codesift_app login nosuperuser nocreatedb nocreaterole noinherit nobypassrls;
    end if;
    if not exists (select from pg_roles where rolname = 'codesift_loader') then
        create role codesift_loader login nosuperuser nocreatedb nocreaterole noinherit nobypassrls;
    end if;
    if not exists (select from pg_roles where rolname = 'codesift_tenant') then
        create role codesift_tenant nologin nosuperuser nocreatedb nocreaterole nobypassrls;
    end if;
end
$$;

-- The tenant this session acts as: a per-tenant role's own tenant; for the
-- application and loader roles the tenant named by app.current_tenant_id;
-- for anyone else none. Policies call it once per statement (an InitPlan).
create or replace function codesift.current_tenant_id()
returns bigint
language plpgsql
stable parallel safe
security invoker
set search_path = codesift, pg_catalog
as $$
declare
    mapped bigint;
    raw text;
begin
    select r.tenant_id into mapped from codesift.tenant_roles as r where r.role_name = current_user;
    if found then
        return mapped;
    end if;
    if not (pg_has_role('codesift_app', 'MEMBER') or pg_has_role('codesift_loader', 'MEMBER')) then
        return null;
    end if;
    raw := nullif(current_setting('app.current_tenant_id', true), '');
    if raw is null then
        return null;
    end if;
    if raw !~ '^[0-9]{1,18}$' then
        raise exception 'app.current_tenant_id is ''%'', not a tenant id', left(raw, 40)
        using errcode = '22023',
        hint = 'set it to a codesift.tenants id in ASCII digits: set app.current_tenant_id = ''42''';
    end if;
    return raw::bigint;
end
$$;

comment on function codesift.current_tenant_id() is
'The tenant this session acts as: a per-tenant login role''s own tenant, else (application '
'and loader roles) app.current_tenant_id, else null. Every row-level policy compares with it.';

-- The session's tenant for functions that write or remove a tenant's data: an
-- error, not an empty result, when there is none.
create or replace function codesift._required_tenant()
returns bigint
language plpgsql
stable
security invoker
set search_path = codesift, pg_catalog
as $$
declare
    tenant bigint := codesift.current_tenant_id();
begin
    if tenant is null then
        raise exception 'no tenant is set for this session'
        using errcode = '42501', hint = 'set app.current_tenant_id to your tenant''s id first';
    end if;
    return tenant;
end
$$;

comment on function codesift._required_tenant() is
'codesift.current_tenant_id(), or error 42501 when the session acts as no tenant.';

alter table codesift.tenants enable row level security;
alter table codesift.tenants force row level security;
-- The tenant check of the policies: a scalar subquery (an InitPlan, evaluated once per
-- statement), except under Citus (sql/citus/), which refuses subqueries in policies on
-- its tables: there the function is called directly.
create or replace function codesift._policy_tenant()
returns text
language sql
stable
security invoker
set search_path = codesift, pg_catalog
return case
    when
        exists (
            select from pg_catalog.pg_extension
            where extname = 'citus'
        )
        then 'codesift.current_tenant_id()'
    else '(select codesift.current_tenant_id())'
end;

comment on function codesift._policy_tenant() is
'The expression the tenant policies compare with (migrations only): the function call under '
'Citus, which refuses subqueries in policies, else a scalar subquery evaluated once.';

drop policy if exists tenant_isolation on codesift.tenants;
do $$
begin
    execute format(
        'create policy tenant_isolation on codesift.tenants using (id = %s)',
        codesift._policy_tenant()
    );
end
$$;

-- The loader creates tenants (codesift index --tenant NEW) and lists their names.
drop policy if exists loader_reads_names on codesift.tenants;
create policy loader_reads_names on codesift.tenants for select to codesift_loader using (true);
drop policy if exists loader_creates on codesift.tenants;
create policy loader_creates on codesift.tenants for insert to codesift_loader with check (true);

alter table codesift.tenant_roles enable row level security;
alter table codesift.tenant_roles force row level security;
drop policy if exists own_role on codesift.tenant_roles;
create policy own_role on codesift.tenant_roles for select using (role_name = current_user);

-- The same policy on every table keyed by tenant_id.
do $$
declare
    t text;
begin
    foreach t in array array[
        'repositories', 'blobs', 'files', 'code_symbols', 'blob_imports', 'code_symbol_edges',
        'symbol_terms', 'blob_terms', 'term_stats', 'corpus_stats', 'embeddings'
    ] loop
        execute format('alter table codesift.%I enable row level security', t);
        execute format('alter table codesift.%I force row level security', t);
        execute format('drop policy if exists tenant_isolation on codesift.%I', t);
        execute format(
            'create policy tenant_isolation on codesift.%I '
            'using (tenant_id = %s) with check (tenant_id = %s)',
            t, codesift._policy_tenant(), codesift._policy_tenant()
        );
    end loop;
end
$$;
