-- Citus: shard codesift by tenant (applied by `codesift migrate --citus` on the
-- coordinator, after the ordinary migrations, in one transaction; re-running it
-- changes nothing).
--
-- Derived from the catalog, not from a list of today's tables, so a table added
-- by a later migration is handled the same way:
--   * every table of schema codesift with a tenant_id column is distributed by
--     tenant_id, all co-located (a tenant's rows of every table on one worker);
--   * the rest are reference tables (a copy on every node), and so are the
--     tenant-keyed tables looked up before the tenant is known (see below);
--   * a unique or primary key that does not contain tenant_id (Citus cannot
--     enforce it across shards) is rebuilt with tenant_id leading (a unique key
--     that already exists so is simply dropped).
-- Policies, indexes (HNSW, GIN, the postings indexes) and the extraction trigger
-- are created on every shard by Citus itself.
do $$
declare
    -- Keyed by tenant_id but read by another key before any tenant is set:
    -- current_tenant_id() reads tenant_roles by role name (in every policy, on
    -- every node), token_tenant() reads mcp_tokens by token hash. Small tables,
    -- replicated to every node so those reads stay local.
    by_other_key constant text[] := array['tenant_roles', 'mcp_tokens'];
    t record;
    c record;
    cols text[];
    tenant_tables text[];
    first_tenant_table text;
    pol record;
    subquery constant text := '\(\s*SELECT codesift\.current_tenant_id\(\) AS current_tenant_id\)';
begin
    perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
    -- the extraction trigger on blobs goes onto the shards (it runs on the workers)
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
    -- names in pg_policies come schema-qualified
    perform set_config('search_path', 'pg_catalog', true);

    -- Citus refuses subqueries in policies on its tables: the scalar subquery that makes
    -- the tenant check an InitPlan on one node becomes a plain call (an installation made
    -- before Citus; sql/idempotent/001-tenancy.sql writes that form once Citus is there).
    for pol in
        select
            p.tablename,
            p.policyname,
            regexp_replace(p.qual, subquery, 'codesift.current_tenant_id()', 'g') as qual,
            regexp_replace(p.with_check, subquery, 'codesift.current_tenant_id()', 'g') as with_check
        from pg_policies as p
        where p.schemaname = 'codesift' and concat(p.qual, p.with_check) ~* 'select'
    loop
        if concat(pol.qual, pol.with_check) ~* 'select' then
            raise exception 'policy % on codesift.% holds a subquery, which Citus refuses',
            pol.policyname, pol.tablename;
        end if;
        execute format('alter policy %I on codesift.%I', pol.policyname, pol.tablename)
        || coalesce(' using (' || pol.qual || ')', '')
        || coalesce(' with check (' || pol.with_check || ')', '');
    end loop;

    select array_agg(cl.relname::text order by cl.relname) into tenant_tables
    from pg_class as cl
    inner join pg_namespace as n on cl.relnamespace = n.oid
    where
        n.nspname = 'codesift' and cl.relkind in ('r', 'p')
        and not cl.relname = any(by_other_key)
        and exists (
            select from pg_attribute as a
            where a.attrelid = cl.oid and a.attname = 'tenant_id' and not a.attisdropped
        );

    -- Keys without tenant_id.
    for t in select unnest(tenant_tables) as relname loop
        for c in
            select
                con.conname,
                con.contype,
                array(
                    select a.attname::text from unnest(con.conkey) with ordinality as k (attnum, ord)
                    inner join pg_attribute as a on a.attrelid = con.conrelid and a.attnum = k.attnum
                    order by k.ord
                ) as columns
            from pg_constraint as con
            where
                con.conrelid = format('codesift.%I', t.relname)::regclass
                and con.contype in ('p', 'u')
        loop
            continue when 'tenant_id' = any(c.columns);
            cols := array['tenant_id'] || c.columns;
            execute format('alter table codesift.%I drop constraint %I', t.relname, c.conname);
            -- a primary key stays one (with tenant_id) even when the same unique key
            -- exists: it is the replica identity of logical-replication shard moves
            continue when c.contype = 'u' and exists (
                select from pg_constraint as o
                where
                    o.conrelid = format('codesift.%I', t.relname)::regclass
                    and o.contype in ('p', 'u')
                    and array(
                        select a.attname::text
                        from unnest(o.conkey) with ordinality as k (attnum, ord)
                        inner join pg_attribute as a on a.attrelid = o.conrelid and a.attnum = k.attnum
                        order by k.ord
                    ) = cols
            );
            execute format(
                'alter table codesift.%I add constraint %I %s (%s)',
                t.relname, c.conname,
                case c.contype when 'p' then 'primary key' else 'unique' end,
                (select string_agg(quote_ident(x), ', ') from unnest(cols) as x)
            );
        end loop;
        if exists (
            select from pg_index as i
            where
                i.indrelid = format('codesift.%I', t.relname)::regclass and i.indisunique
                and not exists (
                    select from pg_attribute as a
                    where a.attrelid = i.indrelid and a.attname = 'tenant_id' and a.attnum = any(i.indkey)
                )
        ) then
            raise exception 'codesift.% has a unique index without tenant_id', t.relname
            using hint = 'make it lead with tenant_id in a migration: Citus cannot enforce it across shards';
        end if;
    end loop;

    -- Foreign keys come off while the tables are distributed and go back on after:
    -- a reference table with a foreign key from a still local table would make Citus
    -- convert (drop and re-create) the whole local graph, views included.
    create temporary table citus_foreign_keys on commit drop as
    select con.conrelid::regclass as rel, con.conname, pg_get_constraintdef(con.oid) as def
    from pg_constraint as con
    inner join pg_class as cl on con.conrelid = cl.oid
    inner join pg_namespace as n on cl.relnamespace = n.oid
    where
        n.nspname = 'codesift' and con.contype = 'f'
        and not exists (select from pg_dist_partition as p where p.logicalrelid = con.conrelid);
    for c in select * from citus_foreign_keys loop
        execute format('alter table %s drop constraint %I', c.rel, c.conname);
    end loop;

    for t in
        select cl.oid::regclass as rel, cl.relname::text = any(tenant_tables) as by_tenant
        from pg_class as cl
        inner join pg_namespace as n on cl.relnamespace = n.oid
        where
            n.nspname = 'codesift' and cl.relkind in ('r', 'p')
            and not exists (select from pg_dist_partition as p where p.logicalrelid = cl.oid)
        order by cl.relname
    loop
        if t.by_tenant then
            -- co-located with the tenant tables distributed before (this run or an earlier)
            select p.logicalrelid::regclass::text into first_tenant_table
            from pg_dist_partition as p
            inner join pg_class as cl on p.logicalrelid = cl.oid
            where cl.relname::text = any(tenant_tables) and p.partmethod = 'h'
            limit 1;
            perform create_distributed_table(
                t.rel::text, 'tenant_id', colocate_with => coalesce(first_tenant_table, 'default')
            );
        else
            perform create_reference_table(t.rel::text);
        end if;
    end loop;

    for c in select * from citus_foreign_keys loop
        execute format('alter table %s add constraint %I %s', c.rel, c.conname, c.def);
    end loop;
end
$$;
