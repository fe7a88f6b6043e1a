-- Tenant $1's symbol corpus grows by the symbols of the blobs $2 just inserted that have
-- postings (a lexeme at least): documents and their terms (for the average document
-- length). From the symbols' lexemes, as postings_symbol_stats.sql and for its reason.
insert into codesift.corpus_stats as c (tenant_id, tier, docs, total_terms)
select
    s.tenant_id,
    'symbol' as tier,
    count(distinct s.id) as docs,
    coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) as total_terms
from codesift.code_symbols as s
cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
where s.tenant_id = $1 and s.blob_sha = any($2)
group by s.tenant_id
on conflict (tenant_id, tier) do update
    set docs = c.docs + excluded.docs, total_terms = c.total_terms + excluded.total_terms
