-- insert_symbols for a database not migrated to code_symbols.name_line yet (021): its
-- extraction trigger runs this newer code until `codesift migrate` (extraction.py
-- _symbol_insert). The symbols of the blobs just inserted, one array per column; $1: each
-- row's tenant. Lexemes from the identifier-split terms ($13).
insert into codesift.code_symbols (
    tenant_id, blob_sha, name, qualified_name, kind, start_line,
    end_line, signature, body, parent, part, doc, lexemes, term_count, token_count
)
select
    s.tenant_id,
    s.blob_sha,
    s.name,
    s.qualified_name,
    s.kind,
    s.start_line,
    s.end_line,
    s.signature,
    s.body,
    s.parent,
    s.part,
    nullif(s.doc, '') as doc,
    to_tsvector('simple', s.terms) as lexemes,
    s.term_count,
    s.token_count
from unnest(
    $1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[],
    $8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::int[],
    $15::int[]
)
    as s (
        tenant_id, blob_sha, name, qualified_name, kind, start_line, end_line, signature, body,
        parent, part, doc, terms, term_count, token_count
    )
