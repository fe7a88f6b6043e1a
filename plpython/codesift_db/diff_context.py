"""Diff context: the definitions a change touches, and the context a review or a
fix-the-build agent needs (the changed definitions, their direct callers and the tests that
reach them) packed under a token budget with citations. Called by the stored functions
changed_symbols and diff_context (sql/idempotent/012-impact.sql); every statement names the
session's tenant.

    changed_symbols(plpy, repo, base_ref, head_ref, max_rows) -> rows, by path and line
    diff_context(plpy, repo, base_ref, head_ref, token_budget, diff, ref) -> packed rows

A change is either two indexed refs of one repository (base_ref..head_ref) or a unified diff
given as text (a pull request not indexed as a ref) read against one indexed ref (`ref`,
the base). With two refs nothing needs git: the database holds the blobs of both trees, so
the changed files are the paths whose blob differs, and their changed lines come from
comparing the two blobs' lines (difflib). With a diff, the changed lines of the base are the
hunks' removed lines and the lines where lines are added (diff_hunks.py parses it).

Each changed line belongs to the innermost definition holding it (a method, not its class,
when only the method's body changed), and where one side only lost or gained lines, the gap
belongs to the innermost definition holding the lines on both sides of it (a line removed
from a body changes that body; a whole definition removed changes none around it). A
definition is 'added' when the base's version of the file has no definition of its qualified
name and kind, 'deleted' when the head's has none, else 'modified'. Changed lines outside
any definition (imports, module constants) are 'hunk' items. A diff's hunks are packed as
they are (the new text exists nowhere else).

The pack: the changed definitions first (the head's text; a deleted one's from the base; a
definition longer than CHANGED_SHARE of the budget cut to a window around its changed
lines), then the hunks outside definitions, then the direct callers and the tests that reach
the changed definitions (impact.py's walk, two hops: callers resolved through imports
first), alternating so that neither crowds the other out; a caller or test longer than
NEIGHBOUR_TOKENS is cut to a window around its calls. When the changes would take more than
CHANGES_SHARE of the budget (a sweep over many definitions), the largest are cut to their
changed lines until they do not, so that callers and tests still fit. packing.pack packs
the items in that order under the exact budget.

Bounds: MAX_CHANGED_FILES files compared, blobs of at most MAX_COMPARED_CHARS compared line
by line (a larger one counts as changed throughout), MAX_DIFF_CHARS of diff text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import budget, plans
from .citations import citation, shown, unsafe_path
from .diff_hunks import MAX_DIFF_CHARS, FileDiff, parse_unified_diff
from .diff_listing import pack_with_listing
from .errcodes import NULL_VALUE_NOT_ALLOWED
from .impact import IMPACT_SECONDS, walk
from .pipeline.params import check_budget, check_text, fail
from .pipeline.scope import resolve_scope
from .references import MAX_NAME_CHARS, merge_parts
from .tokens import estimate_tokens

MAX_CHANGED_ROWS = 5000
MAX_CHANGED_FILES = 500  # files a change may touch; more are left out (NOTICE)
MAX_COMPARED_CHARS = 2_000_000  # a larger blob is not compared line by line
MAX_SYMBOLS_READ = 100_000  # definitions read for the changed files
CALL_DEPTH = 2  # hops to the tests that reach a changed definition
MAX_CALLERS_PACKED = 100  # candidates of each kind offered to the packer
MAX_NEIGHBOURS = 1000  # callers and tests packed or listed (diff_listing.py) at most
NEIGHBOUR_COST = 25  # tokens a cut caller or test takes at least: no more are offered
CHANGED_SHARE = 0.34  # of the budget one changed definition may take whole
CHANGES_SHARE = 0.5  # of the budget the changes may take before they are cut tighter
NEIGHBOUR_TOKENS = 120  # a caller or test longer than this is cut to its calls
NEIGHBOUR_WINDOW = 2  # lines around its calls: many callers and tests fit, each cited
WINDOW = 3  # lines around a changed line or a call in a cut item
TIGHT_WINDOW = 1  # around the changed lines of a change cut to leave room for callers
HUNK_CONTEXT = 2  # lines around changed lines outside definitions
ADDED, MODIFIED, DELETED = "added", "modified", "deleted"
CHANGED = "changed"  # a base definition a diff's hunks touch (modified, or deleted)


# --- the changed lines ------------------------------------------------------------------


Gap = tuple[int, int]  # (the line before, the line after) where lines went in or out


def changed_lines(
    base: Sequence[str], head: Sequence[str]
) -> tuple[set[int], set[int], set[Gap], set[Gap]]:
    """(the base's changed lines, the head's, the base's gaps, the head's), 1-based: the
    lines replaced, deleted or inserted on each side; where one side only gained lines,
    the other has a gap between two lines (0 before the first, length + 1 after the last),
    which changes the definition holding both of its lines (a line removed from a body)
    and no other (a whole definition removed)."""
    old: set[int] = set()
    new: set[int] = set()
    old_gaps: set[Gap] = set()
    new_gaps: set[Gap] = set()
    # the lines both ends share are left out of the comparison: a change is mostly a few
    # lines in the middle of a long file, and difflib's cost grows with the lines compared
    limit = min(len(base), len(head))
    top = 0
    while top < limit and base[top] == head[top]:
        top += 1
    bottom = 0
    while bottom < limit - top and base[-1 - bottom] == head[-1 - bottom]:
        bottom += 1
    matcher = difflib.SequenceMatcher(
        None, base[top : len(base) - bottom], head[top : len(head) - bottom]
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + top, i2 + top, j1 + top, j2 + top
        if tag == "equal":
            continue
        if i2 > i1:
            old.update(range(i1 + 1, i2 + 1))
        else:
            old_gaps.add((i1, i1 + 1))
        if j2 > j1:
            new.update(range(j1 + 1, j2 + 1))
        else:
            new_gaps.add((j1, j1 + 1))
    return old, new, old_gaps, new_gaps


def innermost(definitions: Sequence[dict], first: int, last: int | None = None) -> dict | None:
    """The innermost definition holding lines first..last: the latest start, then the
    shortest."""
    last = first if last is None else last
    holding = [d for d in definitions if d["start_line"] <= first and last <= d["end_line"]]
    if not holding:
        return None
    return max(holding, key=lambda d: (d["start_line"], -d["end_line"]))


def attribute(
    definitions: Sequence[dict], lines: Iterable[int], gaps: Iterable[Gap] = ()
) -> tuple[dict, list[int]]:
    """({id(definition): its changed lines}, the lines outside every definition); a gap
    changes the innermost definition holding both its lines (as its line before)."""
    by_definition: dict[int, list[int]] = {}
    outside = []
    for line in sorted(lines):
        d = innermost(definitions, line)
        if d is None:
            outside.append(line)
        else:
            by_definition.setdefault(id(d), []).append(line)
    for before, after in sorted(gaps):
        d = innermost(definitions, before, after) if before >= 1 else None
        if d is not None and before not in by_definition.get(id(d), []):
            by_definition.setdefault(id(d), []).append(before)
    for changed in by_definition.values():
        changed.sort()
    return by_definition, outside


@dataclass
class Change:
    """One changed definition (`definition`: merged parts, with repository, path, ref and
    blob), or lines outside any (definition None)."""

    change: str  # added, modified, deleted, hunk
    repository_id: int
    repository: str
    ref: str
    path: str
    blob_sha: str | None
    lines: list[int]
    definition: dict | None = None
    text: str | None = None  # a diff's hunk, as the diff gives it
    span: tuple[int, int] | None = None  # a hunk's lines

    @property
    def symbol(self) -> str | None:
        return self.definition["qualified_name"] if self.definition else None


@dataclass
class Scope:
    tenant: int
    base: dict  # the repository row of the base ref
    head: dict | None  # of the head ref; None for a diff given as text
    notes: list[str] = field(default_factory=list)


# --- arguments --------------------------------------------------------------------------


def _one_repository(plpy, repo, ref: str, label: str) -> tuple[int, dict]:
    tenant, repos = resolve_scope(plpy, repo, ref)
    if len(repos) > 1:
        fail(
            plpy,
            f"{len(repos)} repositories have ref '{shown(ref)}': "
            + ", ".join(r["name"] for r in repos[:10]),
            hint=f"pass repo => '{repos[0]['name']}'",
        )
    return tenant, repos[0]


def _refs_scope(plpy, repo, base_ref, head_ref) -> Scope:
    check_text(plpy, "repo", repo, MAX_NAME_CHARS, controls=True)
    for label, value in (("base_ref", base_ref), ("head_ref", head_ref)):
        check_text(plpy, label, value, MAX_NAME_CHARS, controls=True)
        if value is None:
            fail(
                plpy,
                f"{label} must not be null",
                hint="pass base_ref and head_ref, two indexed refs of the repository (or, "
                "to diff_context, diff => a unified diff and ref => the ref it applies to)",
                sqlstate=NULL_VALUE_NOT_ALLOWED,
            )
    tenant, base = _one_repository(plpy, repo, base_ref, "base_ref")
    _, head = _one_repository(plpy, base["name"], head_ref, "head_ref")
    return Scope(tenant, base, head)


# --- reading the stored trees -------------------------------------------------------------


def _definitions(plpy, tenant: int, shas: list[str]) -> dict[str, list[dict]]:
    """The definitions of each blob, long ones' parts merged."""
    if not shas:
        return {}
    rows = plans.run(
        plpy,
        plans.load("diff_symbols"),
        ["bigint", "text[]", "integer"],
        [tenant, sorted(set(shas)), MAX_SYMBOLS_READ],
    )
    if len(rows) >= MAX_SYMBOLS_READ:
        plpy.notice(
            f"over {MAX_SYMBOLS_READ:,} definitions in the changed files: some are left out"
        )
    out: dict[str, list[dict]] = {}
    for d in merge_parts(dict(r, repository_id=0, path=r["blob_sha"]) for r in rows):
        out.setdefault(d["blob_sha"], []).append(d)
    return out


def _contents(plpy, tenant: int, shas: Iterable[str]) -> dict[str, list[str] | None]:
    """Each blob's lines (None: too large to compare)."""
    wanted = sorted({s for s in shas if s})
    if not wanted:
        return {}
    rows = plans.run(
        plpy,
        plans.load("diff_blobs"),
        ["bigint", "text[]", "integer"],
        [tenant, wanted, MAX_COMPARED_CHARS],
    )
    return {
        r["sha"]: (r["content"].split("\n") if r["content"] is not None else None) for r in rows
    }


def _located(d: dict, repo: dict, path: str) -> dict:
    return {
        **d,
        "repository_id": repo["id"],
        "repository": repo["name"],
        "path": path,
        "ref": repo["ref"],
    }


def ref_changes(plpy, scope: Scope) -> list[Change]:
    """The changes between the two refs of `scope`, by path and line."""
    assert scope.head is not None
    base, head = scope.base, scope.head
    files = plans.run(
        plpy,
        plans.load("diff_files"),
        ["bigint", "bigint", "bigint", "integer"],
        [scope.tenant, base["id"], head["id"], MAX_CHANGED_FILES + 1],
    )
    if len(files) > MAX_CHANGED_FILES:
        plpy.notice(
            f"over {MAX_CHANGED_FILES} files differ between the refs: the first "
            f"{MAX_CHANGED_FILES} by path are compared"
        )
        files = files[:MAX_CHANGED_FILES]
    shas = [f["base_sha"] for f in files] + [f["head_sha"] for f in files]
    contents = _contents(plpy, scope.tenant, shas)
    definitions = _definitions(plpy, scope.tenant, [s for s in shas if s])
    out: list[Change] = []
    for f in files:
        path, old_sha, new_sha = f["path"], f["base_sha"], f["head_sha"]
        old_lines = contents.get(old_sha) if old_sha else []
        new_lines = contents.get(new_sha) if new_sha else []
        old_defs = definitions.get(old_sha, []) if old_sha else []
        new_defs = definitions.get(new_sha, []) if new_sha else []
        old_gaps: set[Gap] = set()
        new_gaps: set[Gap] = set()
        if old_lines is None or new_lines is None:  # too large: every definition changed
            old_changed = {d["start_line"] for d in old_defs}
            new_changed = {d["start_line"] for d in new_defs}
        else:
            old_changed, new_changed, old_gaps, new_gaps = changed_lines(old_lines, new_lines)
        old_names = {(d["qualified_name"], d["kind"]) for d in old_defs}
        new_names = {(d["qualified_name"], d["kind"]) for d in new_defs}
        touched, outside = attribute(new_defs, new_changed, new_gaps)
        for d in new_defs:
            if id(d) in touched:
                kind = MODIFIED if (d["qualified_name"], d["kind"]) in old_names else ADDED
                out.append(
                    Change(
                        kind,
                        head["id"],
                        head["name"],
                        head["ref"],
                        path,
                        new_sha,
                        touched[id(d)],
                        _located(d, head, path),
                    )
                )
        # changed lines outside definitions, but not blank ones (the space around a change)
        shown_lines = [ln for ln in outside if new_lines is None or new_lines[ln - 1].strip()]
        out += _hunks(head, path, new_sha, shown_lines, len(new_lines or []))
        gone, _ = attribute(old_defs, old_changed, old_gaps)
        for d in old_defs:
            if id(d) in gone and (d["qualified_name"], d["kind"]) not in new_names:
                out.append(
                    Change(
                        DELETED,
                        base["id"],
                        base["name"],
                        base["ref"],
                        path,
                        old_sha,
                        gone[id(d)],
                        _located(d, base, path),
                    )
                )
    return out


def _hunks(repo: dict, path: str, sha: str | None, lines: list[int], length: int) -> list[Change]:
    """Runs of changed lines outside definitions, with HUNK_CONTEXT lines around each."""
    if not sha:
        return []
    runs: list[tuple[int, int, list[int]]] = []  # (first, last, changed lines)
    for line in lines:
        a, b = max(1, line - HUNK_CONTEXT), min(max(length, 1), line + HUNK_CONTEXT)
        if runs and a <= runs[-1][1] + 1:
            first, last, changed = runs[-1]
            runs[-1] = (first, max(last, b), [*changed, line])
        else:
            runs.append((a, b, [line]))
    return [
        Change("hunk", repo["id"], repo["name"], repo["ref"], path, sha, changed, span=(a, b))
        for a, b, changed in runs
    ]


def diff_changes(plpy, scope: Scope, diffs: list[FileDiff]) -> list[Change]:
    """The changes a parsed diff makes to the base ref: its hunks, and the base's
    definitions whose lines the hunks touch."""
    base = scope.base
    paths = sorted(
        {d.old_path for d in diffs if d.old_path} | {d.new_path for d in diffs if d.new_path}
    )
    live = {
        r["path"]: r["blob_sha"]
        for r in plans.run(
            plpy,
            plans.load("outline_files"),
            ["bigint", "bigint[]", "text[]"],
            [scope.tenant, [base["id"]], paths],
        )
    }
    definitions = _definitions(plpy, scope.tenant, list(live.values()))
    out: list[Change] = []
    missing = []
    for fd in diffs:
        path = fd.old_path or fd.new_path
        assert path is not None
        sha = live.get(fd.old_path) if fd.old_path else None
        if fd.old_path and sha is None:
            missing.append(fd.old_path)
        defs = definitions.get(sha, []) if sha else []
        touched, _ = attribute(defs, fd.old_changed, fd.old_gaps)
        for hunk in fd.hunks:
            out.append(
                Change(
                    "hunk",
                    base["id"],
                    base["name"],
                    base["ref"],
                    fd.new_path or path,
                    None,
                    [hunk.old_start],
                    text=hunk.text,
                    span=(hunk.new_start, hunk.new_end),
                )
            )
        for d in defs:
            if id(d) in touched:
                kind = DELETED if fd.new_path is None else CHANGED
                out.append(
                    Change(
                        kind,
                        base["id"],
                        base["name"],
                        base["ref"],
                        path,
                        sha,
                        touched[id(d)],
                        _located(d, base, path),
                    )
                )
    if missing:
        plpy.notice(
            f"{len(missing)} file(s) the diff changes are not live at ref '{shown(base['ref'])}'"
            f" (e.g. '{shown(missing[0])}'): their hunks are packed, no definition is read"
        )
    return out


# --- changed_symbols ----------------------------------------------------------------------


def changed_symbols(plpy, repo, base_ref, head_ref, max_rows) -> list[dict]:
    if max_rows is None or not 1 <= max_rows <= MAX_CHANGED_ROWS:
        fail(
            plpy,
            f"max_rows must be between 1 and {MAX_CHANGED_ROWS:,} (got {max_rows})",
            hint="omit max_rows to use its default",
            sqlstate=NULL_VALUE_NOT_ALLOWED if max_rows is None else "22023",
        )
    scope = _refs_scope(plpy, repo, base_ref, head_ref)
    rows = [
        {
            "repository": c.repository,
            "ref": c.ref,
            "path": c.path,
            "symbol": c.symbol,
            "kind": c.definition["kind"],
            "change": c.change,
            "start_line": c.definition["start_line"],
            "end_line": c.definition["end_line"],
            "changed_lines": c.lines,
            "citation": citation(
                c.repository, c.path, c.definition["start_line"], c.definition["end_line"]
            ),
        }
        for c in ref_changes(plpy, scope)
        if c.definition is not None
    ]
    if len(rows) > max_rows:
        plpy.notice(f"{len(rows):,} changed definitions; the first {max_rows:,} are returned")
    return rows[:max_rows]


# --- diff_context -------------------------------------------------------------------------


def _diff_scope(plpy, repo, base_ref, head_ref, diff, ref) -> tuple[Scope, list[FileDiff]]:
    check_text(plpy, "repo", repo, MAX_NAME_CHARS, controls=True)
    check_text(plpy, "ref", ref, MAX_NAME_CHARS, controls=True)
    check_text(plpy, "base_ref", base_ref, MAX_NAME_CHARS, controls=True)
    if head_ref is not None:
        fail(
            plpy,
            "pass either head_ref or diff, not both",
            hint="head_ref compares two indexed refs; diff is a change no ref holds",
        )
    if base_ref is not None and ref is not None and base_ref != ref:
        fail(plpy, "base_ref and ref differ", hint="with diff, pass the ref it applies to as ref")
    if len(diff) > MAX_DIFF_CHARS:
        fail(
            plpy,
            f"diff is {len(diff):,} characters; at most {MAX_DIFF_CHARS:,}",
            hint="pass the diff of fewer files (git diff -- PATH...), or index the branch "
            "and pass base_ref and head_ref",
        )
    try:
        diffs = parse_unified_diff(diff)
    except ValueError as exc:
        fail(plpy, f"diff is not a unified diff: {exc}", hint="pass the output of git diff")
    for fd in diffs:
        for path in (fd.old_path, fd.new_path):
            why = unsafe_path(path) if path is not None else None
            if why is None and path is not None and any(ord(c) < 32 for c in path):
                why = "holds control characters"
            if why:
                fail(
                    plpy,
                    f"diff changes '{shown(path or '')}', which {why}",
                    hint="pass a diff of files inside the repository (paths relative to its "
                    "root, as git diff writes them)",
                )
    if not diffs:
        fail(
            plpy,
            "diff changes no file",
            hint="pass the output of git diff (with its ---/+++ lines and @@ hunks)",
        )
    tenant, base = _one_repository(plpy, repo, base_ref or ref, "ref")
    return Scope(tenant, base, None), diffs


def diff_context(plpy, repo, base_ref, head_ref, token_budget, diff, ref) -> list[dict]:
    check_budget(plpy, token_budget, default=4000)
    if diff is not None:
        scope, diffs = _diff_scope(plpy, repo, base_ref, head_ref, diff, ref)
        changes = diff_changes(plpy, scope, diffs)
        searched = scope.base  # callers and tests as the base ref has them
    else:
        if ref is not None:
            fail(plpy, "ref is the base of a diff", hint="without diff, pass base_ref and head_ref")
        scope = _refs_scope(plpy, repo, base_ref, head_ref)
        changes = ref_changes(plpy, scope)
        assert scope.head is not None
        searched = scope.head
    if not changes:
        plpy.notice("the change touches no indexed file")
        return []
    items = _changed_items(changes, token_budget)
    neighbours = _neighbour_items(plpy, scope.tenant, searched, changes)
    offered = min(MAX_CALLERS_PACKED, token_budget // NEIGHBOUR_COST)
    items += [n for n in neighbours if n["_nth"] < offered]
    _fill_texts(plpy, scope.tenant, items, token_budget)
    packed = pack_with_listing(items, neighbours, token_budget)
    listed = sum(p.get("listed", 0) for p in packed)
    wanted = sum(1 for i in items if "_key" not in i) + len(neighbours)
    left = wanted - sum(1 for p in packed if not p.get("listed")) - listed
    named = f"{listed} caller(s) and test(s) listed by name: their bodies did not fit"
    if left:
        more = f" ({named})" if listed else ""
        plpy.notice(f"{left} item(s) did not fit in token_budget {token_budget:,}{more}")
    elif listed:
        plpy.notice(named)
    return [
        {
            "rank": i,
            "role": p["role"],
            "repository": p["repository"],
            "ref": p["ref"],
            "path": p["path"],
            "symbol": p.get("symbol"),
            "start_line": p["start_line"],
            "end_line": p["end_line"],
            "reason": p["reason"],
            "tokens": p["tokens"],
            "citation": citation(p["repository"], p["path"], p["start_line"], p["end_line"]),
            "text": p["packed_text"],
        }
        for i, p in enumerate(packed, 1)
    ]


def _item(
    role: str,
    c_repo: str,
    ref: str,
    path: str,
    sha,
    start: int,
    end: int,
    symbol,
    reason: str,
    text: str | None = None,
) -> dict:
    return {
        "role": role,
        "repository": c_repo,
        "ref": ref,
        "path": path,
        "blob_sha": sha,
        "start_line": start,
        "end_line": end,
        "symbol": symbol,
        "reason": reason,
        "text": text,
    }


def _cut(item: dict, lines: list[int], window: int) -> None:
    """Cut the item's text to its lines from `window` before the first of `lines` to
    `window` after the last (within the item); the reason says so."""
    first, start, end = item["start_line"], item["start_line"], item["end_line"]
    a, b = max(start, min(lines) - window), min(end, max(lines) + window)
    rows = (item["text"] or "").split("\n")
    item["text"] = "\n".join(rows[a - first : b - first + 1])
    item["start_line"], item["end_line"] = a, b
    if "(lines " not in item["reason"]:
        item["reason"] += f" (lines {a}-{b} of {item['symbol'] or 'the changed lines'})"


def _changed_items(changes: list[Change], token_budget: int) -> list[dict]:
    """A diff's hunks, the changed definitions, the changed lines outside definitions, then
    the deleted definitions."""
    order = {MODIFIED: 0, ADDED: 0, CHANGED: 0, "hunk": 1, DELETED: 2}
    out = []
    # a diff's hunks first: the new text exists nowhere else
    for c in sorted(changes, key=lambda c: -1 if c.text else order[c.change]):
        if c.definition is None:
            assert c.span is not None
            reason = "diff hunk (lines of the new version)" if c.text else "changed lines"
            out.append(
                _item(
                    "hunk",
                    c.repository,
                    c.ref,
                    c.path,
                    c.blob_sha,
                    c.span[0],
                    c.span[1],
                    None,
                    reason,
                    c.text,
                )
            )
            continue
        d = c.definition
        start, end = d["start_line"], d["end_line"]
        item = _item(
            "change",
            c.repository,
            c.ref,
            c.path,
            c.blob_sha,
            start,
            end,
            c.symbol,
            c.change + (f" at {c.ref}" if c.change == DELETED else ""),
        )
        item["_cap"] = max(1, int(CHANGED_SHARE * token_budget))
        item["_lines"] = c.lines
        out.append(item)
    return out


def _neighbour_items(plpy, tenant: int, repo: dict, changes: list[Change]) -> list[dict]:
    """The direct callers of the changed definitions and the tests that reach them,
    alternating (each kind in the walk's rank order), MAX_NEIGHBOURS at most; `_nth`: the
    place of each in its kind, `_key`: what names it once packed or cut."""
    seeds = [
        c.definition
        for c in changes
        if c.definition is not None
        and c.change != DELETED
        and c.repository_id == repo["id"]
        and c.definition["kind"] != "section"
    ]
    if not seeds:
        return []
    w = walk(plpy, tenant, [repo], seeds, [], CALL_DEPTH, budget.Budget(IMPACT_SECONDS / 2))
    changed = {(c.path, c.symbol) for c in changes if c.symbol}
    callers, tests = [], []
    for n in sorted(w.nodes.values(), key=lambda n: (-n.score, n.hops, n.path)):
        if n.hops == 0 or n.start_line is None or (n.path, n.symbol) in changed:
            continue
        if not n.relation.startswith("calls"):
            continue
        how = " ".join(n.chain[1:]) if n.hops > 1 else n.relation + " " + n.chain[0]
        if n.is_test:
            tests.append((n, f"test: {how}"))
        elif n.hops == 1:
            callers.append((n, f"caller: {n.relation} {n.via}"))
    out: list[dict] = []
    for i in range(max(len(callers), len(tests))):
        for group, role in ((callers, "caller"), (tests, "test")):
            if i < len(group) and len(out) < MAX_NEIGHBOURS:
                n, why = group[i]
                assert n.start_line is not None and n.end_line is not None  # definitions only
                item = _item(
                    role,
                    n.repository,
                    repo["ref"],
                    n.path,
                    n.blob_sha,
                    n.start_line,
                    n.end_line,
                    n.symbol,
                    why,
                )
                item["_cap"] = NEIGHBOUR_TOKENS
                item["_lines"] = n.lines or [n.start_line]
                item["_nth"] = i
                item["_key"] = (role, n.path, n.start_line)
                out.append(item)
    return out


def _fill_texts(plpy, tenant: int, items: list[dict], token_budget: int) -> None:
    """Each item's text from its blob (a diff's hunk has its own), cut to a window around
    its changed lines or calls when over its cap."""
    wanted = [i for i in items if i["text"] is None and i["blob_sha"]]
    if wanted:
        rows = plans.run(
            plpy,
            plans.load("span_texts"),
            ["bigint", "text[]", "int[]", "int[]"],
            [
                tenant,
                [i["blob_sha"] for i in wanted],
                [i["start_line"] for i in wanted],
                [i["end_line"] for i in wanted],
            ],
        )
        for r in rows:
            wanted[r["i"] - 1]["text"] = r["text"]
    for item in items:
        cap = item.pop("_cap", None)
        lines = item["_lines"] = item.get("_lines") or []
        if cap is not None and lines and estimate_tokens(item["text"] or "") > cap:
            _cut(item, lines, WINDOW if item["role"] == "change" else NEIGHBOUR_WINDOW)
    # changes that would take most of the budget are cut to their changed lines, the
    # largest first, so that their callers and tests still fit
    changes = [i for i in items if i["role"] == "change" and i["_lines"]]
    cost = {
        id(i): estimate_tokens(i["text"] or "") for i in items if i["role"] in ("change", "hunk")
    }
    total = sum(cost.values())
    for item in sorted(changes, key=lambda i: -cost[id(i)]):
        if total <= CHANGES_SHARE * token_budget:
            break
        _cut(item, item["_lines"], TIGHT_WINDOW)
        if estimate_tokens(item["text"] or "") > cost[id(item)] // 2:
            _cut(item, item["_lines"][:1], TIGHT_WINDOW)  # changed lines far apart
        now = estimate_tokens(item["text"] or "")
        total += now - cost[id(item)]
        cost[id(item)] = now
    for item in items:
        item.pop("_lines", None)
