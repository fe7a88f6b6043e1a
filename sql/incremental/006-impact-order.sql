-- The BM25 legs read, per query term, only the postings with the highest term
-- frequency; an index in that order makes this a short range scan instead of a
-- sort of every posting of a frequent term. It replaces the (tenant, term) ones.
create index symbol_terms_term_tf on codesift.symbol_terms (tenant_id, term, tf desc)
include (symbol_id);
drop index codesift.symbol_terms_term;

create index blob_terms_term_tf on codesift.blob_terms (tenant_id, term, tf desc)
include (blob_sha);
drop index codesift.blob_terms_term;
