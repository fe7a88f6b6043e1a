"""Outlines: the pack is also a map. A candidate file whose definitions the pack cannot all
hold gets an outline item: its citation, then one line per definition the pack left out
(its signature, indented by depth, as file_outline lists it: navigation.py), each cut to
LINE_TOKENS but never inside its name, so that the agent sees every name and can ask
find_symbol for the one it needs.

The budget is honest: the bodies are packed first in the budget less OUTLINE_SHARE of it;
the outlines then take what is left, the best candidate files first (each at most
FILE_SHARE of the budget), and what they leave goes back to the bodies (a second fill),
each outline then cut again to at most what it took and to the definitions still not
packed whole. The sum of the pack's tokens never exceeds the budget, and an outline never
lists a definition whose whole body the pack holds.

Which files: the OUTLINE_FILES best candidate files (ranked by their best candidate:
packed, left out for the budget, pruned or too big to pack whole) that are not packed
whole. Within an outline, the definitions the ranking chose come first when not all fit
(the candidates left out, then those whose name shares a word with the question), shown in
file order with the enclosing definitions they sit in."""

import re

from .. import navigation, packing, plans, tokens
from ..citations import citation
from . import standins
from .request import Request

OUTLINE = "outline"  # the kind of an outline item
OUTLINE_SHARE = 0.15  # of the budget kept from the bodies' first fill for the outlines
FILE_SHARE = 0.06  # of the budget one file's outline may take at most
OUTLINE_FILES = 5  # best candidate files that may get an outline
LINE_TOKENS = 10  # a definition's line: its signature, or its name alone when longer
NAME_TOKENS = 16  # a name longer than this (generated code) is cut too
READ_PER_FILE = 1000  # definitions read per file (a generated file can define thousands)
NEARNESS_TYPES = ["bigint", "bigint[]", "text", "text"]
CUT = "..."
LOCAL_TO = ("function", "method")  # a definition inside one of these is local to it
# the words of a name, as the question's terms are split (identifiers.py): snake_case,
# camelCase and acronyms
WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# what an outline takes from its file's best candidate: why the file ranks where it does
NOT_INHERITED = {
    "symbol": None,
    "text": None,
    "stand_in": False,
    "via_file": None,
    "called_by": None,
    "pruned_by": None,
}


def named(line: str, name: str) -> str | None:
    """The line cut after the definition's name: its parameters left out, and its
    decorators (words from the first '@' on), the word before the name kept ('def')."""
    found = re.search(rf"(?<![@.\w]){re.escape(name)}(?!\w)", line) if name else None
    if found is None:
        return None
    indent = line[: len(line) - len(line.lstrip())]
    before = line[len(indent) : found.start()]
    if "@" in before:
        words = before.split()
        before = f"{words[-1]} " if words and not words[-1].startswith("@") else ""
    return indent + before + name


def short_line(symbol: dict) -> str:
    """A definition's outline line (navigation.symbol_line) in at most LINE_TOKENS tokens:
    a longer one ends at the definition's name (named), never cut inside it (the agent asks
    find_symbol by it) unless that takes more than NAME_TOKENS; else it is cut where the
    tokens run out."""
    line = navigation.symbol_line(symbol)
    if tokens.estimate_tokens(line) <= LINE_TOKENS:
        return line
    cut = named(line, symbol.get("name") or "")
    if cut is not None and tokens.estimate_tokens(cut) <= NAME_TOKENS:
        return cut
    k = packing.longest_prefix(
        len(line), lambda k: tokens.estimate_tokens(line[:k].rstrip() + CUT) <= LINE_TOKENS
    )
    return line[:k].rstrip() + CUT


def _where(item: dict) -> tuple:
    return (item["repository_id"], item["path"], item.get("blob_sha"))


def files_to_outline(ranked: list[dict], packed: list[dict]) -> list[dict]:
    """The best candidate of each of the OUTLINE_FILES best files not packed whole."""
    whole = {
        _where(i) for i in packed if i["packed"] and i["kind"] == "file" and not i["truncated"]
    }
    best: dict[tuple, dict] = {}
    for item in ranked:
        where = _where(item)
        if not item.get("blob_sha") or where in whole or where in best:
            continue
        best[where] = item
        if len(best) == OUTLINE_FILES:
            break
    return list(best.values())


def _packed_spans(packed: list[dict]) -> dict[tuple, list[tuple[int, int]]]:
    spans: dict[tuple, list[tuple[int, int]]] = {}
    for item in packed:
        if item["packed"]:
            spans.setdefault(_where(item), []).append(
                (int(item["start_line"]), int(item["end_line"]))
            )
    return spans


def left_out(symbols: list[dict], spans: list[tuple[int, int]]) -> list[dict]:
    """The definitions whose whole body no packed span holds, in file order."""
    return [
        s for s in symbols if not any(a <= s["start_line"] and s["end_line"] <= b for a, b in spans)
    ]


def chosen_first(
    symbols: list[dict],
    wanted: dict[tuple[int, int], float],
    terms: list[str],
    weights: list[float] | None = None,
    near: dict[tuple[int, int], float] | None = None,
) -> list:
    """Indexes of symbols by priority: the file's header, then by the question's terms
    their name holds (their weights summed: a long question's names weigh more than its
    prose, question.py), then the ranking's candidates (their spans the keys of `wanted`,
    best score first), definitions before chunks of statements, then by how near their
    vector is to the question's (`near`, by span), then in file order."""
    weight = dict(zip(terms, weights or [1.0] * len(terms), strict=True))
    near = near or {}

    def priority(i: int) -> tuple:
        s = symbols[i]
        score = wanted.get((s["start_line"], s["end_line"]))
        words = {w.lower() for w in WORD.findall(s["qualified_name"] or "")}
        return (
            s["kind"] != standins.HEADER,
            -sum(weight.get(w, 0.0) for w in words),
            score is None,
            -(score or 0.0),
            s["kind"] in navigation.MAP_SKIPPED_KINDS,  # a chunk of statements after those
            -near.get((s["start_line"], s["end_line"]), -1.0),
            i,
        )

    return sorted(range(len(symbols)), key=priority)


def listable(symbols: list[dict]) -> list[dict]:
    """The definitions an outline may list (symbols in file order, each with its depth):
    not those local to a function or method (part of its body), and a name defined twice
    (a property's getter and setter) once."""
    up = enclosing(symbols)
    local = [False] * len(symbols)
    for i, parent in enumerate(up):
        if parent is not None:
            local[i] = local[parent] or symbols[parent]["kind"] in LOCAL_TO
    seen: set = set()
    out = []
    for s, inner in zip(symbols, local, strict=True):
        if inner or s["qualified_name"] in seen:
            continue
        seen.add(s["qualified_name"])
        out.append(s)
    return out


def header_entry(symbols: list[dict]) -> dict | None:
    """The file's header, the lines before its first definition (its imports), as an
    outline entry; None when a definition starts on line 1."""
    first = min((s["start_line"] for s in symbols), default=1)
    if first <= 1:
        return None
    return {
        "name": None,
        "qualified_name": None,
        "kind": standins.HEADER,
        "depth": 0,
        "start_line": 1,
        "end_line": first - 1,
        "signature": f"{standins.HEADER}: lines 1-{first - 1}",
    }


def enclosing(symbols: list[dict]) -> list[int | None]:
    """For each symbol (in file order, each with its depth), the index of the nearest one
    before it of a smaller depth: the definition it sits in (None at depth 0)."""
    out: list[int | None] = []
    stack: list[int] = []  # indexes of the definitions open at this point, outermost first
    for i, s in enumerate(symbols):
        while stack and symbols[stack[-1]]["depth"] >= s["depth"]:
            stack.pop()
        out.append(stack[-1] if stack and s["depth"] > 0 else None)
        stack.append(i)
    return out


def render(header: str, symbols: list[dict], order: list[int], limit: int):
    """(text, listed indexes, cut) of the outline within `limit` tokens: the most lines, by
    priority `order`, that fit together with the definitions they sit in (shown in file
    order); a cut outline ends with the cut marker. None when not one line fits."""
    lines: dict[int, str] = {}  # each line cut once, only those a probe shows
    up = enclosing(symbols)

    def line(i: int) -> str:
        if i not in lines:
            lines[i] = short_line(symbols[i])
        return lines[i]

    def text_of(k: int) -> tuple[str, list[int]]:
        shown: set[int] = set()
        for i in order[:k]:
            at: int | None = i
            while at is not None and at not in shown:
                shown.add(at)
                at = up[at]
        listed = sorted(shown)
        body = [header, *(line(i) for i in listed)]
        if len(listed) < len(symbols):
            body.append(navigation.INDENT + navigation.CUT_MARKER)
        return "\n".join(body), listed

    def fits(k: int) -> bool:
        return tokens.estimate_tokens(text_of(k)[0]) <= limit

    # every line costs at least a token (its line break): no more than `limit` lines fit
    k = packing.longest_prefix(min(len(order), limit), fits)
    while k > 0:
        text, listed = text_of(k)
        if tokens.estimate_tokens(text) <= limit:
            return text, listed, len(listed) < len(symbols)
        k -= 1
    return None


def header_line(item: dict, count: int, more: bool = False) -> str:
    """'# repo:path (outline: N definitions not packed) @ blob 1a2b3c4d5e6f': the file's
    citation (citations.py), as packed items are headed (packing.format_header); 'N+' when
    the file has more definitions than were read (READ_PER_FILE)."""
    where = packing.one_line(item["path"])
    if item.get("repository"):
        where = citation(packing.one_line(item["repository"]), where)
    blob = item.get("blob_sha")
    at = f" @ blob {packing.one_line(blob)[: packing.BLOB_SHA_CHARS]}" if blob else ""
    plural = "" if count == 1 and not more else "s"
    many = f"{count}+" if more else str(count)
    return f"# {where} ({OUTLINE}: {many} definition{plural} not packed){at}"


def reason(count: int, listed: int, cut: bool, more: bool = False) -> str:
    """why.outline: why the outline was packed and what it lists."""
    what = f"{count}{'+' if more else ''} of this file's definitions are not packed"
    if not cut:
        return f"{what}: their signatures, so any can be asked for (find_symbol)"
    return (
        f"{what}: the signatures of {listed} the ranking chose first (find_symbol reads "
        "one; file_outline lists them all)"
    )


def definitions(entries: list[dict]) -> int:
    """How many of an outline's entries are definitions (not the file's header)."""
    return sum(1 for s in entries if s["kind"] != standins.HEADER)


def outline_item(
    best: dict, symbols: list[dict], shown: list[int], text: str, cut: bool, more: bool
) -> dict:
    """The outline item of best's file: `symbols` its definitions not packed whole, `shown`
    those listed in `text`; `more`: the file has more than were read."""
    listed = [symbols[i] for i in shown]
    count = definitions(symbols)
    return {
        **best,
        **NOT_INHERITED,
        "key": ("o", best["repository_id"], best["path"]),
        "id": f"o:{best['repository_id']}:{best['path']}",
        "kind": OUTLINE,
        "start_line": min(s["start_line"] for s in listed),
        "end_line": max(s["end_line"] for s in listed),
        # just after its file's best candidate
        "score": best["score"] * (1 - 1e-6),
        "decision": packing.KEPT,
        "packed": True,
        "tokens": tokens.estimate_tokens(text),
        "truncated": cut or more,
        "packed_text": text,
        "outline": reason(count, definitions(listed), cut or more, more),
        "outlined": [
            {
                "name": s["qualified_name"],
                "kind": s["kind"],
                "start_line": s["start_line"],
                "end_line": s["end_line"],
            }
            for s in listed
        ],
    }


def outlines(
    req: Request,
    files: list[dict],
    symbols: dict[str, list[dict]],
    packed: list[dict],
    caps: dict[tuple, int],
    wanted: dict[tuple, dict],
    near: dict[str, dict],
    shared: bool = True,
) -> list[dict]:
    """The outline items of `files` (best first) against what `packed` holds, each within
    its cap and together within what the packed bodies leave of the budget; `shared`: each
    within an even share of what is left too, so that a long outline does not starve the
    files after it (what one does not use goes to the next)."""
    remaining = req.budget - sum(i["tokens"] for i in packed if i["packed"])
    spans = _packed_spans(packed)
    out: list[dict] = []
    for n, best in enumerate(files):
        where = _where(best)
        cap = min(remaining, caps.get(where, 0))
        if shared:
            cap = min(cap, remaining // (len(files) - n))
        if cap <= 0:
            continue
        rows = symbols.get(best["blob_sha"], [])
        nested = listable(navigation.map_symbols(best["path"], navigation.nest(rows)))
        header = header_entry(nested) if nested else None
        defs = left_out(([header] if header else []) + nested, spans.get(where, []))
        if not definitions(defs):
            continue
        more = len(rows) >= READ_PER_FILE
        order = chosen_first(
            defs, wanted.get(where, {}), req.terms, req.weights, near.get(best["blob_sha"])
        )
        found = render(header_line(best, definitions(defs), more), defs, order, cap)
        if found is None:
            continue
        text, shown, cut = found
        item = outline_item(best, defs, shown, text, cut, more)
        remaining -= item["tokens"]
        out.append(item)
    return out


def nearness(plpy, req: Request, symbols: dict[str, list[dict]]) -> dict[str, dict]:
    """How near each definition read is to the question (cosine similarity of their
    vectors), by blob and span; empty when the question has no vector."""
    asked = req.question_vector
    ids = [r["id"] for rows in symbols.values() for r in rows]
    if not ids or not asked.get("vector"):
        return {}
    found = plans.run(
        plpy,
        plans.load("outline_nearness"),
        NEARNESS_TYPES,
        [req.tenant, ids, asked["vector"], asked["model"]],
    )
    similarity = {r["id"]: r["similarity"] for r in found}
    return {
        sha: {
            (r["start_line"], r["end_line"]): similarity[r["id"]]
            for r in rows
            if r["id"] in similarity
        }
        for sha, rows in symbols.items()
    }


def fill_with_outlines(plpy, req: Request, ranked: list[dict], fill_bodies) -> list[dict]:
    """The packed bodies (fill_bodies(budget) -> every candidate with its decision) and the
    outline items, within req.budget together. `ranked`: every candidate, best first."""
    budget = req.budget
    reserve = int(budget * OUTLINE_SHARE)
    packed = fill_bodies(budget - reserve)
    with req.times.stage(OUTLINE):
        files = files_to_outline(ranked, packed)
        shas = [f["blob_sha"] for f in files]
        symbols = navigation.blob_symbols(plpy, req.tenant, shas, READ_PER_FILE) if shas else {}
        near = nearness(plpy, req, symbols)
        wanted: dict[tuple, dict] = {}  # the spans of each file's candidates, their scores
        for item in ranked:
            if item.get("blob_sha") and item.get("kind") not in ("file", standins.HEADER):
                span = (item["start_line"], item["end_line"])
                found = wanted.setdefault(_where(item), {})
                found[span] = max(found.get(span, 0.0), item["score"])
        per_file = max(1, int(budget * FILE_SHARE))
        caps = dict.fromkeys(map(_where, files), per_file)
        first = outlines(req, files, symbols, packed, caps, wanted, near)
    spent = sum(o["tokens"] for o in first)
    if spent >= reserve:
        return packed + first
    # what the outlines left goes back to the bodies; each outline is then cut again to the
    # definitions still left out, in no more tokens than it took
    packed = fill_bodies(budget - spent)
    with req.times.stage(OUTLINE):
        caps = {_where(o): o["tokens"] for o in first}
        files = [f for f in files if _where(f) in caps]
        return packed + outlines(req, files, symbols, packed, caps, wanted, near, shared=False)
