-- Tenant $1's statistics grow by the symbol postings of the blobs $2 just inserted
-- (postings_symbols.sql: one posting per symbol and lexeme): each term's document frequency.
-- Counted from the symbols' lexemes, the postings' own source, not by joining the postings:
-- a tenant newer than the table statistics looks empty to the planner, which then probed
-- each of the tenant's postings against its symbols, quadratic in the tenant's size.
insert into codesift.term_stats as t (tenant_id, tier, term, df)
select
    s.tenant_id,
    'symbol' as tier,
    u.lexeme as term,
    count(*) as df
from codesift.code_symbols as s
cross join lateral unnest(s.lexemes) as u (lexeme, positions, weights)
where s.tenant_id = $1 and s.blob_sha = any($2)
group by s.tenant_id, u.lexeme
order by u.lexeme
on conflict (tenant_id, tier, term) do update set df = t.df + excluded.df
