-- Citus: every codesift function exists on every node. Citus copies a function to the
-- workers when it is created, unless it depends on a table that is not distributed yet
-- (the SQL-bodied functions over codesift's tables, created by the ordinary migrations
-- before 001-distribute.sql): a statement routed to a worker may call them (a leg's
-- query calls codesift._bm25_idf), so they are distributed here. Once distributed, a
-- later `create or replace` reaches the workers by itself.
do $$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_proc as p
        where
            p.pronamespace = 'codesift'::regnamespace
            and not exists (
                select from pg_dist_object as d
                where d.classid = 'pg_proc'::regclass and d.objid = p.oid
            )
        order by p.oid
    loop
        perform create_distributed_function(f);
    end loop;
end
$$;
