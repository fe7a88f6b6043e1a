-- Citus: the query functions plan every statement with its parameters' values
-- (applied by `codesift migrate --citus` after sql/citus/001-distribute.sql, and again
-- after every migration, since `create or replace` resets a function's settings).
--
-- On one node some legs force generic plans (planned once per backend). Citus routes a
-- statement to the worker holding a tenant's shards by the value of its tenant_id, which a
-- generic plan does not know: those functions plan custom plans here instead.
do $$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_proc as p
        where
            p.pronamespace = 'codesift'::regnamespace
            and 'plan_cache_mode=force_generic_plan' = any(p.proconfig)
    loop
        execute format('alter function %s set plan_cache_mode = force_custom_plan', f);
    end loop;
end
$$;
