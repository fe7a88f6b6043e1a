-- BM25 postings of the symbols of the blobs $2 just inserted for tenant $1, from the lexemes
-- just written: a lexeme's position count is its term frequency (1 when it has none); each
-- posting carries its document's length and its impact (codesift.bm25_weight, the order
-- postings are read in) at average length $3. One tenant, one table to one co-located
-- table: under Citus it runs on the shard of that tenant.
insert into codesift.symbol_terms (tenant_id, symbol_id, term, tf, dl, impact)
select
    s.tenant_id,
    s.id,
    u.lexeme,
    coalesce(array_length(u.positions, 1), 1) as tf,
    coalesce(s.term_count, 0) as dl,
    codesift.bm25_weight(coalesce(array_length(u.positions, 1), 1), s.term_count, $3) as impact
from codesift.code_symbols as s
cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
where s.tenant_id = $1 and s.blob_sha = any($2)
