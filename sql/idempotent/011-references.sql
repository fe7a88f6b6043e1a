-- References at symbol level: the uses of a definition, its callers and its callees, read
-- from the references the extraction trigger stores per blob (codesift.code_references,
-- plpython/codesift_db/ingest/references.py) and resolved through the ref's import edges
-- (plpython/codesift_db/references.py). Each acts as the session's tenant
-- (codesift.current_tenant_id()), reads only live files of the ref, and raises 22023/22004
-- for a bad argument, with a hint.

-- find_references: every use of a definition at the ref.
create or replace function codesift.find_references(
    name text,
    repo text default null,
    ref text default null,
    path text default null,
    max_rows integer default 200
)
returns table (
    repository text, path text, line integer, symbol text, is_call boolean, qualifier text,
    resolution text, definition text, line_text text, citation text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.references import find_references
return find_references(plpy, name, repo, ref, path, max_rows)
$$;

comment on function codesift.find_references(text, text, text, text, integer) is
'Every use of a definition at the ref: one row per use (file, line, the qualified name of the '
'symbol it is in, whether it is a call, the object of a member use, the line''s text, its '
'citation). name: as find_symbol takes it (''send'', ''Session.send''), or a citation '
'(''repo:path:12''); path keeps the definitions of that file. resolution: resolved (bound to '
'the definition through an import, its own file or package; definition cites it) or by_name '
'(only the name matches); uses bound elsewhere are left out. Resolved rows first. max_rows '
'1..1000. ref: that indexed ref (default: the default ref).';

-- callers: the symbols that call a definition.
create or replace function codesift.callers(
    symbol text,
    repo text default null,
    ref text default null,
    path text default null,
    max_rows integer default 200
)
returns table (
    repository text, path text, caller text, caller_kind text, start_line integer,
    end_line integer, lines integer[], resolution text, definition text, citation text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.references import callers
return callers(plpy, symbol, repo, ref, path, max_rows)
$$;

comment on function codesift.callers(text, text, text, text, integer) is
'The symbols that call a definition at the ref: one row per calling symbol (null caller: the '
'top level of its file) with its kind, lines and citation, the lines of its calls, and the '
'resolution of the calls (resolved, with the definition they reach, or by_name). symbol: a '
'name, a qualified name or a citation (''repo:path:12''); path keeps the definitions of that '
'file. max_rows 1..1000. ref: that indexed ref (default: the default ref).';

-- callees: what a definition calls.
create or replace function codesift.callees(
    symbol text,
    repo text default null,
    ref text default null,
    path text default null,
    max_rows integer default 200
)
returns table (
    repository text, path text, symbol text, callee text, qualifier text, lines integer[],
    resolution text, definition text, definition_symbol text, candidates integer, module text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.references import callees
return callees(plpy, symbol, repo, ref, path, max_rows)
$$;

comment on function codesift.callees(text, text, text, text, integer) is
'The names a definition calls at the ref (its own calls, not those of definitions nested in '
'it): one row per name called (with the object it is called on) with the lines of the calls '
'and its resolution: resolved (definition cites what it reaches), by_name (candidates '
'definitions have the name; definition cites the only one) or external (nothing at the ref '
'defines it; module: the import it comes through). symbol: a name, a qualified name or a '
'citation (''repo:path:12''); path keeps the definitions of that file. max_rows 1..1000.';

-- backfill_references: the references of blobs stored before references were extracted.
create or replace function codesift.backfill_references(max_blobs integer default 500)
returns integer
language plpython3u
volatile
security invoker
set search_path = codesift, public
as $$
from codesift_db.ingest.extraction import backfill_references
return backfill_references(plpy, max_blobs)
$$;

comment on function codesift.backfill_references(integer) is
'Extracts the references of the session tenant''s blobs stored before references existed '
'(blobs.references_extracted false), at most max_blobs (1..10,000) and for about 30 s per '
'call; returns how many blobs it did: call it until it returns 0. New blobs get theirs from '
'the extraction trigger.';
