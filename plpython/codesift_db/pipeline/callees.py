"""Callees: the definitions that the best candidate symbols call become candidates too. A
bug report's words match the entry point it went through; the fix is so often in a helper
that entry point calls (a merge function, a path filter), whose own text shares few of the
report's words. Calls are read from the text (a name before '(', any language), resolved to
live functions and methods by name (sql/called_symbols.sql; a function nested in another
is local to it): one in the caller's own file first; a name called bare (not as some
object's method) may also mean a function of another file, when at most AMBIGUOUS files
define it (an imported helper). Only those two are looked up: the definitions in the
callers' own files, and the top-level functions of the names called bare."""

import re
from collections import Counter
from typing import TYPE_CHECKING

from .. import plans
from ..file_kinds import file_kind
from .hydrate import hydrate, unranked
from .mentions import AMBIGUOUS

if TYPE_CHECKING:
    from .request import Request

CALLER_FILES = 3  # files whose best candidate symbols' calls are followed
SEEDS_PER_FILE = 2  # of each, its best candidate symbols
CALLEES_PER_SEED = 2  # of each, the names called most often (first called on ties)
CALL_DECAY = 0.8  # a callee scores its caller's score times this
CALLED_TYPES = ["bigint[]", "text[]", "text[]", "bigint[]", "text[]", "text[]", "bigint", "int"]
MAX_CALLS = 64  # names of each seed looked up, most called first: a bound on the lookup
# top-level functions of a name called bare that sql/called_symbols.sql reads at most: a
# name defined this often is ambiguous, whichever of its definitions the read returned
BARE_READ = 20
# a name before '(': after a '.', a method of some object (its type unknown here); after
# an '@', a decorator, which wraps the code rather than doing its work
CALL = re.compile(r"([.@]?)\s*(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]{2,})\s*\(")
NOT_CALLS = frozenset(
    "if for while elif return switch catch function func def class with and not print"
    " super isinstance len str int list dict set tuple range type getattr setattr hasattr"
    " require typeof make append".split()
)


def calls(text: str, own_name: str | None) -> list[tuple[str, bool]]:
    """(name, bare) for the MAX_CALLS names a symbol's text calls most, then first; bare:
    called by its name alone (a function), not as a method of an object."""
    own = (own_name or "").rsplit(".", 1)[-1].lower()
    found = [(name.lower(), not mark) for mark, name in CALL.findall(text or "") if mark != "@"]
    counts = Counter(c for c in found if c[0] not in NOT_CALLS and c[0] != own)
    first: dict = {}
    for i, call in enumerate(found):
        first.setdefault(call, i)
    return sorted(counts, key=lambda c: (-counts[c], first[c]))[:MAX_CALLS]


def seeds(items: dict) -> list[dict]:
    """The SEEDS_PER_FILE best symbol candidates (a large file's stand-ins among them) of
    each of the CALLER_FILES files whose best symbols score best."""
    found = [i for i in items.values() if i.get("kind") not in ("file", "header") and i.get("text")]
    found.sort(key=lambda i: -i["score"])
    per_file: dict = {}
    for item in found:
        if item["path"] not in per_file and len(per_file) == CALLER_FILES:
            break
        taken = per_file.setdefault(item["path"], [])
        if len(taken) < SEEDS_PER_FILE:
            taken.append(item)
    return [i for taken in per_file.values() for i in taken]


def callable_kind(row: dict) -> bool:
    """A method, or a function not nested in another (what a call from elsewhere reaches)."""
    return row["kind"] == "method" or (
        row["kind"] == "function" and row["qualified_name"] == row["name"]
    )


def _resolve(call: tuple[str, bool], seed: dict, rows: list[dict]) -> list[dict]:
    """Definitions a call from seed means, of the rows of its name: one in its own file;
    else, for a bare call, the functions of that name when there are few (an imported
    helper), never when BARE_READ or more define it."""
    bare = call[1]
    # code calls tests' helpers only in tests
    tests = file_kind(seed["path"]) == "test"
    fits = [
        r
        for r in rows
        if callable_kind(r)
        and r["symbol_id"] != seed["key"][1]
        and (tests or file_kind(r["path"]) != "test")
    ]
    own_file = [r for r in fits if r["path"] == seed["path"]]
    if own_file or not bare:
        return own_file[:1]
    if sum(1 for r in rows if r["kind"] == "function" and callable_kind(r)) >= BARE_READ:
        return []  # the read may have left out the one this call means
    functions = [r for r in fits if r["kind"] == "function"]
    return functions if len(functions) <= AMBIGUOUS else []


def add_callees(plpy, req: "Request", items: dict) -> None:
    """Each seed's CALLEES_PER_SEED resolvable callees join the candidates at CALL_DECAY of
    its score (a candidate already only gains that score). Feature `calls`."""
    if not req.on("calls"):
        return
    chosen = seeds(items)
    called = {id(s): calls(s["text"], s.get("symbol")) for s in chosen}
    names = sorted({name for found in called.values() for name, _ in found})
    if not names:
        return
    bare = sorted({name for found in called.values() for name, alone in found if alone})
    by_name: dict[str, list] = {}
    # its custom plan cost more to make than the statement to run (read by file either way)
    for row in plans.run_generic(
        plpy,
        plans.load("called_symbols"),
        CALLED_TYPES,
        [
            req.repo_ids,
            names,
            [s["blob_sha"] for s in chosen],
            [s["repository_id"] for s in chosen],
            [s["path"] for s in chosen],
            bare,
            req.tenant,
            BARE_READ,
        ],
    ):
        by_name.setdefault(row["name"], []).append(row)
    new: dict = {}
    for seed in chosen:
        taken = 0
        for call in called[id(seed)]:
            if taken == CALLEES_PER_SEED:
                break
            fits = _resolve(call, seed, by_name.get(call[0], []))
            if not fits:
                continue
            taken += 1
            score = seed["score"] * CALL_DECAY
            for r in fits:
                key = ("s", r["symbol_id"])
                target = items.get(key) or new.get(key)
                if target is None:
                    target = new[key] = unranked(key, 0.0, repository_id=r["repository_id"])
                if score > target["score"]:
                    target["score"] = score
                    target["called_by"] = seed.get("symbol")
    if new:
        hydrate(plpy, req, new)
        items.update(new)
