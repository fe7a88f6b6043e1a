"""Impact: what depends on a definition or a file, transitively, and the tests that reach
it. Called by the stored function impact (sql/idempotent/012-impact.sql) and by
diff_context.py; every statement names the session's tenant, and only live files of the ref
are read.

    impact(plpy, target, repo, ref, depth, max_rows) -> rows, the most affected first

The target is named as find_references takes a definition ('send', 'Session.send', a
citation of a line inside it 'repo:path:12'), or is a file ('src/app.py', 'repo:src/app.py',
a citation without lines, or with lines that hold no definition). What depends on it:

* calls: the definitions that call it (references.py's resolution: 'resolved' through
  imports, else 'calls_by_name' when only the name matches), then those that call them, up
  to `depth` hops; only resolved callers are followed further (a name match of a common
  name would reach half the repository);
* imports: the files that import it (file_edges of an import kind, or 'references'), for a
  file transitively up to `depth` hops, for a definition the importers of its file that
  import its name (hop 1; its callers carry the rest);
* co_change: the files that change with the target's files in git history (hop 1: a
  co-change of a co-change says nothing);
* tests: the test files whose 'tests' edge leads to the target's files or to a file
  reached before the last hop; a caller or an importer that is a test is marked is_test.

Each row says how it is reached: `relation` (the last edge), `hops`, `via` (the citation
of the node it was reached from) and `chain` (from the target to it, each step 'relation
citation'). Rows are ranked by score: the relation's weight (RELATION_WEIGHT, times the
edge's stored weight for tests and co-change) times HOP_DECAY per hop after the first.

Work is bounded: depth at most MAX_DEPTH (a larger one up to DEPTH_LIMIT is clamped with a
NOTICE, beyond that refused), MAX_FRONTIER definitions followed per hop, MAX_NODES nodes,
MAX_USES_READ uses and MAX_EDGES_READ edges read per hop, and IMPACT_SECONDS of work; the
loops tick a budget.Ticker, so a cancel or statement_timeout ends the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import budget, plans
from .citations import citation
from .errcodes import NULL_VALUE_NOT_ALLOWED
from .file_kinds import TEST_PATH
from .pipeline.params import check_max_rows, check_text, fail
from .pipeline.scope import resolve_scope
from .references import (
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    RESOLVED,
    Resolver,
    Target,
    _check_path,
    _fill,
    _resolve_typed,
    _target,
    _uses,
    merge_parts,
)

MAX_DEPTH = 4  # hops followed at most
DEPTH_LIMIT = 100  # a depth above this is a mistake, not a wish: refused
DEFAULT_DEPTH = 2
MAX_ROWS = 1000
MAX_FRONTIER = 200  # definitions (or files) whose dependents one hop reads
MAX_NODES = 5000  # nodes reached in all
MAX_USES_READ = 50_000  # uses read per hop
MAX_EDGES_READ = 50_000  # file edges read per hop
IMPACT_SECONDS = 10.0  # of work per call; past it the rows found so far are returned
HOP_DECAY = 0.6
RELATION_WEIGHT = {
    "calls": 1.0,
    "tests": 0.9,
    "imports": 0.7,
    "calls_by_name": 0.5,
    "co_change": 0.5,
}
LEAF_RELATIONS = frozenset({"tests", "co_change"})  # not followed further
NOT_IMPORTS = frozenset({"tests", "co_change"})  # every other edge kind is an import
SPAN_TYPES = ["bigint", "text[]", "text[]"]


# --- arguments --------------------------------------------------------------------------


def check_depth(plpy, depth) -> int:
    """`depth` as the walk uses it: 1..MAX_DEPTH, a larger one clamped (with a NOTICE) up
    to DEPTH_LIMIT; null, below 1 or above DEPTH_LIMIT raise."""
    if depth is None:
        fail(
            plpy,
            "depth must not be null",
            hint=f"omit depth to use its default ({DEFAULT_DEPTH})",
            sqlstate=NULL_VALUE_NOT_ALLOWED,
        )
    if not 1 <= depth <= DEPTH_LIMIT:
        fail(
            plpy,
            f"depth must be between 1 and {MAX_DEPTH} (got {depth})",
            hint=f"omit depth to use its default ({DEFAULT_DEPTH}); deeper than {MAX_DEPTH} "
            "hops reaches most of a repository",
        )
    if depth > MAX_DEPTH:
        plpy.notice(f"depth {depth} is more than {MAX_DEPTH} hops: {MAX_DEPTH} are followed")
        return MAX_DEPTH
    return depth


# --- the walk ---------------------------------------------------------------------------


@dataclass
class Node:
    """A definition or a file that depends on the target, and how it is reached."""

    repository_id: int
    repository: str
    path: str
    symbol: str | None  # the qualified name of a definition; None: the file
    kind: str | None
    start_line: int | None
    end_line: int | None
    relation: str  # the edge it was reached by (RELATION_WEIGHT)
    hops: int
    via: str | None
    chain: list[str]
    score: float
    blob_sha: str | None = None
    lines: list[int] = field(default_factory=list)  # the calls' lines (calls)

    @property
    def key(self) -> tuple:
        # a call at the top level of a file is not the file (an importer, a test)
        return (
            self.repository_id,
            self.path,
            self.symbol,
            self.symbol is None and bool(self.lines),
        )

    @property
    def citation(self) -> str:
        if self.symbol is None and self.lines:
            return citation(self.repository, self.path, min(self.lines))
        return citation(self.repository, self.path, self.start_line, self.end_line)

    @property
    def label(self) -> str:
        return self.citation + (f" ({self.symbol})" if self.symbol else "")

    @property
    def is_test(self) -> bool:
        return bool(TEST_PATH.search(self.path))


def seed_node(d: dict) -> Node:
    """The target definition `d` (merged parts) as the walk's start."""
    node = Node(
        d["repository_id"],
        d["repository"],
        d["path"],
        d["qualified_name"],
        d["kind"],
        d["start_line"],
        d["end_line"],
        "target",
        0,
        None,
        [],
        1.0,
        d["blob_sha"],
    )
    node.chain = [node.label]
    return node


def file_node(repository_id: int, repository: str, path: str) -> Node:
    node = Node(repository_id, repository, path, None, None, None, None, "target", 0, None, [], 1.0)
    node.chain = [node.label]
    return node


@dataclass
class Walk:
    """The nodes reached from the seeds, by key; the first way a node is reached wins
    (the walk goes hop by hop, the strongest edges first)."""

    plpy: object
    tenant: int
    ids: list[int]
    names: dict[int, str]
    tick: Callable[[], bool]
    nodes: dict[tuple, Node] = field(default_factory=dict)
    stopped: str | None = None  # why the walk stopped early

    def add(self, node: Node) -> bool:
        if node.key in self.nodes:
            return False
        if len(self.nodes) >= MAX_NODES:
            self.stopped = f"{MAX_NODES:,} nodes reached"
            return False
        self.nodes[node.key] = node
        return True

    def _step(self, frm: Node, relation: str, weight: float = 1.0) -> tuple[int, float, list]:
        hops = frm.hops + 1
        score = RELATION_WEIGHT[relation] * weight * HOP_DECAY ** (hops - 1)
        if frm.hops > 0:
            score = min(score, frm.score)  # never stronger than what it depends through
        return hops, score, frm.chain

    # -- callers ------------------------------------------------------------------------

    def callers(self, frontier: list[tuple[Node, dict]]) -> list[tuple[Node, dict]]:
        """One hop of callers of the frontier's definitions (node, definition dict): the
        next frontier, of the resolved callers that are definitions."""
        by_name: dict[str, list[tuple[Node, dict]]] = {}
        for node, d in frontier:
            by_name.setdefault(d["name"], []).append((node, d))
        definitions = {name: [d for _, d in pairs] for name, pairs in by_name.items()}
        rows = plans.run(
            self.plpy,
            plans.load("impact_uses"),
            ["bigint", "text[]", "bigint[]", "boolean", "integer"],
            [self.tenant, sorted(by_name), self.ids, True, MAX_USES_READ],
        )
        if len(rows) >= MAX_USES_READ:
            self.stopped = f"over {MAX_USES_READ:,} calls read in one hop"
        uses = []
        for r in rows:
            uses.extend(_uses([r], r["name"]))
        uses.sort(key=lambda u: (u.repository, u.path, u.line))
        resolver = Resolver()
        _fill(self.plpy, self.tenant, resolver, uses)
        found: dict[str, list] = {}
        for use in uses:
            verdict = resolver.resolve(use, definitions[use.name])
            if verdict is not None:
                found.setdefault(use.name, []).append((use, verdict))
        # a method called on an object of a known class is resolved as callers() resolves
        # it; the classes' uses are read once for the hop
        typed: dict = {}
        for name, pairs in found.items():
            _resolve_typed(
                self.plpy, self.tenant, self.ids, resolver, definitions[name], pairs, typed
            )
        resolved = sorted(
            (pair for pairs in found.values() for pair in pairs),
            key=lambda p: (p[0].repository, p[0].path, p[0].line),
        )
        groups: dict[tuple, dict] = {}
        for use, (resolution, reached) in resolved:
            if self.tick():
                self.stopped = f"the {IMPACT_SECONDS:g} s budget was spent"
                break
            targets = by_name[use.name]
            frm = next((n for n, d in targets if d is reached), targets[0][0])
            if use.symbol is not None and (use.repository_id, use.path, use.symbol) == frm.key[:3]:
                continue  # a recursive call
            relation = "calls" if resolution == RESOLVED else "calls_by_name"
            key = (use.repository_id, use.path, use.symbol)
            group = groups.get(key)
            if group is None or (group["relation"] != "calls" and relation == "calls"):
                groups[key] = {"use": use, "from": frm, "relation": relation, "lines": []}
                group = groups[key]
            if use.line not in group["lines"]:
                group["lines"].append(use.line)
        spans = self._spans([g["use"] for g in groups.values()])
        following = []
        for g in sorted(
            groups.values(), key=lambda g: (g["relation"] != "calls", -g["from"].score)
        ):
            use, frm = g["use"], g["from"]
            span = _innermost(spans.get((use.blob_sha, use.symbol), []), g["lines"])
            hops, score, chain = self._step(frm, g["relation"])
            node = Node(
                use.repository_id,
                use.repository,
                use.path,
                use.symbol,
                span["kind"] if span else None,
                span["start_line"] if span else None,
                span["end_line"] if span else None,
                g["relation"],
                hops,
                frm.citation,
                [],
                score,
                use.blob_sha,
                sorted(g["lines"]),
            )
            node.chain = [*chain, f"{g['relation']} {node.label}"]
            if not self.add(node):
                continue
            if span is None or g["relation"] != "calls":
                continue  # only resolved callers that are definitions are followed
            following.append(
                (
                    node,
                    {
                        **span,
                        "repository_id": use.repository_id,
                        "repository": use.repository,
                        "path": use.path,
                        "blob_sha": use.blob_sha,
                    },
                )
            )
        following.sort(key=lambda nd: -nd[0].score)
        if len(following) > MAX_FRONTIER:
            self.stopped = f"over {MAX_FRONTIER} callers in one hop: the strongest are followed"
        return following[:MAX_FRONTIER]

    def _spans(self, uses: Sequence) -> dict[tuple[str, str], list[dict]]:
        named = {(u.blob_sha, u.symbol) for u in uses if u.symbol is not None}
        if not named:
            return {}
        rows = plans.run(
            self.plpy,
            plans.load("impact_spans"),
            SPAN_TYPES,
            [self.tenant, sorted({s for s, _ in named}), sorted({q for _, q in named})],
        )
        rows = [r for r in rows if (r["blob_sha"], r["qualified_name"]) in named]
        out: dict[tuple[str, str], list[dict]] = {}
        for d in merge_parts(dict(r, repository_id=0, path=r["blob_sha"]) for r in rows):
            out.setdefault((d["blob_sha"], d["qualified_name"]), []).append(d)
        return out

    # -- file edges ---------------------------------------------------------------------

    def files(
        self,
        frontier: list[Node],
        imports: str | None,
        name: str | None = None,
        co_change: bool = False,
        tests: bool = False,
    ) -> list[Node]:
        """One hop of file edges into the frontier's files. imports: 'all' (the importers,
        returned as the next frontier), 'name' (the importers of `name` only: leaves) or
        None; with `co_change` the co-change partners and with `tests` the tests (leaves)."""
        by_key: dict[tuple[int, str], Node] = {}
        for n in frontier:
            by_key.setdefault((n.repository_id, n.path), n)
        if not by_key:
            return []
        rows = plans.run(
            self.plpy,
            plans.load("impact_edges"),
            ["bigint", "bigint[]", "text[]", "integer"],
            [self.tenant, self.ids, sorted({p for _, p in by_key}), MAX_EDGES_READ],
        )
        if len(rows) >= MAX_EDGES_READ:
            self.stopped = f"over {MAX_EDGES_READ:,} file edges read in one hop"
        following = []
        for e in rows:
            if self.tick():
                self.stopped = f"the {IMPACT_SECONDS:g} s budget was spent"
                break
            relation = e["relation"] if e["relation"] in NOT_IMPORTS else "imports"
            if relation == "co_change" and not co_change:
                continue
            if relation == "tests" and not tests:
                continue
            if relation == "imports" and (
                imports is None or (imports == "name" and e["names"] and name not in e["names"])
            ):
                continue
            ends = [(e["target_path"], e["source_path"])]
            if relation == "co_change":
                ends.append((e["source_path"], e["target_path"]))
            rid = e["repository_id"]
            for into, other in ends:
                frm = by_key.get((rid, into))
                if frm is None or other == into:
                    continue
                hops, score, chain = self._step(frm, relation, float(e["weight"] or 1.0))
                node = Node(
                    rid,
                    self.names[rid],
                    other,
                    None,
                    None,
                    None,
                    None,
                    relation,
                    hops,
                    frm.citation,
                    [],
                    score,
                )
                node.chain = [*chain, f"{relation} {node.label}"]
                if self.add(node) and relation == "imports" and imports == "all":
                    following.append(node)
        if len(following) > MAX_FRONTIER:
            self.stopped = f"over {MAX_FRONTIER} importers in one hop: the first are followed"
        return following[:MAX_FRONTIER]


def _innermost(spans: list[dict], lines: list[int]) -> dict | None:
    holding = [s for s in spans if s["start_line"] <= min(lines) <= s["end_line"]]
    if not holding:
        return spans[0] if spans else None
    return max(holding, key=lambda s: (s["start_line"], -s["end_line"]))


def walk(
    plpy,
    tenant: int,
    repos: list[dict],
    definitions: list[dict],
    files: list[tuple[int, str]],
    depth: int,
    limits: budget.Budget | None = None,
) -> Walk:
    """The nodes reached from the target definitions (callers, importers of their name,
    co-changes and tests of their files) or from the target files (importers to `depth`,
    co-changes, tests)."""
    names = {r["id"]: r["name"] for r in repos}
    tick = budget.Ticker(
        limits or budget.Budget(IMPACT_SECONDS),
        lambda: plans.run(plpy, plans.load("check_interrupts")),
    )
    w = Walk(plpy, tenant, [r["id"] for r in repos], names, tick)
    seeds = [seed_node(d) for d in definitions]
    for n in seeds:
        w.add(n)
    file_seeds = [file_node(rid, names[rid], path) for rid, path in files]
    for n in file_seeds:
        w.add(n)
    if definitions:
        frontier = [(n, d) for n, d in zip(seeds, definitions, strict=True)]
        for _hop in range(depth):
            if not frontier or w.stopped:
                break
            frontier = w.callers(frontier)
        name = definitions[0]["name"]
        seed_files = list({(n.repository_id, n.path): n for n in seeds}.values())
        w.files(seed_files, imports="name", name=name, co_change=True)
    else:
        frontier_files = file_seeds
        for hop in range(depth):
            if not frontier_files or w.stopped:
                break
            frontier_files = w.files(frontier_files, imports="all", co_change=hop == 0)
    # the tests of the files reached before the last hop
    tested = [
        n for n in list(w.nodes.values()) if n.hops < depth and n.relation not in LEAF_RELATIONS
    ]
    if tested and not w.stopped:
        w.files(tested, imports=None, tests=True)
    return w


# --- impact -----------------------------------------------------------------------------


def resolve_target(plpy, tenant: int, repos: list[dict], text: str) -> tuple[Target, list]:
    """(the definitions the target names, the files it names): a citation of a line inside
    a definition or a name gives definitions; a file, or a citation of lines holding none,
    gives the file."""
    names = {r["name"] for r in repos}
    usable = _check_path(plpy, text, names)  # refuses '..', absolute paths
    target = _target(plpy, tenant, repos, text, None)
    if target.definitions:
        return target, []
    ids = [r["id"] for r in repos]
    by_id = {r["id"]: r for r in repos}
    found = plans.run(
        plpy,
        plans.load("outline_files"),
        ["bigint", "bigint[]", "text[]"],
        [tenant, ids, sorted({o.path for o in usable})],
    )
    for option in usable:
        hits = [
            (f["repository_id"], f["path"])
            for f in found
            if f["path"] == option.path and option.repo in (None, by_id[f["repository_id"]]["name"])
        ]
        if hits:
            return Target("", []), hits
    return target, []


def impact(plpy, target, repo, ref, depth, max_rows) -> list[dict]:
    check_text(
        plpy,
        "target",
        target,
        MAX_NAME_CHARS + MAX_PATH_CHARS,
        required=True,
        null_state=NULL_VALUE_NOT_ALLOWED,
        controls=True,
    )
    check_text(plpy, "repo", repo, MAX_NAME_CHARS, controls=True)
    check_text(plpy, "ref", ref, MAX_NAME_CHARS, controls=True)
    depth = check_depth(plpy, depth)
    check_max_rows(plpy, max_rows, MAX_ROWS, "lower depth")
    tenant, repos = resolve_scope(plpy, repo, ref)
    text = target.strip()
    found, files = resolve_target(plpy, tenant, repos, text)
    if not found.definitions and not files:
        where = f" in repository '{repo}'" if repo else ""
        plpy.notice(
            f"no definition or live file '{text[:200]}'{where} at this ref: pass a name "
            "find_symbol finds, a citation 'repo:path:line' or a file's path"
        )
        return []
    if len({d["qualified_name"] for d in found.definitions}) > 1:
        plpy.notice(
            f"{len(found.definitions)} definitions match '{text[:200]}': the impact of each "
            "is shown (pass a qualified name or a citation to narrow)"
        )
    w = walk(plpy, tenant, repos, found.definitions, files, depth)
    if w.stopped:
        plpy.notice(f"impact stopped early ({w.stopped}): the rows found so far are returned")
    rows = [n for n in w.nodes.values() if n.hops > 0]
    rows.sort(key=lambda n: (-n.score, n.hops, n.repository, n.path, n.start_line or 0))
    if len(rows) > max_rows:
        plpy.notice(f"{len(rows):,} rows; the first {max_rows:,} are returned (max_rows)")
    return [as_row(i, n) for i, n in enumerate(rows[:max_rows], 1)]


def as_row(rank: int, n: Node) -> dict:
    return {
        "rank": rank,
        "repository": n.repository,
        "path": n.path,
        "symbol": n.symbol,
        "kind": n.kind,
        "start_line": n.start_line,
        "end_line": n.end_line,
        "relation": n.relation,
        "hops": n.hops,
        "via": n.via,
        "chain": n.chain,
        "is_test": n.is_test,
        "score": round(n.score, 6),
        "citation": n.citation,
    }
