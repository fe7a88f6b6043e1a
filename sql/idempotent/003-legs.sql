-- What every retrieval leg shares (the lexical legs in 003-lexical.sql, the dense
-- legs in 004-dense.sql): the live_files view, the question's OR terms
-- (_query_terms) and the bounds every leg checks (_leg_bounds).

-- Files live at their repository's indexed head, with what filters need.
create or replace view codesift.live_files
with (security_invoker = true) as
select
    f.tenant_id,
    f.repository_id,
    f.path,
    f.blob_sha,
    f.last_changed,
    b.language
from codesift.files as f
inner join codesift.blobs as b on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where f.live;

comment on view codesift.live_files is
'Files live at their repository''s indexed head, with the blob''s language.';

create or replace function codesift._query_terms(query text)
returns text[]
language plpython3u
immutable strict parallel safe
security invoker
set search_path = codesift, public
as $$
from codesift_db.identifiers import query_terms
return query_terms(query)
$$;

comment on function codesift._query_terms(text) is
'Identifier-split, stopword-free terms of a question for an OR lexical query; never raises.';

-- What every leg accepts: each is a function of its own, callable with any
-- arguments. Generous for real use (the pipeline asks for 40 symbols and 30 files
-- with at most 64 terms, identifiers.MAX_QUERY_TERMS), small enough that no call
-- makes a leg read without bound. Raises 22004/22023 with the limit; else true.
create or replace function codesift._leg_bounds(
    k integer, terms text[], kinds text[], repository_ids bigint[]
)
returns boolean
language plpgsql
immutable parallel safe
security invoker
set search_path = codesift, public
as $fn$
declare
    max_k constant integer := 1000;  -- rows a leg returns (hybrid_search's k at most)
    max_terms constant integer := 256;  -- query terms
    max_kinds constant integer := 64;  -- symbol kinds in a filter
    max_repositories constant integer := 10000;  -- repositories searched at once
begin
    if k is null then
        raise exception 'k must not be null'
        using errcode = '22004', hint = format('pass the number of rows wanted, 1 to %s', max_k);
    end if;
    if k < 0 or k > max_k then
        raise exception 'k must be between 0 and % (got %)', max_k, k
        using errcode = '22023';
    end if;
    if cardinality(terms) > max_terms then
        raise exception 'at most % query terms (got %)', max_terms, cardinality(terms)
        using errcode = '22023';
    end if;
    if cardinality(kinds) > max_kinds then
        raise exception 'at most % symbol kinds (got %)', max_kinds, cardinality(kinds)
        using errcode = '22023';
    end if;
    if cardinality(repository_ids) > max_repositories then
        raise exception 'at most % repositories (got %)', max_repositories, cardinality(repository_ids)
        using errcode = '22023';
    end if;
    return true;
end;
$fn$;

comment on function codesift._leg_bounds(integer, text[], text[], bigint[]) is
'True when a leg''s k and arrays are within its limits (k 0..1,000; 256 terms, 64 kinds, '
'10,000 repositories); otherwise raises 22004 (null k) or 22023 naming the limit.';
