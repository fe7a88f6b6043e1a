-- Navigation an agent does before it reads code (the counterpart of ls and a glance at a
-- file's definitions): the outline of one file, and a map of a repository or folder (its
-- most central files, each with its outline) under a token budget. Each acts as the
-- session's tenant (codesift.current_tenant_id()), resolves repository names and refs
-- within it, reads only live files of the ref, and raises 22023/22004 for a bad argument
-- and 42704 for an unknown file, each with a hint (plpython/codesift_db/navigation.py).

-- file_outline's rows before `name_line` (added last): the same arguments with another
-- result cannot be replaced, so a file_outline without it is dropped (created again below).
do $$
begin
    if exists (
        select from pg_catalog.pg_proc as p
        where
            p.oid = to_regprocedure('codesift.file_outline(text, text, text)')
            and not 'name_line' = any(p.proargnames)
    ) then
        drop function codesift.file_outline(text, text, text);
    end if;
end
$$;

-- file_outline: every symbol of a live file at the ref, in file order, nested.
create or replace function codesift.file_outline(
    path text,
    repo text default null,
    ref text default null
)
returns table (
    repository text, file_path text, ordinal integer, depth integer, kind text, name text,
    qualified_name text, signature text, doc text, start_line integer, end_line integer,
    citation text, name_line integer
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.navigation import file_outline
return file_outline(plpy, path, repo, ref)
$$;

comment on function codesift.file_outline(text, text, text) is
'The outline of a live file: every symbol extraction stored, in file order (ordinal), with '
'its depth (1 for a method of a class, 2 inside it), kind, name, qualified name, signature, '
'the first line of its doc (docstring, else comment above), its lines and citation, and the '
'line of its name (name_line; null for a symbol indexed before it existed); at most 2,000 '
'rows (a NOTICE says when there were more). path: ''src/app.py'', ''repo:src/app.py'' or a citation '
'''repo:src/app.py:10-20'' (a bare path needs repo when several repositories have it). '
'An unknown file raises 42704 with the nearest live paths, or the refs where it is live. '
'ref: that indexed ref (default: the default ref).';

-- repo_map: the most central files of a repository or folder with their outlines.
create or replace function codesift.repo_map(
    repo text default null,
    path_prefix text default null,
    token_budget integer default 2000,
    ref text default null
)
returns table (
    rank integer, repository text, path text, centrality double precision, tokens integer,
    text text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.navigation import repo_map
return repo_map(plpy, repo, path_prefix, token_budget, ref)
$$;

comment on function codesift.repo_map(text, text, integer, text) is
'A map of the live files of the session''s repositories (or repo, or the folder path_prefix): '
'files ranked by PageRank over the stored file edges (imports and references; tests and '
'co-change weaker; random jumps land on code more than on tests, docs and settings), one '
'row per file in rank order: rank (its place in the ranking; a file '
'that did not fit leaves a gap), centrality (the ranks sum to 1 over the files ranked and '
'their neighbours), tokens and text, its block: its citation, then one line per symbol '
'(signature, indented by depth). Blocks are packed under token_budget (1..200,000; the '
'rows'' tokens sum to at most it), a block that does not fit cut to the symbol lines that '
'do. At most 20,000 files and 200,000 edges are read. ref: that indexed ref (default: the '
'default ref).';

-- rank_files: store the map's order of a ref's live files (the loader calls it after the
-- ref's edges; repo_map reads it).
create or replace function codesift.rank_files(repository_id bigint)
returns integer
language plpython3u
volatile strict
security invoker
set search_path = codesift, public
as $$
from codesift_db.navigation import rank_files
return rank_files(plpy, repository_id)
$$;

comment on function codesift.rank_files(bigint) is
'Computes the PageRank of a repository ref''s live files over its file edges and stores it '
'(files.centrality), the order repo_map reads; returns the number of files ranked.';
