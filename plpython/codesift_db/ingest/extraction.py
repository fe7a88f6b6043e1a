"""Database glue for ingestion, called from thin PL/Python shims.

on_blobs_inserted: the statement trigger on codesift.blobs. In the same
transaction as the insert it extracts every new blob's symbols and import
statements and fills its text-search lexemes, so any client that inserts a
blob gets the same index, and no blob exists without its symbols. PostgreSQL
cannot cancel it while it runs, so each blob's extraction (extract_blob) is
bounded by the caps and the time budget of budget.py; what it left out is
recorded in blobs.extraction_limited.

resolve_repository_edges: turns the import statements of a repository's live
files into edges between paths of that repository. Its loops tick a budget.Ticker:
a cancel or statement_timeout ends it within budget.INTERRUPT_SECONDS, and past
budget.RESOLVE_SECONDS it stores the edges found so far (a notice says so).
"""

from .. import budget, identifiers, plans, tokens
from . import derived_edges, import_extraction, import_resolution, references, symbols

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
    "int[]",
]
TYPES_IMPORTS = ["bigint[]", "text[]", "text[]", "text[]", "text[]", "int[]"]
# Whether code_symbols has name_line (021), once seen: a database migrated before runs its
# trigger on this code until `codesift migrate`, and stores its symbols without it.
_name_line_seen = False


def _symbol_insert(plpy) -> tuple[str, int]:
    """The statement that inserts symbols into this database, and its column count."""
    global _name_line_seen
    if not _name_line_seen:
        column = plpy.execute(plans.prepared(plpy, plans.load("name_line_column")))
        _name_line_seen = column[0]["found"]
    return ("insert_symbols", 16) if _name_line_seen else ("insert_symbols_before_name_line", 15)


REFERENCE_KEYS = ("name", "line", "symbol", "call", "qualifier", "import_line")
TYPES_REFERENCES = [
    "bigint[]",
    "text[]",
    "text[]",
    "int[]",
    "text[]",
    "boolean[]",
    "text[]",
    "int[]",
]


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
    'imports' (extract_imports' dicts), 'symbols' (extract_symbols' dicts plus 'doc': the
    docstring then the comment above, comments.symbol_doc; 'terms', 'term_count',
    'token_count'), 'references' (references.extract_references' dicts, each in the
    stored symbol holding it) and 'limited': None when extraction is complete,
    else why not (budget.Budget.reason()). The cheap, bounded work comes first (the file's
    own terms, then its imports), the symbols last, so that a blob that runs out of time
    still has its file-level index; finding them may use budget.EXTRACT_SHARE of the time,
    the rest is for the terms of the symbols found, then for the references. Never raises
    on content; plain Python, no database.
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
        "token_count": tokens.estimate_tokens(whole),
        "imports": import_extraction.extract_imports(path, content, language, limits)
        if language
        else [],
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
            cached = docs.get(start)
            if cached is None:
                cached = docs[start] = symbols.leading_comment(lines, start, comment_rows)
            doc = symbols.symbol_doc(sym.get("docstring"), cached)
        sym["doc"] = doc
        sym["terms"] = symbol_terms(sym, path, path_text)
        sym["term_count"] = len(sym["terms"].split())
        sym["token_count"] = tokens.estimate_tokens(sym["body"])
        out["symbols"].append(sym)
    out["references"] = references.extract_references(
        path, content, language, out["symbols"], limits
    )
    out["limited"] = limits.reason()
    return out


def on_blobs_inserted(plpy) -> None:
    import json

    rows = plpy.execute(plans.load("new_blobs"))
    setting = plpy.execute(plans.prepared(plpy, BUDGET_SETTING))[0]
    seconds = budget.blob_seconds(setting["seconds"], setting["superuser"])
    sym_cols: list[list] = [[] for _ in range(16)]
    imp_cols: list[list] = [[] for _ in range(6)]
    ref_cols: list[list] = [[] for _ in range(8)]
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
                sym.get("name_line"),
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
        add_references(ref_cols, tenant, sha, blob["references"])
        values = [tenant, sha, *(blob[k] for k in LEXEME_KEYS), blob["limited"]]
        for col, value in zip(lex_cols, values, strict=True):
            col.append(value)
    if sym_cols[0]:
        name, width = _symbol_insert(plpy)
        insert = plans.prepared(plpy, plans.load(name), TYPES_SYMBOLS[:width])
        plpy.execute(insert, sym_cols[:width])
    if imp_cols[0]:
        plpy.execute(plans.prepared(plpy, plans.load("insert_imports"), TYPES_IMPORTS), imp_cols)
    if ref_cols[0]:
        plan = plans.prepared(plpy, plans.load("insert_references"), TYPES_REFERENCES)
        plpy.execute(plan, ref_cols)
    if lex_cols[0]:
        # one tenant per statement in practice; grouped so that any insert is right (and
        # each statement names one tenant: under Citus it then runs on that tenant's shard)
        for tenant in sorted(set(lex_cols[0])):
            plpy.execute(
                plans.prepared(plpy, plans.load("update_blob_lexemes"), [*TYPES_LEXEMES, "bigint"]),
                [*lex_cols, tenant],
            )
            shas = [sha for t, sha in zip(lex_cols[0], lex_cols[1], strict=True) if t == tenant]
            postings(plpy, tenant, shas)


def add_references(cols: list[list], tenant: int, sha: str, found: list[dict]) -> None:
    """Append a blob's references to the columns insert_references.sql takes."""
    tenants, shas = cols[0], cols[1]
    tenants.extend([tenant] * len(found))
    shas.extend([sha] * len(found))
    for col, key in zip(cols[2:], REFERENCE_KEYS, strict=True):
        col.extend([r[key] for r in found])


# Blobs one backfill_references call reads at most, and the seconds it may run: it stops
# between two blobs past them (the rest wait for the next call).
MAX_BACKFILL_BLOBS = 10_000
BACKFILL_SECONDS = 30.0


def backfill_references(plpy, max_blobs: int) -> int:
    """Extract the references of the session tenant's blobs stored before references
    existed (blobs.references_extracted false), at most `max_blobs` of them and for about
    BACKFILL_SECONDS, each with its stored symbols as the enclosing ones; returns how many
    blobs were done (0: none is left). Claimed with skip locked: concurrent calls share
    the work."""
    if max_blobs is None or not 1 <= max_blobs <= MAX_BACKFILL_BLOBS:
        plpy.error(
            f"max_blobs must be between 1 and {MAX_BACKFILL_BLOBS:,} (got {max_blobs})",
            hint="call it again until it returns 0",
            sqlstate="22023",
        )
    tenant = plpy.execute(plans.prepared(plpy, "select codesift._required_tenant() as t"))[0]["t"]
    setting = plpy.execute(plans.prepared(plpy, BUDGET_SETTING))[0]
    seconds = budget.blob_seconds(setting["seconds"], setting["superuser"])
    overall = budget.Budget(BACKFILL_SECONDS)
    pending = plans.prepared(plpy, plans.load("pending_references"), ["bigint", "int"])
    stored = plans.prepared(plpy, plans.load("blob_symbol_spans"), ["bigint", "text"])
    insert = plans.prepared(plpy, plans.load("insert_references"), TYPES_REFERENCES)
    done: list[str] = []
    cols: list[list] = [[] for _ in range(8)]
    for row in plpy.cursor(pending, [tenant, max_blobs]):
        if overall.expired():
            break
        spans = [dict(r) for r in plpy.execute(stored, [tenant, row["sha"]])]
        found = references.extract_references(
            row["path_hint"] or "", row["content"], row["language"], spans, budget.Budget(seconds)
        )
        add_references(cols, tenant, row["sha"], found)
        done.append(row["sha"])
        if len(cols[0]) >= budget.MAX_REFERENCES:  # bounded memory: insert as it goes
            plpy.execute(insert, cols)
            cols = [[] for _ in range(8)]
    if cols[0]:
        plpy.execute(insert, cols)
    if done:
        plan = plans.prepared(plpy, plans.load("mark_references_extracted"), ["bigint", "text[]"])
        plpy.execute(plan, [tenant, done])
    return len(done)


POSTINGS_TYPES = ["bigint", "text[]", "float8"]
STATS = (
    "postings_symbol_stats",
    "postings_file_stats",
    "postings_symbol_corpus",
    "postings_file_corpus",
)


def postings(plpy, tenant: int, shas: list[str]) -> None:
    """BM25 postings of tenant's blobs `shas` just inserted, then its term and corpus
    statistics. One plain statement per table, each naming the tenant: under Citus each
    runs on the shard holding the tenant's rows (a data-modifying WITH across tables would
    not)."""
    args = [tenant, shas]
    avgdl = plpy.execute(
        plans.prepared(plpy, plans.load("postings_avgdl"), POSTINGS_TYPES[:2]), args
    )[0]
    for name, avg in (("postings_symbols", avgdl["symbol"]), ("postings_files", avgdl["file"])):
        plpy.execute(plans.prepared(plpy, plans.load(name), POSTINGS_TYPES), [*args, avg])
    for name in STATS:
        plpy.execute(plans.prepared(plpy, plans.load(name), POSTINGS_TYPES[:2]), args)


MAX_SOURCE_PATHS = 10_000  # resolve_edges(repository, paths): more is a whole-repository job


def resolve_repository_edges(plpy, repository_id: int, sources: list[str] | None = None) -> int:
    """Recompute the repository's import edges from its live files; returns the edge count.
    With `sources`, only the edges from those paths are recomputed (and counted): right
    when only their contents changed, the set of live paths did not (codesift watch).
    Every statement names the repository's tenant, so even a session that bypasses row-level
    security touches that tenant's rows only."""
    import json

    owner = plpy.execute(
        plpy.prepare(plans.load("repository_tenant"), ["bigint"]),
        [repository_id],
    )
    if not owner:
        plpy.error(
            f"no repository with id {repository_id} in this session's tenant",
            sqlstate="42704",
        )
    tenant = owner[0]["tenant_id"]
    limits = budget.Budget(budget.RESOLVE_SECONDS)
    pending = plans.prepared(plpy, plans.load("check_interrupts"))
    tick = budget.Ticker(limits, lambda: plpy.execute(pending))
    if sources is not None and len(sources) > MAX_SOURCE_PATHS:
        plpy.error(
            f"resolve_edges takes at most {MAX_SOURCE_PATHS:,} source paths; "
            "call resolve_edges(repository_id) for the whole repository",
            sqlstate="22023",
        )
    paths = frozenset(
        r["path"]
        for r in plpy.execute(
            plpy.prepare(plans.load("live_paths"), ["bigint", "bigint"]),
            [repository_id, tenant],
        )
    )
    go_mod = plpy.execute(
        plpy.prepare(plans.load("live_go_mod"), ["bigint", "bigint"]),
        [repository_id, tenant],
    )
    go_module = import_resolution.go_module_path(go_mod[0]["content"]) if go_mod else None
    by_file: dict[tuple[str, str], list[dict]] = {}
    imports = plpy.execute(
        plpy.prepare(plans.load("live_imports"), ["bigint", "bigint", "text[]"]),
        [repository_id, tenant, sources],
    )
    limits.phase("imports")
    for r in imports:
        if tick():
            break
        by_file.setdefault((r["path"], r["language"]), []).append(
            {
                "module": r["module"],
                "names": list(r["names"] or []),
                "relation": r["relation"],
                "line": r["line"],
            }
        )
    cols: list[list] = [[], [], [], [], [], []]

    def add(source, target, relation, names, line, weight):
        for col, value in zip(
            cols, [source, target, relation, json.dumps(names), line, weight], strict=True
        ):
            col.append(value)

    resolved = []
    for (path, language), imps in by_file.items():
        if tick():
            break
        for edge in import_resolution.resolve_imports(path, imps, language, paths, go_module, tick):
            add(path, edge["target"], edge["relation"], edge["names"], edge["line"], 1.0)
            resolved.append((path, edge["target"], edge["names"]))
    for source, target, relation, weight in _derived_edges(
        plpy, repository_id, tenant, paths, resolved, sources, tick
    ):
        add(source, target, relation, [], None, weight)
    if limits.reason():
        plpy.notice(
            f"resolve_edges of repository {repository_id}: {limits.reason()}; "
            f"the {len(cols[0]):,} edges found are stored"
        )
    plpy.execute(
        plpy.prepare(plans.load("delete_edges"), ["bigint", "bigint", "text[]"]),
        [repository_id, tenant, sources],
    )
    if cols[0]:
        plan = plpy.prepare(
            plans.load("insert_edges"),
            ["bigint", "text[]", "text[]", "text[]", "text[]", "int[]", "bigint", "real[]"],
        )
        plpy.execute(plan, [repository_id, *cols[:5], tenant, cols[5]])
    return len(cols[0])


def _derived_edges(plpy, repository_id, tenant, paths, imports, sources, tick) -> list[tuple]:
    """tests and references edges (derived_edges.py) from the sources (None: every file)."""
    only = frozenset(sources) if sources is not None else None
    limits = tick.limits
    limits.phase("definitions")
    defined = derived_edges.definers(
        (
            (r["path"], r["name"])
            for r in plpy.execute(
                plpy.prepare(plans.load("live_definitions"), ["bigint", "bigint"]),
                [repository_id, tenant],
            )
        ),
        tick,
    )
    limits.phase("tests by name")
    edges = derived_edges.naming_edges(paths, only, tick)
    limits.phase("references")
    edges += derived_edges.reference_edges(imports, defined, tick)
    limits.phase("tests by use")
    # the tests' text in batches, up to MAX_TEST_TEXT characters in all: bounded memory
    # and work whatever the size of the test suite
    cursor = plpy.cursor(
        plpy.prepare(plans.load("live_test_texts"), ["bigint", "bigint", "text[]", "int"]),
        [
            repository_id,
            tenant,
            derived_edges.wanted_tests(paths, only),
            derived_edges.MAX_TEST_CHARS,
        ],
    )
    read = 0
    while read < derived_edges.MAX_TEST_TEXT and not tick():
        batch = cursor.fetch(100)
        if not batch:
            break
        texts = {r["path"]: r["content"] for r in batch}
        read += sum(len(t) for t in texts.values())
        edges += derived_edges.usage_edges(texts, defined, tick)
    # one edge per pair and relation: the strongest
    best: dict[tuple, tuple] = {}
    for e in edges:
        tick()  # for a cancel: this loop is not cut short
        if e[0] != e[1] and (e[:3] not in best or best[e[:3]][3] < e[3]):
            best[e[:3]] = e
    return sorted(best.values())
