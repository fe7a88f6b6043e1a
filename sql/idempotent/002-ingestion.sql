-- Ingestion functions: identifier-aware text for full-text search, symbol and
-- import extraction when blobs arrive, import-edge resolution per repository.
-- Bodies are thin shims over plpython/codesift_db (plain, unit-tested modules).

-- the name before it began with an underscore (internal); path_terms keeps its
-- name: the loader calls it (loader/codesift/indexer.py)
drop function if exists codesift.identifier_terms(text);

create or replace function codesift._identifier_terms(source text)
returns text
language plpython3u
immutable strict parallel safe
security invoker
set search_path = codesift, public
as $$
from codesift_db.identifiers import identifier_terms
return identifier_terms(source)
$$;

comment on function codesift._identifier_terms(text) is
'Whole identifiers and their parts, lowercased (searchBlobs -> searchblobs search blobs), '
'for to_tsvector(''simple'', ...).';

create or replace function codesift.path_terms(path text)
returns text
language plpython3u
immutable strict parallel safe
security invoker
set search_path = codesift, public
as $$
from codesift_db.identifiers import path_terms
return path_terms(path)
$$;

comment on function codesift.path_terms(text) is
'Search terms of a repository path: its components, stem and extension.';

create or replace function codesift.extract_blobs()
returns trigger
language plpython3u
volatile
security invoker
set search_path = codesift, public
as $$
from codesift_db.ingest.extraction import on_blobs_inserted
on_blobs_inserted(plpy)
$$;

comment on function codesift.extract_blobs() is
'Statement trigger on blobs: extracts symbols, import statements, references and lexemes of '
'the new blobs in the inserting transaction.';

drop trigger if exists blobs_extract on codesift.blobs;
create trigger blobs_extract
after insert on codesift.blobs
referencing new table as new_blobs
for each statement
execute function codesift.extract_blobs();

create or replace function codesift.resolve_edges(repository_id bigint)
returns integer
language plpython3u
volatile strict
security invoker
set search_path = codesift, public
as $$
from codesift_db.ingest.extraction import resolve_repository_edges
return resolve_repository_edges(plpy, repository_id)
$$;

comment on function codesift.resolve_edges(bigint) is
'Recomputes a repository''s import, tests and references edges from its live files (its '
'co-change edges are the loader''s); returns the number of edges.';

-- only the edges from some files (codesift watch: their contents changed, the set of live
-- paths did not); at most 10,000 paths
create or replace function codesift.resolve_edges(repository_id bigint, source_paths text[])
returns integer
language plpython3u
volatile strict
security invoker
set search_path = codesift, public
as $$
from codesift_db.ingest.extraction import resolve_repository_edges
return resolve_repository_edges(plpy, repository_id, list(source_paths))
$$;

comment on function codesift.resolve_edges(bigint, text[]) is
'Recomputes the import, tests and references edges from the given live files of a repository (right when only '
'their contents changed, not the set of live paths); returns the number of edges from them. '
'At most 10,000 paths.';

-- refresh_statistics: a ref or tenant indexed for the first time is planned from statistics
-- that do not know it (a small tenant's rows estimated as the average tenant's), and
-- autovacuum reads them again only once a tenth of a whole table has changed. The loader
-- calls this after a ref's first index (loader/codesift/indexer.py). A security definer
-- function because only a table's owner may ANALYZE it before PostgreSQL 17; it takes no
-- argument and returns no row of any tenant. Every table is read, changed or not: the
-- counts of changes other sessions made may not be reported yet.
create or replace function codesift.refresh_statistics()
returns integer
language plpgsql
volatile
security definer
set search_path = codesift, pg_catalog
as $fn$
declare
    written constant text[] := array[
        'repositories', 'blobs', 'files', 'code_symbols', 'symbol_terms', 'blob_terms',
        'term_stats', 'corpus_stats', 'blob_imports', 'file_edges', 'code_references'
    ];
    t text;
begin
    foreach t in array written loop
        execute format('analyze codesift.%I', t);
    end loop;
    return cardinality(written);
end;
$fn$;

comment on function codesift.refresh_statistics() is
'ANALYZE the tables an index run writes, as their owner (the loader calls it after a '
'ref''s first index); returns how many it analyzed.';
