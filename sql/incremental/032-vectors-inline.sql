-- A symbol's or a file's vector stays in its row (storage main): pgvector declares its type
-- `external`, so a row past 2 kB (a body and its lexemes beside a 1.5 kB vector) had the
-- vector moved to TOAST, and a dense leg that sorts a tenant's or a ref's rows exactly
-- fetched every vector from there, most of its time (bench/results/vector-storage.txt). Now
-- the body, the lexemes and a file's text go out of line first; a vector too large for a
-- page still may. It applies to rows written from now on: `vacuum full` on both tables
-- rewrites the rows already there (README, Upgrading).
do $migration$
declare
    distributed boolean := false;
    tbl text;
    failed text;
    propagation text;
begin
    -- a sharded installation (codesift migrate --citus run before): Citus refuses SET
    -- STORAGE on a distributed table, so each shard is altered, then the coordinator's
    -- table, from which new shards are made, with the command kept from the workers
    if to_regclass('pg_catalog.pg_dist_partition') is not null then
        execute 'select exists (select from pg_catalog.pg_dist_partition'
            ' where logicalrelid = ''codesift.code_symbols''::regclass)'
        into distributed;
    end if;
    foreach tbl in array array['codesift.code_symbols', 'codesift.blobs'] loop
        if not distributed then
            execute format('alter table %s alter column embedding set storage main', tbl);
            continue;
        end if;
        execute format(
            'select string_agg(r.result, ''; '') from run_command_on_shards(%L, %L) as r'
            ' where not r.success',
            tbl, 'alter table %s alter column embedding set storage main'
        ) into failed;
        if failed is not null then
            raise exception 'setting the storage of %.embedding on its shards failed: %', tbl, failed;
        end if;
        propagation := current_setting('citus.enable_ddl_propagation');
        perform set_config('citus.enable_ddl_propagation', 'off', true);
        execute format('alter table %s alter column embedding set storage main', tbl);
        perform set_config('citus.enable_ddl_propagation', propagation, true);
    end loop;
end;
$migration$;
