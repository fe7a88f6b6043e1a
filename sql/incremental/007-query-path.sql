-- What the query path needs is stored once, not computed on every query.

-- Okapi BM25's term weight without idf, the one formula every BM25 score uses.
create function codesift.bm25_weight(
    tf integer, dl integer, avgdl double precision,
    k1 double precision default 1.2, b double precision default 0.75
)
returns double precision
language sql
immutable parallel safe
return tf * (k1 + 1) / (tf + k1 * (1 - b + b * coalesce(dl, 0) / greatest(avgdl, 1)));

comment on function codesift.bm25_weight(
    integer, integer, double precision, double precision, double precision
) is
'Okapi BM25 term weight without idf: tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)).';

-- BM25 postings carry their document's length (so a score needs no lookup of
-- the document) and an impact: bm25_weight at the default k1 and b and the
-- tenant's average document length when the posting was written. The legs
-- find candidates among each term's best-impact postings, then score the
-- candidates exactly (every query term, today's statistics) through a
-- (document, term) index.

alter table codesift.symbol_terms add column dl integer, add column impact real;
alter table codesift.blob_terms add column dl integer, add column impact real;

update codesift.symbol_terms as t
set
    dl = coalesce(s.term_count, 0),
    impact = codesift.bm25_weight(
        t.tf, s.term_count, c.total_terms::double precision / greatest(c.docs, 1)
    )
from codesift.code_symbols as s, codesift.corpus_stats as c
where s.id = t.symbol_id and c.tenant_id = t.tenant_id and c.tier = 'symbol';

update codesift.blob_terms as t
set
    dl = coalesce(b.term_count, 0),
    impact = codesift.bm25_weight(
        t.tf, b.term_count, c.total_terms::double precision / greatest(c.docs, 1)
    )
from codesift.blobs as b, codesift.corpus_stats as c
where
    b.tenant_id = t.tenant_id and b.sha = t.blob_sha
    and c.tenant_id = t.tenant_id and c.tier = 'file';

create index symbol_terms_impact on codesift.symbol_terms (tenant_id, term, impact desc)
include (symbol_id);
drop index codesift.symbol_terms_term_tf;
create index symbol_terms_symbol_term on codesift.symbol_terms (symbol_id, term)
include (tenant_id, tf, dl);
drop index codesift.symbol_terms_symbol;

create index blob_terms_impact on codesift.blob_terms (tenant_id, term, impact desc)
include (blob_sha);
drop index codesift.blob_terms_term_tf;
create index blob_terms_blob_term on codesift.blob_terms (tenant_id, blob_sha, term)
include (tf, dl);
drop index codesift.blob_terms_blob;

-- A file's line count and token estimate (packing.estimate_tokens of its text
-- without trailing newlines), and a symbol's token estimate: whole-file items
-- need both, and reading (and decompressing) large texts only to learn that
-- they are too big to pack would dominate a query.
alter table codesift.blobs add column line_count integer, add column token_count integer;
alter table codesift.code_symbols add column token_count integer;

create function pg_temp.estimate_tokens(content text)
returns integer
language plpython3u
immutable strict
as $$
from codesift_db.packing import estimate_tokens
return estimate_tokens(content)
$$;

update codesift.blobs
set
    line_count
    = length(rtrim(content, e'\n')) - length(replace(rtrim(content, e'\n'), e'\n', '')) + 1,
    token_count = pg_temp.estimate_tokens(rtrim(content, e'\n'));

update codesift.code_symbols set token_count = pg_temp.estimate_tokens(body);

-- The newest change among a repository's live files (the recency decay's
-- reference point) is one index probe.
create index files_live_changed on codesift.files (repository_id, last_changed desc nulls last)
where live;
