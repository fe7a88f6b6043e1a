-- Impact and diff context: what depends on a definition or a file (callers, importers,
-- co-changes, the tests that reach it), the definitions a change touches, and the context a
-- review needs packed under a token budget (plpython/codesift_db/impact.py,
-- diff_context.py). Each acts as the session's tenant (codesift.current_tenant_id()), reads
-- only live files of the refs it names, and raises 22023/22004 for a bad argument and
-- 42704 for an unknown repository or ref, with a hint.

-- impact: what depends on a definition or a file, transitively, ranked.
create or replace function codesift.impact(
    target text,
    repo text default null,
    ref text default null,
    depth integer default 2,
    max_rows integer default 200
)
returns table (
    rank integer, repository text, path text, symbol text, kind text, start_line integer,
    end_line integer, relation text, hops integer, via text, chain text[], is_test boolean,
    score double precision, citation text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.impact import impact
return impact(plpy, target, repo, ref, depth, max_rows)
$$;

comment on function codesift.impact(text, text, text, integer, integer) is
'What depends on a definition or a file at the ref, up to depth hops (1..4; up to 100 is '
'clamped to 4 with a NOTICE, more raises 22023), the most affected first: one row per '
'definition or file reached, with relation (the edge that reaches it: calls, calls_by_name, '
'imports, tests, co_change), hops, via (the citation it is reached from), chain (each step '
'from the target, ''relation citation''), is_test and score. target: a name as find_symbol '
'takes it (''send'', ''Session.send''), a citation of a line inside a definition '
'(''repo:path:12''), or a file (''src/app.py'', ''repo:src/app.py''). Only resolved callers '
'are followed further; importers are followed for a file; co-changes and tests are leaves. '
'max_rows 1..1000. Bounded work (nodes, edges, 10 s): a NOTICE says when it stopped early. '
'ref: that indexed ref (default: the default ref).';

-- changed_symbols: the definitions whose lines differ between two indexed refs.
create or replace function codesift.changed_symbols(
    repo text default null,
    base_ref text default null,
    head_ref text default null,
    max_rows integer default 1000
)
returns table (
    repository text, ref text, path text, symbol text, kind text, change text,
    start_line integer, end_line integer, changed_lines integer[], citation text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.diff_context import changed_symbols
return changed_symbols(plpy, repo, base_ref, head_ref, max_rows)
$$;

comment on function codesift.changed_symbols(text, text, text, integer) is
'The definitions a change touches between two indexed refs of a repository (both indexed: '
'the lines are compared from the stored blobs, no git needed): each changed line is '
'attributed to the innermost definition holding it. change: added (no definition of that '
'name in the file at base_ref), modified, or deleted (cited at base_ref); ref: the ref the '
'citation and lines are of; changed_lines: the changed lines inside it. max_rows 1..5000.';

-- diff_context: a change's definitions, their callers and the tests that reach them,
-- packed under a token budget.
create or replace function codesift.diff_context(
    repo text default null,
    base_ref text default null,
    head_ref text default null,
    token_budget integer default 4000,
    diff text default null,
    ref text default null
)
returns table (
    rank integer, role text, repository text, ref text, path text, symbol text,
    start_line integer, end_line integer, reason text, tokens integer, citation text,
    text text
)
language plpython3u
stable
security invoker
set search_path = codesift, public
as $$
from codesift_db.diff_context import diff_context
return diff_context(plpy, repo, base_ref, head_ref, token_budget, diff, ref)
$$;

comment on function codesift.diff_context(text, text, text, integer, text, text) is
'The context a review of a change needs, packed under token_budget (1..200,000; the rows'' '
'tokens sum to at most it): role change (each changed definition, head''s text; deleted '
'ones base''s), hunk (changed lines outside any definition, or a diff''s hunks), caller (the '
'direct callers of the changed definitions) and test (test definitions that reach them '
'within two hops), each with its citation, why it is there (reason) and its text (header '
'line, then its lines); then caller_list and test_list (one per file: the callers and tests '
'whose bodies did not fit, a line each, ''START-END name''). The change is base_ref..head_ref, both indexed refs of repo; or '
'diff, a unified diff (git diff, at most 5,000,000 characters) applied to ref (default: the '
'default ref): its hunks are read against that ref''s files, and a path that leaves the '
'repository (.., absolute, control characters) raises 22023.';
