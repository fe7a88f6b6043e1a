-- BM25 postings of the blobs $2 just inserted for tenant $1, as postings_symbols.sql does
-- for their symbols, at average length $3.
insert into codesift.blob_terms (tenant_id, blob_sha, term, tf, dl, impact)
select
    b.tenant_id,
    b.sha,
    u.lexeme,
    coalesce(array_length(u.positions, 1), 1) as tf,
    coalesce(b.term_count, 0) as dl,
    codesift.bm25_weight(coalesce(array_length(u.positions, 1), 1), b.term_count, $3) as impact
from codesift.blobs as b
cross join lateral unnest(b.lexemes) as u (lexeme, positions, weights)
where b.tenant_id = $1 and b.sha = any($2)
