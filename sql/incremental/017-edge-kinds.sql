-- Edges beyond imports: code_symbol_edges also holds edges from a test to the code it tests
-- (relation 'tests'), from a file to the files its imported names are defined in ('references')
-- and between files that change in the same commits ('co_change', mined by the loader from
-- git history). An edge's weight orders a file's edges for the graph walk's fanout (strongest
-- first); import edges keep weight 1.
alter table codesift.code_symbol_edges
add column weight real not null default 1
constraint code_symbol_edges_weight_range check (weight > 0 and weight <= 1);
