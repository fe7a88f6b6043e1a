-- The file-level index of the blobs just inserted (extraction.py on_blobs_inserted): lexemes,
-- counts and what extraction left out, per (tenant $1[i], sha $2[i]), for the blobs of
-- tenant $8 (a single tenant per statement, so that Citus routes it to that tenant's shard).
update codesift.blobs as b set
    lexemes = to_tsvector('simple', t.terms),
    term_count = t.term_count,
    line_count = t.line_count,
    token_count = t.token_count,
    extraction_limited = t.limited
from
    unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[])
        as t (tenant_id, sha, terms, term_count, line_count, token_count, limited)
where b.tenant_id = $8 and t.tenant_id = $8 and b.sha = t.sha
