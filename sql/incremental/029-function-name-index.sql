-- The top-level functions by name, for the lookup of what a bare call may mean
-- (plpython/codesift_db/sql/called_symbols.sql). Through the index of every name it read
-- each definition of each version of every file (methods, nested functions, classes) only to
-- keep the few top-level functions; this index holds those alone. Its predicate is the
-- lookup's own condition, so that the planner can use it under row-level security too.
create index code_symbols_function_name on codesift.code_symbols (tenant_id, name_key)
where kind = 'function' and lower(qualified_name) = name_key;
