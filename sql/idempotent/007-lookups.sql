-- Lookups an agent makes instead of grep (the MCP server's find_symbol, related_files
-- and list_repositories call these; so can psql or any driver). Each one acts as the
-- session's tenant (codesift.current_tenant_id()) and resolves repository names within
-- it; arguments are bounded and a bad one raises 22023 with a hint.

-- Signatures before refs (they gained `ref`): dropped, not overloaded.
drop function if exists codesift.find_symbol(text, text, text, text, integer, boolean);
drop function if exists codesift.related_files(text, text, integer, integer);

-- repository_status's rows before `ref` and before `checkout_path` (was `origin`): the same
-- argument with another result cannot be replaced, so an older one is dropped (created
-- again below); the current one is left as it is.
do $$
begin
    if exists (
        select from pg_catalog.pg_proc as p
        where
            p.oid = to_regprocedure('codesift.repository_status(text)')
            and not 'checkout_path' = any(p.proargnames)
    ) then
        drop function codesift.repository_status(text);
    end if;
end
$$;

-- find_symbol's rows before `name_line` (added last): the same arguments with another
-- result cannot be replaced, so a find_symbol without it is dropped (created again below).
do $$
begin
    if exists (
        select from pg_catalog.pg_proc as p
        where
            p.oid = to_regprocedure(
                'codesift.find_symbol(text, text, text, text, integer, boolean, text)'
            )
            and not 'name_line' = any(p.proargnames)
    ) then
        drop function codesift.find_symbol(text, text, text, text, integer, boolean, text);
    end if;
end
$$;

-- find_symbol: a definition by name or qualified name, exact (case-sensitive, then
-- case-insensitive). Nothing exact: no rows and a NOTICE with the nearest names.
create or replace function codesift.find_symbol(
    name text,
    repo text default null,
    kind text default null,
    path_prefix text default null,
    max_results integer default 20,
    include_body boolean default true,
    ref text default null
)
returns table (
    repository text, path text, start_line integer, end_line integer, symbol text,
    symbol_name text, symbol_kind text, signature text, doc text, body text, blob_sha text,
    indexed_commit text, match text, citation text, name_line integer
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.lookup import find_symbol
return find_symbol(plpy, name, repo, kind, path_prefix, max_results, include_body, ref)
$$;

comment on function codesift.find_symbol(text, text, text, text, integer, boolean, text) is
'A symbol''s definition by name or qualified name (''Session.send''): exact, then ignoring '
'case; one row per definition with its location, signature, doc (docstring, comment above), '
'body and citation, and name_line, the line of its name within start_line..end_line (the def '
'line of a decorated function; null for a symbol indexed before name_line existed). '
'No exact match: no rows and a NOTICE with the nearest names. max_results 1..200. '
'ref: that indexed ref of the repository (default: its default ref).';

-- related_files: the neighbourhood of a file in the graph of stored file edges, both
-- directions, each row named by its edge's kind.
create or replace function codesift.related_files(
    path text,
    repo text default null,
    depth integer default 1,
    max_results integer default 100,
    ref text default null
)
returns table (
    repository text, related_path text, relation text, hop integer, via text, edge_kind text,
    names text[], line integer, is_test boolean
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.lookup import related_files
return related_files(plpy, path, repo, depth, max_results, ref)
$$;

comment on function codesift.related_files(text, text, integer, integer, text) is
'The neighbourhood of a live file in the stored file edges, up to depth hops (1..3): one row '
'per related file and edge kind, relation naming it from the file''s side (imports, imported '
'by, tests, tested by, references, referenced by, changes with), with the imported names; '
'is_test marks test files. path: ''src/app.py'', ''repo:src/app.py'', a citation '
'''repo:src/app.py:10-42'' or ''repo/src/app.py''; one that leaves the repository (.., '
'absolute, control characters) raises 22023. An unknown path: no rows and a NOTICE with the '
'nearest live files. max_results 1..500. ref: that indexed ref (default: the default ref).';

-- repository_status: per indexed ref of the tenant's repositories, what is indexed and
-- what is behind.
create or replace function codesift.repository_status(repo text default null)
returns table (
    repository text, ref text, is_default boolean, checkout_path text, indexed_commit text, indexed_at timestamptz,
    head_commit text, head_seen_at timestamptz, stale boolean, worktree boolean,
    live_files bigint, symbols bigint, edges bigint, embedding_backlog bigint,
    embedding_refused bigint
)
language plpgsql
stable
security invoker
set search_path = codesift, pg_catalog
-- the plan's estimates (a ref's files at its tenant's average) would have it JIT-compiled:
-- 300 ms to count a few hundred files
set jit = off
as $$
declare
    tenant bigint := codesift.current_tenant_id();
    model text;
begin
    if length(repo) > 512 then
        raise exception 'repo is % characters; at most 512', length(repo)
        using errcode = '22023', hint = 'pass a repository name, or null for all of them';
    end if;
    select s.value into model from codesift.settings as s where s.key = 'embedding_model';
    return query
    select
        r.name,
        r.ref,
        r.is_default,
        r.checkout_path,
        r.indexed_commit,
        r.indexed_at,
        coalesce(r.head_commit, r.indexed_commit),
        r.head_seen_at,
        r.head_commit is not null and r.indexed_commit is not null
        and r.head_commit <> r.indexed_commit,
        r.indexed_worktree,
        c.live_files,
        c.symbols,
        (
            select count(*) from codesift.file_edges as e
            where e.tenant_id = r.tenant_id and e.repository_id = r.id
        ),
        c.symbols_waiting + c.files_waiting,
        c.symbols_refused + c.files_refused
    from codesift.repositories as r
    -- one pass over the ref's live files, each probing its own blob and symbols: counted
    -- from the tenant's symbols instead, a ref of 229 files in a tenant of 1.1M symbols
    -- took 3.7 s (the plan cannot know how few files a ref holds)
    cross join lateral (
        select
            count(*) as live_files,
            coalesce(sum(x.symbols), 0)::bigint as symbols,
            coalesce(sum(x.waiting), 0)::bigint as symbols_waiting,
            coalesce(sum(x.refused), 0)::bigint as symbols_refused,
            count(*) filter (where b.embedding_model is distinct from model) as files_waiting,
            count(*) filter (
                where b.embedding_model is distinct from model and b.embedding_error is not null
            ) as files_refused
        from codesift.files as f
        cross join lateral (
            select
                g.embedding_model,
                g.embedding_error
            from codesift.blobs as g
            where g.tenant_id = f.tenant_id and g.sha = f.blob_sha
            offset 0 -- noqa: AM09
        ) as b
        cross join lateral (
            select
                count(*) as symbols,
                count(*) filter (where s.embedding_model is distinct from model) as waiting,
                count(*) filter (
                    where s.embedding_model is distinct from model
                    and s.embedding_error is not null
                ) as refused
            from codesift.code_symbols as s
            where s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
        ) as x
        where f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
    ) as c
    where r.tenant_id = tenant and (repo is null or r.name = repo)
    order by r.name, not r.is_default, r.ref;
end
$$;

comment on function codesift.repository_status(text) is
'Per indexed ref of each repository of the session''s tenant (or only repo), the default ref '
'first: checkout path, indexed commit and time, the '
'head the loader last saw and whether the index is stale, live files, symbols, import edges '
'and the embedding backlog (symbols and files without a vector from the active model), of '
'which embedding_refused the embedding endpoint refused (codesift status lists them).';
