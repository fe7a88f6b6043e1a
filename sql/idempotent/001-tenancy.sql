-- Tenant isolation: row-level security on every table that holds tenant data.
-- Who may act as which tenant:
--   codesift_app     the shared application role of a trusted server: acts as
--                    the tenant its session names in app.current_tenant_id
--   codesift_loader  the loader (index, ask, status, forget): the same, and it
--                    may create tenants and see their names
--   per-tenant login roles (members of codesift_tenant, listed in
--                    codesift.tenant_roles): their own tenant only, whatever
--                    they set; read-only; and only while they hold nothing
--                    beyond that membership (login_role_problems), checked
--                    at every use
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

-- What a role holds beyond what codesift grants a per-tenant login role (an
-- allow-list: membership in codesift_tenant, LOGIN, INHERIT, a connection limit,
-- settings, CONNECT and TEMPORARY on databases, its own temporary tables), each
-- with the statement that removes it; null when nothing. Every one of those is
-- a way out of its tenant: an attribute (SUPERUSER and BYPASSRLS skip the
-- policies, CREATEROLE grants itself any role on PostgreSQL 15, REPLICATION
-- reads the WAL), a membership (another tenant's role, codesift_app, the
-- pg_*_server_* roles that reach the server's files and programs), a member that
-- can act as it, or an object it owns, a privilege or a policy naming it (in
-- this database or on a shared object: one in another database cannot touch
-- this one's rows). current_tenant_id() calls it for every statement of a
-- per-tenant role, so a role with nothing more costs one query of index
-- lookups (enable_seqscan off: pg_shdepend's statistics, dominated by the
-- service roles' grants, would otherwise pick a scan of all of it for a role
-- with no row there).
-- A member acts as the role always before PostgreSQL 16, then through a grant
-- WITH INHERIT or WITH SET (not through the ADMIN-only grant that a CREATEROLE
-- role gets on a role it creates): read from the row as jsonb, the same on both.
create or replace function codesift.login_role_problems(role_name text)
returns text[]
language plpgsql
stable parallel safe
security invoker
set search_path = codesift, pg_catalog
set enable_seqscan = off
as $$
declare
    tenant_group constant oid := to_regrole('codesift_tenant');
    authid constant oid := 'pg_catalog.pg_authid'::regclass;
    r record;
    g record;
    role_oid oid;
    this_db oid;
    dep_class oid;
    dep_object oid;
    dep_db oid;
    dep_type "char";
    objects text[] := array[]::text[];
    problems text[] := array[]::text[];
begin
    -- a role with nothing more: this one query of index lookups
    select
        a.oid, a.rolname, a.rolsuper, a.rolbypassrls, a.rolcreaterole, a.rolcreatedb,
        a.rolreplication, a.rolinherit,
        not (a.rolsuper or a.rolbypassrls or a.rolcreaterole or a.rolcreatedb or a.rolreplication)
        and a.rolinherit
        and not exists (
            select from pg_catalog.pg_auth_members as m
            where m.member = a.oid and (m.roleid <> tenant_group or m.admin_option)
        )
        and not exists (
            select from pg_catalog.pg_auth_members as m
            where
                m.roleid = a.oid
                and (
                    coalesce((to_jsonb(m) ->> 'inherit_option')::boolean, true)
                    or coalesce((to_jsonb(m) ->> 'set_option')::boolean, true)
                )
        )
        and not exists (select from pg_catalog.pg_auth_members as m where m.member = tenant_group)
        as clean,
        exists (
            select from pg_catalog.pg_shdepend as d where d.refclassid = authid and d.refobjid = a.oid
        ) as depended
    into r
    from pg_catalog.pg_roles as a where a.rolname = role_name;
    if not found or (r.clean and not r.depended) then
        return null;
    end if;
    role_oid := r.oid;

    -- objects it owns, privileges it holds and policies that name it, in this
    -- database or on a shared object, but CONNECT and TEMPORARY on a database
    -- and its own temporary tables
    for dep_class, dep_object, dep_db, dep_type in
        select d.classid, d.objid, d.dbid, d.deptype
        from pg_catalog.pg_shdepend as d
        where d.refclassid = authid and d.refobjid = role_oid
    loop
        if dep_db <> 0 then
            if this_db is null then
                select db.oid into this_db from pg_catalog.pg_database as db where db.datname = current_database();
            end if;
            continue when dep_db <> this_db;
        end if;
        continue when dep_class = 'pg_catalog.pg_database'::regclass and dep_type = 'a' and not exists (
            select
            from aclexplode((select db.datacl from pg_catalog.pg_database as db where db.oid = dep_object)) as x
            where x.grantee = role_oid and x.privilege_type not in ('CONNECT', 'TEMPORARY')
        );
        continue when dep_class = 'pg_catalog.pg_class'::regclass and dep_type = 'o' and dep_db <> 0 and exists (
            select from pg_catalog.pg_class as c where c.oid = dep_object and c.relpersistence = 't'
        );
        objects := objects || case dep_type
            when 'o' then format(
                'owns %s (REASSIGN OWNED BY %I TO another role, or DROP OWNED BY %I)',
                pg_describe_object(dep_class, dep_object, 0), r.rolname, r.rolname
            )
            when 'r' then format(
                'is named by %s (DROP POLICY, or DROP OWNED BY %I)',
                pg_describe_object(dep_class, dep_object, 0), r.rolname
            )
            else format(
                'holds privileges on %s (REVOKE them, or DROP OWNED BY %I)',
                pg_describe_object(dep_class, dep_object, 0), r.rolname
            )
        end;
    end loop;
    if r.clean and cardinality(objects) = 0 then
        return null;
    end if;

    if r.rolsuper then
        problems := problems || format('is a superuser (ALTER ROLE %I NOSUPERUSER)', r.rolname);
    end if;
    if r.rolbypassrls then
        problems := problems || format('bypasses row-level security (ALTER ROLE %I NOBYPASSRLS)', r.rolname);
    end if;
    if r.rolcreaterole then
        problems := problems || format('may create roles (ALTER ROLE %I NOCREATEROLE)', r.rolname);
    end if;
    if r.rolcreatedb then
        problems := problems || format('may create databases (ALTER ROLE %I NOCREATEDB)', r.rolname);
    end if;
    if r.rolreplication then
        problems := problems || format('may replicate (ALTER ROLE %I NOREPLICATION)', r.rolname);
    end if;
    if not r.rolinherit then
        problems := problems || format(
            'is NOINHERIT, so it would not get codesift_tenant''s rights (ALTER ROLE %I INHERIT)',
            r.rolname
        );
    end if;
    for g in
        select distinct a.rolname, m.roleid = tenant_group as is_group
        from pg_catalog.pg_auth_members as m
        inner join pg_catalog.pg_roles as a on a.oid = m.roleid
        where m.member = role_oid and (m.roleid <> tenant_group or m.admin_option)
        order by a.rolname
    loop
        if g.is_group then
            problems := problems || format(
                'may grant codesift_tenant to other roles '
                '(REVOKE ADMIN OPTION FOR codesift_tenant FROM %I)',
                r.rolname
            );
        else
            problems := problems || format(
                'is a member of %I (REVOKE %I FROM %I)', g.rolname, g.rolname, r.rolname
            );
        end if;
    end loop;
    for g in
        select distinct a.rolname
        from pg_catalog.pg_auth_members as m
        inner join pg_catalog.pg_roles as a on a.oid = m.member
        where
            m.roleid = role_oid
            and (
                coalesce((to_jsonb(m) ->> 'inherit_option')::boolean, true)
                or coalesce((to_jsonb(m) ->> 'set_option')::boolean, true)
            )
        order by a.rolname
    loop
        problems := problems || format(
            '%I is a member of it and can act as it (REVOKE %I FROM %I)',
            g.rolname, r.rolname, g.rolname
        );
    end loop;
    for g in
        select distinct a.rolname
        from pg_catalog.pg_auth_members as m
        inner join pg_catalog.pg_roles as a on a.oid = m.roleid
        where m.member = tenant_group
        order by a.rolname
    loop
        problems := problems || format(
            'is a member of codesift_tenant, which is a member of %I '
            '(REVOKE %I FROM codesift_tenant)',
            g.rolname, g.rolname
        );
    end loop;
    if cardinality(objects) > 5 then
        objects := objects[1:5] || format(
            'owns or holds privileges on %s more objects (DROP OWNED BY %I removes them all)',
            cardinality(objects) - 5, r.rolname
        );
    end if;
    return problems || objects;
end
$$;

comment on function codesift.login_role_problems(text) is
'What the role holds beyond what codesift grants a per-tenant login role (membership in '
'codesift_tenant and nothing else), each with the statement that removes it; null when '
'nothing. Refused at grant (codesift tenant create --login-role) and at every use.';

-- The tenant this session acts as: a per-tenant role's own tenant; for the
-- application and loader roles the tenant named by app.current_tenant_id;
-- for anyone else none. Policies call it once per statement (an InitPlan).
-- A session that logged in as a per-tenant role acts as none once it switched
-- to another role (its group); and a per-tenant role that holds anything beyond
-- what codesift grants it (login_role_problems: an attribute, a membership, a
-- privilege given after its grant) is refused with an error, not shown its rows.
create or replace function codesift.current_tenant_id()
returns bigint
language plpgsql
stable parallel safe
security invoker
set search_path = codesift, pg_catalog
as $$
declare
    mapped bigint;
    problems text[];
    raw text;
begin
    if session_user <> current_user then
        perform from codesift.tenant_roles as r where r.role_name = session_user::text;
        if found then
            problems := codesift.login_role_problems(session_user::text);
            if problems is not null then
                raise exception 'role % may not act as a tenant: it %', session_user, array_to_string(problems, '; it ')
                using errcode = '42501',
                hint = 'a per-tenant login role holds membership in codesift_tenant and nothing else';
            end if;
            return null;
        end if;
    end if;
    select r.tenant_id into mapped from codesift.tenant_roles as r where r.role_name = current_user::text;
    if found then
        problems := codesift.login_role_problems(current_user::text);
        if problems is not null then
            raise exception 'role % may not act as a tenant: it %', current_user, array_to_string(problems, '; it ')
            using errcode = '42501',
            hint = 'a per-tenant login role holds membership in codesift_tenant and nothing else';
        end if;
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
'The tenant this session acts as: a per-tenant login role''s own tenant (an error when the '
'role holds more than codesift grants it; none once it switched roles), else (application '
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
-- its own row, and the row of the role its session logged in as (current_tenant_id)
create policy own_role on codesift.tenant_roles for select
using (role_name = current_user or role_name = session_user);

-- The same policy on every table keyed by tenant_id, read from the catalog so that a
-- table a later migration adds gets it too; but the two read by another key before any
-- tenant is set, whose policies are their own: tenant_roles (above) and mcp_tokens
-- (009-mcp-tokens.sql). tests/db/test_rls.py seeds and checks every one of them.
do $$
declare
    t text;
begin
    for t in
        select cl.relname::text
        from pg_catalog.pg_class as cl
        inner join pg_catalog.pg_namespace as n on cl.relnamespace = n.oid
        where
            n.nspname = 'codesift' and cl.relkind in ('r', 'p')
            and cl.relname not in ('tenant_roles', 'mcp_tokens')
            and exists (
                select from pg_catalog.pg_attribute as a
                where a.attrelid = cl.oid and a.attname = 'tenant_id' and not a.attisdropped
            )
        order by cl.relname
    loop
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

-- A per-tenant login role's bounds (codesift tenant create --login-role, and the
-- upgrade below): its connection limit, and the timeouts its sessions start with
-- where the role has none of its own (an administrator's ALTER ROLE ... SET
-- stays). The limit is what the server enforces; a session may change its own
-- timeouts, so they end what a BI tool forgot, not what a hostile one runs (that
-- is bounded by the limit). Altering a role needs a superuser, or CREATEROLE
-- (and from PostgreSQL 16 ADMIN on the role). True when it changed anything.
create or replace function codesift._limit_login_role(role_name text, connection_limit integer)
returns boolean
language plpgsql
volatile
security invoker
set search_path = codesift, pg_catalog
as $$
declare
    defaults constant text[] := array[
        'statement_timeout=1min',
        'idle_in_transaction_session_timeout=1min',
        'idle_session_timeout=30min'
    ];
    r record;
    setting text;
    changed boolean := false;
begin
    if connection_limit is null or connection_limit < 0 then
        raise exception 'a per-tenant role''s connection limit is 0 or more, not %', connection_limit
        using errcode = '22023', hint = '0 stops its logins; -1 (no limit) is what this prevents';
    end if;
    select a.oid, a.rolconnlimit, s.setconfig
    into r
    from pg_catalog.pg_roles as a
    left join pg_catalog.pg_db_role_setting as s on s.setrole = a.oid and s.setdatabase = 0
    where a.rolname = role_name;
    if not found then
        raise exception 'role % does not exist', role_name using errcode = '42704';
    end if;
    if r.rolconnlimit is distinct from connection_limit then
        execute format('alter role %I connection limit %s', role_name, connection_limit);
        changed := true;
    end if;
    foreach setting in array defaults loop
        if not exists (
            select from unnest(r.setconfig) as c
            where split_part(c, '=', 1) = split_part(setting, '=', 1)
        ) then
            execute format(
                'alter role %I set %I = %L',
                role_name, split_part(setting, '=', 1), split_part(setting, '=', 2)
            );
            changed := true;
        end if;
    end loop;
    return changed;
end
$$;

comment on function codesift._limit_login_role(text, integer) is
'Set a per-tenant login role''s connection limit, and the statement and idle timeouts it has '
'none of (1min, 1min, 30min); true when it changed anything. Needs a role that may alter it.';

-- Per-tenant roles made before they had bounds get them: a role without a
-- connection limit the default of `codesift tenant create` (5, DEFAULT_CONNECTION_LIMIT
-- in loader/codesift/tenants.py), and each timeout it lacks. A migration by a
-- role that may not alter them (the schema owner without CREATEROLE, which
-- sees no row of tenant_roles either) leaves them to `codesift tenant create T
-- --login-role R` run with a superuser DSN, which sets them too.
do $$
declare
    r record;
begin
    for r in
        select t.role_name, n.name as tenant, a.rolconnlimit
        from codesift.tenant_roles as t
        inner join codesift.tenants as n on n.id = t.tenant_id
        inner join pg_catalog.pg_roles as a on a.rolname = t.role_name
        order by t.role_name
    loop
        begin
            perform codesift._limit_login_role(
                r.role_name, case when r.rolconnlimit < 0 then 5 else r.rolconnlimit end
            );
        exception when insufficient_privilege then
            raise warning 'per-tenant role % has no connection limit or timeouts yet: this role may not alter it', r.role_name
            using hint = format(
                'run codesift tenant create %s --login-role %s with a superuser DSN', r.tenant, r.role_name
            );
        end;
    end loop;
end
$$;
