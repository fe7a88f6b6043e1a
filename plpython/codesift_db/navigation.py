"""Navigation an agent does before it reads code: the outline of one file, and a map of a
repository or folder (its most central files, each with its outline). Called by the stored
functions file_outline and repo_map (sql/idempotent/010-navigation.sql); every statement
names the session's tenant.

    file_outline(plpy, path, repo, ref) -> rows, one per symbol of the file, in file order
    repo_map(plpy, repo, path_prefix, token_budget, ref) -> rows, one per file, best first

The outline is what extraction stored (code_symbols): a long definition stored as parts
1..n is one row spanning them; depth is the number of enclosing symbols on the `parent`
chain (a method 1, a function inside it 2). A symbol whose parent does not enclose it (a Go
method of a type declared elsewhere, a TypeScript namespace, which is no symbol) is at
depth 0. `doc` is the first line of the stored doc (a docstring's summary line, else the
comment above the definition); `name_line` the line of its name (the `def` below its
decorators).

A path is accepted as the tools print it (citations.py, as related_files reads it):
'pkg/client.py', 'repo:pkg/client.py', a citation 'repo:pkg/client.py:10-20', or
'repo/pkg/client.py'; a line range names the file, whose whole outline is returned.

The map ranks files by PageRank over the ref's stored file edges (file_edges: an
import or a reference passes rank from the importer to what it imports, a test to what it
tests at KIND_WEIGHT, co-change both ways at KIND_WEIGHT; each times its stored weight), the
walk's random jumps landing on code more than on tests and more than on docs and settings
(TELEPORT), power iteration in NumPy, bounded by MAX_MAP_FILES files and MAX_MAP_EDGES edges
read. The rank is computed when a ref is indexed (rank_files, the stored function
codesift.rank_files the loader calls after the edges) and stored per file
(files.centrality), so a map reads the best files of a folder by an index; a folder's file
that the rest of the repository imports ranks high. Where a file in scope has no stored
rank (indexed before it existed, or added since), the map ranks on the fly: the files in
scope and, with a path_prefix, the files one edge away. Each file's block is its
citation then one line per symbol (its signature, indented by depth; a file that is not code
without its fallback chunks); blocks are packed in rank order under token_budget
(tokens.estimate_tokens of each row's text; the rows' tokens sum to at most the budget), a
block that does not fit cut to the symbol lines that do, then a marker line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import budget, plans
from .citations import Reading, nearest_paths, readings, unsafe_path
from .errcodes import NULL_VALUE_NOT_ALLOWED, UNDEFINED_OBJECT
from .file_kinds import file_kind
from .packing import longest_prefix
from .pipeline.params import check_budget, fail
from .pipeline.scope import resolve_scope
from .tokens import estimate_tokens

MAX_PATH_CHARS = 4096
MAX_NAME_CHARS = 512  # repositories.name and .ref
MAX_OUTLINE_ROWS = 2000  # rows one outline returns (a generated file can define 5,000)
# symbol rows read for one outline: every stored row of a blob (the extraction caps:
# budget.MAX_SYMBOLS, budget.MAX_SECTIONS), so that the cut is counted exactly
OUTLINE_READ = budget.MAX_SYMBOLS + budget.MAX_SECTIONS + 1
MAX_DOC_LINE_CHARS = 200
MAX_MAP_FILES = 20_000  # live files read for one map (nodes of the graph, candidate rows)
MAX_RANKED_FILES = 200_000  # live files rank_files ranks (and stores the rank of)
MIN_BLOCK_TOKENS = 4  # a map block costs at least its citation line
MAX_MAP_EDGES = 200_000  # edges read for one map
MAP_SYMBOLS_PER_FILE = 300  # symbol rows read per file for its map block
MAP_BATCH = 64  # files whose symbols one statement reads
MAP_TYPES = ["bigint", "bigint[]", "text", "integer"]  # tenant, repositories, prefix, limit
MAP_SECONDS = 10.0  # packing blocks stops (with a notice) after this long
NEAREST_POOL = 20_000  # live paths read to suggest the nearest ones for an unknown file
DAMPING = 0.85
ITERATIONS = 30  # at most; the iteration stops once the ranks move by under TOLERANCE
TOLERANCE = 1e-9
# rank passed along an edge, times its stored weight; any other relation (the imports,
# 'references') passes all of it, source to target
KIND_WEIGHT = {"tests": 0.5, "co_change": 0.25}
SYMMETRIC = frozenset({"co_change"})
# where the walk's random jumps land, by file kind (file_kinds.file_kind): code first, so
# that what code depends on ranks above the tests, notes and settings that change with it
TELEPORT = {"code": 1.0, "test": 0.25}
TELEPORT_OTHER = 0.1  # benchmarks, docs, translations, settings, changelogs, templates, examples
# symbol kinds a map block leaves out of a file that is not code: fallback chunks of lines
# (a text file's windows), which name nothing
MAP_SKIPPED_KINDS = frozenset({"block"})
INDENT = "  "
CUT_MARKER = "..."

# --- arguments --------------------------------------------------------------------------


def _check_text(plpy, label: str, value, limit: int, what: str) -> None:
    if value is not None and len(value) > limit:
        fail(plpy, f"{label} is {len(value):,} characters; at most {limit:,}", hint=what)


# --- outline ----------------------------------------------------------------------------


def first_doc_line(doc: str | None) -> str | None:
    """The first non-blank line of a stored doc comment (markers already stripped; a
    one-line block comment keeps its closing '*/'), at most MAX_DOC_LINE_CHARS."""
    for line in (doc or "").splitlines():
        line = line.strip()
        if line.endswith("*/"):
            line = line[:-2].rstrip()
        line = line.lstrip("*").strip()
        if line:
            return line[:MAX_DOC_LINE_CHARS]
    return None


def merge_parts(rows: Sequence[dict]) -> list[dict]:
    """A definition stored as parts 1..n (each a slice of its lines, the methods between
    them stored on their own) as one entry from part 1's first line to part n's last."""
    out: list[dict] = []
    waiting: dict[tuple, dict] = {}  # (qualified name, kind) -> the entry whose part is last
    for r in rows:
        part = r["part"] or 0
        key = (r["qualified_name"], r["kind"])
        prev = waiting.get(key) if part > 1 else None
        if prev is not None and prev["_part"] == part - 1:
            prev["end_line"] = max(prev["end_line"], r["end_line"])
            prev["_part"] = part
            continue
        entry = dict(r, _part=part)
        out.append(entry)
        if part >= 1:
            waiting[key] = entry
    return out


def nest(rows: Sequence[dict]) -> list[dict]:
    """The symbols of one file in file order (outer before inner), each with its depth:
    one more than that of the nearest enclosing symbol its parent names, else 0."""
    merged = merge_parts(rows)
    order = sorted(
        range(len(merged)), key=lambda i: (merged[i]["start_line"], -merged[i]["end_line"], i)
    )
    out: list[dict] = []
    open_: list[dict] = []  # the enclosing symbols, outermost first
    for i in order:
        s = merged[i]
        while open_ and not (open_[-1]["end_line"] >= s["end_line"]):
            open_.pop()
        depth = 0
        parent = s.get("parent")
        if parent:
            for enclosing in reversed(open_):
                if enclosing["qualified_name"] == parent:
                    depth = enclosing["depth"] + 1
                    break
        entry = dict(s, depth=depth)
        entry.pop("_part", None)
        out.append(entry)
        open_.append(entry)
    return out


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def symbol_line(s: dict) -> str:
    """A symbol in a map block: its signature (else kind and name), indented by depth."""
    text = _one_line(s.get("signature") or f"{s['kind']} {s['name']}")
    return INDENT * (s["depth"] + 1) + text


# --- file_outline -----------------------------------------------------------------------


def _resolve_file(plpy, text: str, repo, ref) -> tuple[int, dict, dict]:
    """(tenant, repository row, file row) of the live file `text` cites."""
    if text is None:
        fail(
            plpy,
            "path must not be null",
            hint="pass a file's path, e.g. 'src/app.py'",
            sqlstate=NULL_VALUE_NOT_ALLOWED,
        )
    if not text.strip():
        fail(plpy, "path must not be empty", hint="pass a file's path, e.g. 'src/app.py'")
    _check_text(plpy, "path", text, MAX_PATH_CHARS, "pass the path relative to the repository root")
    _check_text(plpy, "repo", repo, MAX_NAME_CHARS, "pass a repository name, or omit it")
    _check_text(plpy, "ref", ref, MAX_NAME_CHARS, "pass an indexed ref, or omit it")
    text = text.strip()
    tenant, repos = resolve_scope(plpy, repo, ref)
    by_name = {r["name"]: r for r in repos}
    usable = readings(text, by_name)
    for option in usable:  # 'repo:/etc/passwd' is as absolute as '/etc/passwd'
        why = unsafe_path(option.path)
        if why:
            fail(
                plpy,
                f"path '{text}' {why}",
                hint="pass the path relative to the repository root, as search results cite "
                "it (e.g. 'src/app.py')",
            )
    ids = [r["id"] for r in repos]
    found = plans.run(
        plpy,
        plans.load("outline_files"),
        ["bigint", "bigint[]", "text[]"],
        [tenant, ids, sorted({o.path for o in usable})],
    )
    by_id = {r["id"]: r for r in repos}
    for option in usable:
        hits = [
            f
            for f in found
            if f["path"] == option.path
            and (option.repo is None or by_id[f["repository_id"]]["name"] == option.repo)
        ]
        if len(hits) > 1:
            names = sorted(by_id[f["repository_id"]]["name"] for f in hits)
            fail(
                plpy,
                f"'{option.path}' is a file of {len(hits)} repositories: {', '.join(names)}",
                hint=f"pass repo => '{names[0]}' (or cite it as '{names[0]}:{option.path}')",
            )
        if hits:
            return tenant, by_id[hits[0]["repository_id"]], hits[0]
    _unknown_file(plpy, tenant, text, repo, ref, repos, usable)
    raise AssertionError("_unknown_file returned")


def _unknown_file(plpy, tenant, text, repo, ref, repos, usable: list[Reading]) -> None:
    """Raise 42704 for a path that names no live file, with a hint that is not the call
    that failed: the refs where it is live, else the nearest live paths."""
    where = f" in repository '{repo}'" if repo else ""
    where += f" at ref '{ref}'" if ref else ""
    names = sorted({r["name"] for r in repos})
    ids = [r["id"] for r in repos]
    elsewhere = plans.run(
        plpy,
        plans.load("outline_other_refs"),
        ["bigint", "text[]", "text[]", "bigint[]"],
        [tenant, names, [o.path for o in usable], ids],
    )
    if elsewhere:
        refs = [f"ref => '{r['ref']}' ({r['name']})" for r in elsewhere]
        hint = "it is a live file at another indexed ref: pass " + " or ".join(refs)
    else:
        pool = plans.run(
            plpy,
            plans.load("map_files"),
            ["bigint", "bigint[]", "text", "integer"],
            [tenant, ids, None, NEAREST_POOL],
        )
        label = {r["id"]: r["name"] for r in repos}
        paths = [(label[p["repository_id"]], p["path"]) for p in pool]
        near = nearest_paths(sorted({o.path for o in usable}), paths)
        if near:
            hint = "live files with a similar path: " + ", ".join(near)
        else:
            hint = (
                "no live file has a similar path: it may be ignored (.gitignore, "
                ".codesiftignore), binary or over the size limit, or newer than the indexed "
                "commit (codesift index PATH indexes it); codesift.find_symbol finds a file "
                "by a name it defines"
            )
    fail(plpy, f"no live file '{text}'{where}", hint=hint, sqlstate=UNDEFINED_OBJECT)


def blob_symbols(plpy, tenant: int, shas: list[str], per_blob: int) -> dict[str, list[dict]]:
    """The stored symbols of each blob in file order (no bodies), at most per_blob each."""
    rows = plans.run(
        plpy,
        plans.load("outline_symbols"),
        ["bigint", "text[]", "integer"],
        [tenant, sorted(set(shas)), per_blob],
    )
    out: dict[str, list[dict]] = {sha: [] for sha in shas}
    for r in rows:
        out[r["blob_sha"]].append(dict(r))
    return out


def file_outline(plpy, path, repo, ref=None) -> list[dict]:
    tenant, repository, f = _resolve_file(plpy, path, repo, ref)
    rows = blob_symbols(plpy, tenant, [f["blob_sha"]], OUTLINE_READ)[f["blob_sha"]]
    nested = nest(rows)
    name, file_path = repository["name"], f["path"]
    if len(nested) > MAX_OUTLINE_ROWS:
        plpy.notice(
            f"the outline of {name}:{file_path} has {len(nested):,} symbols; the first "
            f"{MAX_OUTLINE_ROWS:,} are returned (codesift.find_symbol(name, path_prefix => "
            "path) reads any one)"
        )
    out = []
    for i, s in enumerate(nested[:MAX_OUTLINE_ROWS], 1):
        out.append(
            {
                "repository": name,
                "file_path": file_path,
                "ordinal": i,
                "depth": s["depth"],
                "kind": s["kind"],
                "name": s["name"],
                "qualified_name": s["qualified_name"],
                "signature": s["signature"],
                "doc": first_doc_line(s["doc"]),
                "start_line": s["start_line"],
                "end_line": s["end_line"],
                "citation": f"{name}:{file_path}:{s['start_line']}-{s['end_line']}",
                "name_line": s.get("name_line"),
            }
        )
    return out


# --- repo_map ---------------------------------------------------------------------------


def pagerank(
    n: int,
    edges: Iterable[tuple[int, int, float]],
    teleport: Sequence[float] | None = None,
    damping: float = DAMPING,
    iterations: int = ITERATIONS,
    tolerance: float = TOLERANCE,
) -> list[float]:
    """PageRank of n nodes over weighted directed edges (source, target, weight), summing to
    1: a random walk that follows an edge (by weight) with probability `damping`, else, and
    from a node without out-edges, jumps to a node chosen by `teleport` (relative weights;
    uniform when None). The power iteration stops once an iteration moves the ranks by under
    `tolerance` (L1), after `iterations` at most."""
    import numpy as np

    if n == 0:
        return []
    jump = np.ones(n) if teleport is None else np.asarray(teleport, dtype=np.float64)
    jump = jump / jump.sum()
    triples = [(s, t, w) for s, t, w in edges if s != t and w > 0]
    src = np.fromiter((e[0] for e in triples), dtype=np.int64, count=len(triples))
    dst = np.fromiter((e[1] for e in triples), dtype=np.int64, count=len(triples))
    weight = np.fromiter((e[2] for e in triples), dtype=np.float64, count=len(triples))
    out_weight = np.bincount(src, weights=weight, minlength=n)
    dangling = out_weight == 0
    share = np.divide(weight, out_weight[src], out=np.zeros_like(weight), where=out_weight[src] > 0)
    rank = jump.copy()
    for _ in range(iterations):
        passed = np.bincount(dst, weights=share * rank[src], minlength=n)
        new = damping * passed + (1.0 - damping + damping * rank[dangling].sum()) * jump
        moved = float(np.abs(new - rank).sum())
        rank = new
        if moved < tolerance:
            break
    return [float(x) for x in rank]


def graph(
    files: Sequence[tuple[int, str]], edges: Iterable[dict]
) -> tuple[list[tuple[int, str]], list[tuple[int, int, float]]]:
    """The nodes (the files, then the other ends of their edges) and the weighted directed
    edges between them, by node index."""
    index: dict[tuple[int, str], int] = {}
    nodes: list[tuple[int, str]] = []

    def node(key: tuple[int, str]) -> int:
        i = index.get(key)
        if i is None:
            i = index[key] = len(nodes)
            nodes.append(key)
        return i

    for key in files:
        node(key)
    out: list[tuple[int, int, float]] = []
    for e in edges:
        a = node((e["repository_id"], e["source_path"]))
        b = node((e["repository_id"], e["target_path"]))
        w = KIND_WEIGHT.get(e["relation"], 1.0) * float(e["weight"] or 1.0)
        out.append((a, b, w))
        if e["relation"] in SYMMETRIC:
            out.append((b, a, w))
    return nodes, out


def teleport(path: str) -> float:
    """The weight of a file in the walk's random jumps (TELEPORT, by its kind)."""
    return TELEPORT.get(file_kind(path), TELEPORT_OTHER)


def map_symbols(path: str, symbols: Sequence[dict]) -> list[dict]:
    """The symbols a file's map block lists: a file that is not code or tests loses its
    fallback chunks (MAP_SKIPPED_KINDS)."""
    if file_kind(path) in TELEPORT:
        return list(symbols)
    return [s for s in symbols if s["kind"] not in MAP_SKIPPED_KINDS]


def block(header: str, symbols: Sequence[dict], cut: bool) -> list[str]:
    """A file's map block as lines: its citation, its symbols (and the cut marker when the
    symbols read were not all of them)."""
    lines = [_one_line(header)] + [symbol_line(s) for s in symbols]
    if cut:
        lines.append(INDENT + CUT_MARKER)
    return lines


def fit(lines: list[str], remaining: int) -> tuple[str, int] | None:
    """(text, tokens) of the block, or of its citation, the symbol lines that fit and the cut
    marker, within `remaining` tokens; None when not even one symbol line fits (or, for a
    block of a citation alone, the citation)."""
    text = "\n".join(lines)
    tokens = estimate_tokens(text)
    if tokens <= remaining:
        return text, tokens

    def render(k: int) -> tuple[str, int]:
        cut = "\n".join([*lines[: 1 + k], INDENT + CUT_MARKER])
        return cut, estimate_tokens(cut)

    k = longest_prefix(len(lines) - 2, lambda k: render(k)[1] <= remaining)
    while k > 0:
        cut, cost = render(k)
        if cost <= remaining:
            return cut, cost
        k -= 1
    return None


def repo_map(plpy, repo, path_prefix, token_budget, ref=None) -> list[dict]:
    _check_text(plpy, "repo", repo, MAX_NAME_CHARS, "pass a repository name, or omit it")
    _check_text(plpy, "ref", ref, MAX_NAME_CHARS, "pass an indexed ref, or omit it")
    _check_text(
        plpy, "path_prefix", path_prefix, MAX_PATH_CHARS, "pass a folder, e.g. 'src/', or omit it"
    )
    if path_prefix is not None:
        why = unsafe_path(path_prefix)
        if why:
            fail(
                plpy,
                f"path_prefix {why}",
                hint="pass a folder relative to the repository root, e.g. 'src/'",
            )
        if path_prefix.startswith("./"):
            path_prefix = path_prefix[2:]
        path_prefix = path_prefix or None
    check_budget(plpy, token_budget, default=2000)
    tenant, repos = resolve_scope(plpy, repo, ref)
    ids = [r["id"] for r in repos]
    names = {r["id"]: r["name"] for r in repos}
    ranked = _stored_ranks(plpy, tenant, ids, path_prefix, token_budget)
    if ranked is None:
        ranked = _ranks_now(plpy, tenant, ids, names, path_prefix)
    return _pack(plpy, tenant, ranked, names, token_budget)


def _stored_ranks(plpy, tenant, ids, path_prefix, token_budget) -> list[dict] | None:
    """The files in scope by their stored centrality, as many as the budget can hold;
    None when a file in scope has no stored rank (or there is no file)."""
    wanted = min(MAX_MAP_FILES, token_budget // MIN_BLOCK_TOKENS + MAP_BATCH)
    rows = plans.run(
        plpy, plans.load("map_ranked_files"), MAP_TYPES, [tenant, ids, path_prefix, wanted]
    )
    if not rows or rows[0]["centrality"] is None:
        return None
    return [dict(r) for r in rows]


def _ranks_now(plpy, tenant, ids, names, path_prefix) -> list[dict]:
    """The files in scope ranked by a PageRank computed now (files without a stored rank)."""
    files = _map_files(plpy, tenant, ids, path_prefix, MAX_MAP_FILES)
    if not files:
        where = f" under '{path_prefix}'" if path_prefix else ""
        fail(
            plpy,
            f"no live file{where} in " + ", ".join(f"repository '{n}'" for n in names.values()),
            hint="path_prefix is the start of a path relative to the repository root (e.g. "
            "'src/'); codesift.file_outline lists one file"
            if path_prefix
            else "index it first: codesift index PATH",
            sqlstate=UNDEFINED_OBJECT,
        )
    keys = [(f["repository_id"], f["path"]) for f in files]
    centrality = _pagerank_of(plpy, tenant, ids, path_prefix, keys)
    order = sorted(
        range(len(files)),
        key=lambda i: (-centrality[i], keys[i][1].count("/"), names[keys[i][0]], keys[i][1]),
    )
    return [{**files[i], "centrality": centrality[i]} for i in order]


def _capped(plpy, statement: str, tenant, ids, path_prefix, limit: int, what: str) -> list:
    """The rows of sql/STATEMENT.sql in scope, at most `limit`; a notice says when there
    were more (`what` names what the first `limit` of them are used for)."""
    rows = list(
        plans.run(plpy, plans.load(statement), MAP_TYPES, [tenant, ids, path_prefix, limit + 1])
    )
    if len(rows) > limit:
        plpy.notice(f"over {limit:,} {what} (pass path_prefix to map one folder)")
    return rows[:limit]


def _map_files(plpy, tenant, ids, path_prefix, limit: int) -> list[dict]:
    what = f"live files: the first {limit:,} by path are ranked"
    return _capped(plpy, "map_files", tenant, ids, path_prefix, limit, what)


def _pagerank_of(plpy, tenant, ids, path_prefix, keys: list[tuple[int, str]]) -> list[float]:
    """The PageRank of the files `keys` over the stored file edges with an end in scope."""
    what = f"file edges: the ranking uses {MAX_MAP_EDGES:,} of them"
    edges = _capped(plpy, "map_edges", tenant, ids, path_prefix, MAX_MAP_EDGES, what)
    nodes, weighted = graph(keys, edges)
    return pagerank(len(nodes), weighted, [teleport(path) for _, path in nodes])[: len(keys)]


def rank_files(plpy, repository_id: int) -> int:
    """Compute and store (files.centrality) the PageRank of the repository ref's live files,
    the order repo_map reads; returns how many files were ranked. The loader calls it after
    the ref's edges are stored (codesift.rank_files)."""
    rows = plans.run(plpy, plans.load("repository_tenant"), ["bigint"], [repository_id])
    if not rows:
        fail(
            plpy,
            f"no repository with id {repository_id} for this session's tenant",
            sqlstate=UNDEFINED_OBJECT,
        )
    tenant = rows[0]["tenant_id"]
    files = _map_files(plpy, tenant, [repository_id], None, MAX_RANKED_FILES)
    keys = [(f["repository_id"], f["path"]) for f in files]
    centrality = _pagerank_of(plpy, tenant, [repository_id], None, keys)
    plans.run(
        plpy,
        plans.load("store_centrality"),
        ["bigint", "bigint", "text[]", "real[]"],
        [tenant, repository_id, [path for _, path in keys], centrality],
    )
    return len(keys)


def _pack(plpy, tenant, ranked, names, token_budget) -> list[dict]:
    """The ranked files' blocks, packed in rank order under token_budget. Stops when the
    budget is spent, when MAP_BATCH files in a row did not fit, or after MAP_SECONDS."""
    limits = budget.Budget(MAP_SECONDS)
    remaining = token_budget
    misses = 0
    out: list[dict] = []
    for start in range(0, len(ranked), MAP_BATCH):
        if remaining <= 0 or misses >= MAP_BATCH:
            break
        if limits.expired():
            plpy.notice(f"the map stopped after {MAP_SECONDS:g} s with {len(out)} files packed")
            break
        batch = ranked[start : start + MAP_BATCH]
        symbols = blob_symbols(plpy, tenant, [f["blob_sha"] for f in batch], MAP_SYMBOLS_PER_FILE)
        for i, f in enumerate(batch):
            rows = symbols[f["blob_sha"]]
            nested = map_symbols(f["path"], nest(rows))
            name = names[f["repository_id"]]
            lines = block(f"{name}:{f['path']}", nested, len(rows) >= MAP_SYMBOLS_PER_FILE)
            packed = fit(lines, remaining)
            if packed is None:
                misses += 1
                continue
            misses = 0
            text, tokens = packed
            remaining -= tokens
            out.append(
                {
                    "rank": start + i + 1,
                    "repository": name,
                    "path": f["path"],
                    "centrality": f["centrality"],
                    "tokens": tokens,
                    "text": text,
                }
            )
            if remaining <= 0:
                break
    return out
