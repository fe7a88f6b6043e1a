-- A symbol's lowercase name as a column of its own, indexed with the tenant. Looking names
-- up by lower(name) could not use the expression index under row-level security: lower()
-- is not leakproof, so the planner may not evaluate it before the tenant policy and read
-- every symbol of the table instead; an equality on a plain column is leakproof.
alter table codesift.code_symbols
add column name_key text generated always as (lower(name)) stored;

create index code_symbols_name_key on codesift.code_symbols (tenant_id, name_key);

drop index codesift.code_symbols_name;
