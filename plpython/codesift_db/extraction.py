"""Database glue for ingestion, called from thin PL/Python shims.

on_blobs_inserted: the statement trigger on codesift.blobs. In the same
transaction as the insert it extracts every new blob's symbols and import
statements and fills its text-search lexemes, so any client that inserts a
blob gets the same index, and no blob exists without its symbols. PostgreSQL
cannot cancel it while it runs, so each blob's extraction (extract_blob) is
bounded by the caps and the time budget of budget.py; what it left out is
recorded in blobs.extraction_limited.

resolve_repository_edges: turns the import statements of a repository's live
files into edges between paths of that repository.
"""

from . import budget, identifiers, imports, packing, plans, symbols

SYMBOL_COLUMNS = (
    "name",
    "qualified_name",
    "kind",
    "start_line",
    "end_line",
    "signature",
    "body",
    "parent",
    "part",
)


INSERT_SYMBOLS = """
insert into codesift.code_symbols (tenant_id, blob_sha, name, qualified_name, kind, start_line,
    end_line, signature, body, parent, part, doc, lexemes, term_count, token_count)
select s.tenant_id, s.blob_sha, s.name, s.qualified_name, s.kind, s.start_line, s.end_line,
    s.signature, s.body, s.parent, s.part, nullif(s.doc, ''), to_tsvector('simple', s.terms),
    s.term_count, s.token_count
from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[],
    $8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::int[],
    $15::int[])
    as s(tenant_id, blob_sha, name, qualified_name, kind, start_line, end_line, signature, body,
         parent, part, doc, terms, term_count, token_count)
"""

INSERT_IMPORTS = """
insert into codesift.blob_imports (tenant_id, blob_sha, module, names, relation, line)
select i.tenant_id, i.blob_sha, i.module,
    coalesce(array(select jsonb_array_elements_text(i.names::jsonb)), '{}'), i.relation, i.line
from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[])
    as i(tenant_id, blob_sha, module, names, relation, line)
"""

UPDATE_LEXEMES = """
update codesift.blobs b set lexemes = to_tsvector('simple', t.terms),
    term_count = t.term_count, line_count = t.line_count, token_count = t.token_count,
    extraction_limited = t.limited
from unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[])
    as t(tenant_id, sha, terms, term_count, line_count, token_count, limited)
where b.tenant_id = t.tenant_id and b.sha = t.sha
"""
TYPES_LEXEMES = ["bigint[]", "text[]", "text[]", "int[]", "int[]", "int[]", "text[]"]
LEXEME_KEYS = ("terms", "term_count", "line_count", "token_count")
# The session's per-blob extraction budget (budget.blob_seconds decides what counts).
BUDGET_SETTING = f"""
select current_setting('{budget.SETTING}', true) as seconds,
    current_setting('is_superuser') = 'on' as superuser
"""

TYPES_SYMBOLS = [
    "bigint[]",
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "int[]",
    "int[]",
    "text[]",
    "text[]",
    "text[]",
    "int[]",
    "text[]",
    "text[]",
    "int[]",
    "int[]",
]
TYPES_IMPORTS = ["bigint[]", "text[]", "text[]", "text[]", "text[]", "int[]"]


# BM25 postings derived from the lexemes just written: a lexeme's position
# count is its term frequency; each posting also carries its document's length
# and its impact (codesift.bm25_weight, the order postings are read in) at the
# tenant's average document length so far (this batch's own for a first one).
# Then the tenant's term and corpus statistics.
POSTINGS = """
with avgdl as (
    select
        coalesce(
            (select c.total_terms::float8 / nullif(c.docs, 0) from codesift.corpus_stats c
             where c.tenant_id = $1 and c.tier = 'symbol'),
            (select avg(s.term_count) from codesift.code_symbols s
             where s.tenant_id = $1 and s.blob_sha = any($2))
        ) as symbol,
        coalesce(
            (select c.total_terms::float8 / nullif(c.docs, 0) from codesift.corpus_stats c
             where c.tenant_id = $1 and c.tier = 'file'),
            (select avg(b.term_count) from codesift.blobs b
             where b.tenant_id = $1 and b.sha = any($2))
        ) as file
), new_symbols as (
    insert into codesift.symbol_terms (tenant_id, symbol_id, term, tf, dl, impact)
    select s.tenant_id, s.id, u.lexeme, u.tf, coalesce(s.term_count, 0),
        codesift.bm25_weight(u.tf, s.term_count, a.symbol)
    from codesift.code_symbols s
    cross join lateral (
        select lexeme, coalesce(array_length(positions, 1), 1) as tf from unnest(s.lexemes)
    ) u
    cross join avgdl a
    where s.tenant_id = $1 and s.blob_sha = any($2)
    returning tenant_id, symbol_id, term, tf
), new_blobs as (
    insert into codesift.blob_terms (tenant_id, blob_sha, term, tf, dl, impact)
    select b.tenant_id, b.sha, u.lexeme, u.tf, coalesce(b.term_count, 0),
        codesift.bm25_weight(u.tf, b.term_count, a.file)
    from codesift.blobs b
    cross join lateral (
        select lexeme, coalesce(array_length(positions, 1), 1) as tf from unnest(b.lexemes)
    ) u
    cross join avgdl a
    where b.tenant_id = $1 and b.sha = any($2)
    returning tenant_id, blob_sha, term, tf
), df as (
    select 'symbol' tier, term, count(*) df from new_symbols group by term
    union all
    select 'file', term, count(*) from new_blobs group by term
), term_stats as (
    insert into codesift.term_stats as t (tenant_id, tier, term, df)
    select $1, tier, term, df from df order by tier, term
    on conflict (tenant_id, tier, term) do update set df = t.df + excluded.df
)
insert into codesift.corpus_stats as c (tenant_id, tier, docs, total_terms)
select $1, tier, count(distinct doc), coalesce(sum(tf), 0) from (
    select 'symbol' tier, symbol_id::text doc, tf from new_symbols
    union all
    select 'file', blob_sha, tf from new_blobs
) d group by tier
on conflict (tenant_id, tier) do update
set docs = c.docs + excluded.docs, total_terms = c.total_terms + excluded.total_terms
"""


def symbol_terms(symbol: dict, path: str, path_text: str | None = None) -> str:
    """What the symbol's lexical index holds: names, signature, doc comment, file path and
    body identifiers. `path_text`: identifiers.path_terms(path), when the caller has it."""
    head = f"{symbol['qualified_name']} {symbol['name']} {symbol.get('signature') or ''}"
    if path_text is None:
        path_text = identifiers.path_terms(path) if path else ""
    return " ".join(
        (
            identifiers.identifier_terms(head),
            identifiers.identifier_terms(symbol.get("doc") or ""),
            path_text,
            identifiers.identifier_terms(symbol["body"]),
        )
    )


def extract_blob(
    path: str, content: str, language: str | None, limits: budget.Budget | None = None
) -> dict:
    """Everything the trigger stores for one blob, within the per-blob caps and budget.

    Returns {'terms', 'term_count', 'line_count', 'token_count'} for the blob itself,
    'imports' (extract_imports' dicts), 'symbols' (extract_symbols' dicts plus 'doc',
    'terms', 'term_count', 'token_count') and 'limited': None when extraction is complete,
    else why not (budget.Budget.reason()). The cheap, bounded work comes first (the file's
    own terms, then its imports), the symbols last, so that a blob that runs out of time
    still has its file-level index; finding them may use budget.EXTRACT_SHARE of the time,
    the rest is for the terms of the symbols found. Never raises on content; plain Python,
    no database.
    """
    if limits is None:
        limits = budget.Budget()
    path = path or ""
    path_text = identifiers.path_terms(path) if path else ""
    limits.phase("file terms", budget.EXTRACT_SHARE)
    terms = path_text + " " + identifiers.identifier_terms(content, limits)
    whole = content.rstrip("\n")  # the file as a whole-file item: no trailing newlines
    out: dict = {
        "terms": terms,
        "term_count": len(terms.split()),
        "line_count": whole.count("\n") + 1,
        "token_count": packing.estimate_tokens(whole),
        "imports": imports.extract_imports(path, content, language, limits) if language else [],
        "symbols": [],
    }
    found = symbols.extract_symbols(path, content, language, limits)
    limits.phase("symbol terms", 1.0)
    lines = content.split("\n")
    docs: dict[int, str] = {}  # start line -> leading comment: the file is read once
    comment_rows: dict[int, bool] = {}
    for i, sym in enumerate(found):
        if not i & budget.CHECK_EVERY and limits.expired():
            limits.add("time", f" ({len(found) - i} symbols not stored)")
            break
        doc = ""
        if sym["part"] <= 1:
            start = sym["start_line"]
            doc = docs.get(start)
            if doc is None:
                doc = docs[start] = symbols.leading_comment(lines, start, comment_rows)
        sym["doc"] = doc
        sym["terms"] = symbol_terms(sym, path, path_text)
        sym["term_count"] = len(sym["terms"].split())
        sym["token_count"] = packing.estimate_tokens(sym["body"])
        out["symbols"].append(sym)
    out["limited"] = limits.reason()
    return out


def on_blobs_inserted(plpy) -> None:
    import json

    rows = plpy.execute("select tenant_id, sha, language, content, path_hint from new_blobs")
    setting = plpy.execute(plans.prepared(plpy, BUDGET_SETTING))[0]
    seconds = budget.blob_seconds(setting["seconds"], setting["superuser"])
    sym_cols: list[list] = [[] for _ in range(15)]
    imp_cols: list[list] = [[] for _ in range(6)]
    lex_cols: list[list] = [[] for _ in range(7)]
    for row in rows:
        tenant, sha = row["tenant_id"], row["sha"]
        limits = budget.Budget(seconds)
        blob = extract_blob(row["path_hint"] or "", row["content"], row["language"], limits)
        for sym in blob["symbols"]:
            values = [
                tenant,
                sha,
                *(sym[c] for c in SYMBOL_COLUMNS),
                sym["doc"],
                sym["terms"],
                sym["term_count"],
                sym["token_count"],
            ]
            for col, value in zip(sym_cols, values, strict=True):
                col.append(value)
        for imp in blob["imports"]:
            values = [
                tenant,
                sha,
                imp["module"],
                json.dumps(imp["names"]),
                imp["relation"],
                imp["line"],
            ]
            for col, value in zip(imp_cols, values, strict=True):
                col.append(value)
        values = [tenant, sha, *(blob[k] for k in LEXEME_KEYS), blob["limited"]]
        for col, value in zip(lex_cols, values, strict=True):
            col.append(value)
    if sym_cols[0]:
        plpy.execute(plans.prepared(plpy, INSERT_SYMBOLS, TYPES_SYMBOLS), sym_cols)
    if imp_cols[0]:
        plpy.execute(plans.prepared(plpy, INSERT_IMPORTS, TYPES_IMPORTS), imp_cols)
    if lex_cols[0]:
        plpy.execute(plans.prepared(plpy, UPDATE_LEXEMES, TYPES_LEXEMES), lex_cols)
        # one tenant per statement in practice; grouped so that any insert is right
        for tenant in sorted(set(lex_cols[0])):
            shas = [sha for t, sha in zip(lex_cols[0], lex_cols[1], strict=True) if t == tenant]
            plpy.execute(plans.prepared(plpy, POSTINGS, ["bigint", "text[]"]), [tenant, shas])


LIVE_IMPORTS = """
select f.path, b.language, i.module, i.names, i.relation, i.line
from codesift.files f
join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
join codesift.blob_imports i on i.tenant_id = f.tenant_id and i.blob_sha = f.blob_sha
where f.tenant_id = $2 and f.repository_id = $1 and f.live
order by f.path, i.line
"""

INSERT_EDGES = """
insert into codesift.code_symbol_edges (tenant_id, repository_id, source_path, target_path,
    relation, names, line)
select r.tenant_id, r.id, e.source_path, e.target_path, e.relation,
    coalesce(array(select jsonb_array_elements_text(e.names::jsonb)), '{}'), e.line
from codesift.repositories r,
    unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[])
        as e(source_path, target_path, relation, names, line)
where r.tenant_id = $7 and r.id = $1
"""


def resolve_repository_edges(plpy, repository_id: int) -> int:
    """Recompute the repository's import edges from its live files; returns the edge count.
    Every statement names the repository's tenant, so even a session that bypasses row-level
    security touches that tenant's rows only."""
    import json

    owner = plpy.execute(
        plpy.prepare("select tenant_id from codesift.repositories where id = $1", ["bigint"]),
        [repository_id],
    )
    if not owner:
        plpy.error(
            f"no repository with id {repository_id} in this session's tenant",
            sqlstate="42704",
        )
    tenant = owner[0]["tenant_id"]
    paths = frozenset(
        r["path"]
        for r in plpy.execute(
            plpy.prepare(
                "select path from codesift.files"
                " where tenant_id = $2 and repository_id = $1 and live",
                ["bigint", "bigint"],
            ),
            [repository_id, tenant],
        )
    )
    go_mod = plpy.execute(
        plpy.prepare(
            "select b.content from codesift.files f join codesift.blobs b"
            " on b.tenant_id = f.tenant_id and b.sha = f.blob_sha"
            " where f.tenant_id = $2 and f.repository_id = $1 and f.live and f.path = 'go.mod'",
            ["bigint", "bigint"],
        ),
        [repository_id, tenant],
    )
    go_module = imports.go_module_path(go_mod[0]["content"]) if go_mod else None
    by_file: dict[tuple[str, str], list[dict]] = {}
    for r in plpy.execute(
        plpy.prepare(LIVE_IMPORTS, ["bigint", "bigint"]), [repository_id, tenant]
    ):
        by_file.setdefault((r["path"], r["language"]), []).append(
            {
                "module": r["module"],
                "names": list(r["names"] or []),
                "relation": r["relation"],
                "line": r["line"],
            }
        )
    cols: list[list] = [[], [], [], [], []]
    for (path, language), imps in by_file.items():
        for edge in imports.resolve_imports(path, imps, language, paths, go_module):
            for col, value in zip(
                cols,
                [path, edge["target"], edge["relation"], json.dumps(edge["names"]), edge["line"]],
                strict=True,
            ):
                col.append(value)
    plpy.execute(
        plpy.prepare(
            "delete from codesift.code_symbol_edges where tenant_id = $2 and repository_id = $1",
            ["bigint", "bigint"],
        ),
        [repository_id, tenant],
    )
    if cols[0]:
        plan = plpy.prepare(
            INSERT_EDGES, ["bigint", "text[]", "text[]", "text[]", "text[]", "int[]", "bigint"]
        )
        plpy.execute(plan, [repository_id, *cols, tenant])
    return len(cols[0])
