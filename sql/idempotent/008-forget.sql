-- Forgetting: a repository or a whole tenant goes with everything it owned, and
-- the BM25 statistics (document frequencies, corpus sizes) go down with the
-- blobs, so that a forgotten repository leaves no vocabulary behind. Each runs
-- for the session's tenant only (codesift.current_tenant_id()).

-- the name before it began with an underscore (internal: forget_repository calls it)
drop function if exists codesift.collect_garbage();

-- Blobs of the tenant that no file of any repository points at: their
-- postings leave the statistics, then they go (symbols, imports, postings and
-- vectors cascade).
create or replace function codesift._collect_garbage()
returns integer
language plpgsql
volatile
security invoker
set search_path = codesift, public
as $$
declare
    tenant bigint := codesift._required_tenant();
    doomed text[];
begin
    doomed := array(
        select b.sha from codesift.blobs as b
        where
            b.tenant_id = tenant
            and not exists (
                select from codesift.files as f where f.tenant_id = tenant and f.blob_sha = b.sha
            )
    );
    if cardinality(doomed) > 0 then
        perform codesift._forget_blobs(doomed);
    end if;
    -- vectors no symbol or file of the tenant holds any more (forgotten, or another model's)
    delete from codesift.embeddings as e
    where
        e.tenant_id = tenant
        and not exists (
            select from codesift.code_symbols as s
            where s.tenant_id = tenant and s.embedding_key = e.key
        )
        and not exists (
            select from codesift.blobs as b
            where b.tenant_id = tenant and b.embedding_key = e.key
        );
    return cardinality(doomed);
end
$$;

create or replace function codesift._forget_blobs(doomed text[])
returns void
language plpgsql
volatile
security invoker
set search_path = codesift, public
as $$
declare
    tenant bigint := codesift._required_tenant();
begin
    update codesift.term_stats as ts
    set df = ts.df - d.df
    from (
        -- the postings' own source, the symbols' lexemes (postings_symbol_stats.sql)
        select u.lexeme as term, count(*) as df
        from codesift.code_symbols as s
        cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
        where s.tenant_id = tenant and s.blob_sha = any(doomed)
        group by u.lexeme
    ) as d
    where ts.tenant_id = tenant and ts.tier = 'symbol' and ts.term = d.term;

    update codesift.term_stats as ts
    set df = ts.df - d.df
    from (
        select t.term, count(*) as df
        from codesift.blob_terms as t
        where t.tenant_id = tenant and t.blob_sha = any(doomed)
        group by t.term
    ) as d
    where ts.tenant_id = tenant and ts.tier = 'file' and ts.term = d.term;

    update codesift.corpus_stats as c
    set docs = c.docs - d.docs, total_terms = c.total_terms - d.total_terms
    from (
        select
            'symbol' as tier,
            count(distinct s.id) as docs,
            coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) as total_terms
        from codesift.code_symbols as s
        cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
        where s.tenant_id = tenant and s.blob_sha = any(doomed)
        union all
        select
            'file',
            count(distinct t.blob_sha),
            coalesce(sum(t.tf), 0)
        from codesift.blob_terms as t
        where t.tenant_id = tenant and t.blob_sha = any(doomed)
    ) as d
    where c.tenant_id = tenant and c.tier = d.tier;

    delete from codesift.term_stats where tenant_id = tenant and df <= 0;
    delete from codesift.corpus_stats where tenant_id = tenant and docs <= 0;
    delete from codesift.blobs where tenant_id = tenant and sha = any(doomed);
end
$$;
comment on function codesift._forget_blobs(text[]) is
'Deletes the given blobs of the session''s tenant (with their symbols, imports and postings) and takes '
'their postings out of the BM25 statistics; called by _collect_garbage.';

comment on function codesift._collect_garbage() is
'Deletes the session tenant''s blobs that no file points at (with their symbols, imports, '
'postings and vectors) and takes their postings out of the BM25 statistics, then the '
'stored vectors no symbol or file holds any more; returns how many blobs.';

-- Before refs forget_repository took the name alone: dropped, not overloaded.
drop function if exists codesift.forget_repository(text);

create or replace function codesift.forget_repository(repo text, ref text default null)
returns integer
language plpgsql
volatile
security invoker
set search_path = codesift, public
as $$
declare
    tenant bigint := codesift._required_tenant();
    doomed bigint[];
    was_default boolean;
begin
    if repo is null then
        raise exception 'repo must not be null'
        using errcode = '22004', hint = 'codesift status lists the indexed repositories';
    end if;
    select array_agg(r.id), bool_or(r.is_default) into doomed, was_default
    from (
        select o.id, o.is_default from codesift.repositories as o
        where
            o.tenant_id = tenant and o.name = repo
            and (forget_repository.ref is null or o.ref = forget_repository.ref)
        for update
    ) as r;
    if doomed is null then
        raise exception 'unknown repository ''%''%', repo,
            case when forget_repository.ref is null then '' else
                format(' at ref %L', forget_repository.ref) end
        using errcode = '42704', hint = 'codesift status lists the indexed repositories and refs';
    end if;
    delete from codesift.repositories where tenant_id = tenant and id = any(doomed);
    if was_default then
        -- the repository keeps a default ref: the one indexed last
        update codesift.repositories set is_default = true
        where tenant_id = tenant and id = (
            select o.id from codesift.repositories as o
            where o.tenant_id = tenant and o.name = repo
            order by o.indexed_at desc nulls last, o.id desc
            limit 1
        );
    end if;
    return codesift._collect_garbage();
end
$$;

comment on function codesift.forget_repository(text, text) is
'Removes a repository of the session''s tenant (or only its indexed ref `ref`; another ref '
'becomes the default when the default goes): its trees, their edges, and the blobs '
'and vectors no other ref of the tenant uses; returns the number of blobs removed.';

create or replace function codesift.forget_tenant()
returns void
language plpgsql
volatile
security invoker
set search_path = codesift, public
as $$
declare
    tenant bigint := codesift._required_tenant();
begin
    -- every table's rows of the tenant cascade from it
    delete from codesift.tenants where id = tenant;
end
$$;

comment on function codesift.forget_tenant() is
'Removes the session''s tenant and everything it owned (repositories, trees, blobs, symbols, '
'postings, statistics, vectors, per-tenant role mappings).';
