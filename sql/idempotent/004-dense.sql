-- The dense legs, over symbols and over files: cosine distance on the HNSW
-- indexes (statements in plpython/codesift_db/dense.py), with the filters and
-- bounds every leg takes (live_files, _leg_bounds: 003-legs.sql) and, like
-- every leg, JIT off. Both legs walk at ef_search 200 (dense.LEG_EF_SEARCH, or `set
-- codesift.ef_search` for a session): at 100k real symbols in one tenant ef_search 100
-- misses the recall target, and at 90k real file vectors the file leg does too
-- (bench/results/hnsw-recall-real.txt). A walk over a table of more rows searches wider
-- still, in proportion to them (dense.wider_ef_search). The pipeline runs dense.py in its
-- own process, under the same settings (dense.leg_settings); these functions are the
-- legs for any other caller.

-- the names before they began with an underscore (internal)
drop function if exists codesift.dense_symbols(
    bigint, vector, text, bigint[], text, text, text[], integer
);
drop function if exists codesift.dense_files(bigint, vector, text, bigint[], text, text, integer);

create or replace function codesift._dense_symbols(
    tenant bigint, embedding vector, model text, repository_ids bigint[], path_prefix text,
    lang text, kinds text[], k integer
)
returns table (symbol_id bigint, distance double precision)
language plpython3u
stable
security invoker
set search_path = codesift, public
set jit = off
as $$
# one cached statement per filter combination, under the legs' settings: see
# plpython/codesift_db/dense.py
from codesift_db import dense
dense.check_bounds(plpy, k, kinds, repository_ids)
with dense.leg_settings(plpy):
    return dense.symbols(plpy, tenant, embedding, model, repository_ids, path_prefix, lang,
                         kinds, k)
$$;

comment on function codesift._dense_symbols(
    bigint, vector, text, bigint[], text, text, text[], integer
) is
'Dense leg over symbols: cosine distance on the HNSW index, with iterative scans so that '
'filters still yield k rows.';

create or replace function codesift._dense_files(
    tenant bigint, embedding vector, model text, repository_ids bigint[], path_prefix text,
    lang text, k integer
)
returns table (repository_id bigint, path text, distance double precision)
language plpython3u
stable
security invoker
set search_path = codesift, public
set jit = off
as $$
from codesift_db import dense
dense.check_bounds(plpy, k, None, repository_ids)
with dense.leg_settings(plpy):
    return dense.files(plpy, tenant, embedding, model, repository_ids, path_prefix, lang, k)
$$;

comment on function codesift._dense_files(bigint, vector, text, bigint[], text, text, integer) is
'Dense leg over files: cosine distance on the blobs'' HNSW index, live files passing filters.';
