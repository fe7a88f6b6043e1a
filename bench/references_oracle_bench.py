"""find_references checked against an oracle that is not our own extraction (prints only,
never asserts).

    .venv/bin/python bench/references_oracle_bench.py jedi CHECKOUT... [--sample 200]
        [--seed 30] [--cache FILE] [--reuse] [--keep] [--misses]
    .venv/bin/python bench/references_oracle_bench.py labelled LABELS.json CHECKOUT
        [--reuse] [--keep]

Both index the checkouts' HEAD with the real loader (no embeddings) into codesift_bench_oracle
on CODESIFT_DSN's server, tenant 'bench', each repository under its folder's name, and call
codesift.find_references as the application role with the definition cited by the line of
its name ('repo:path:LINE', the innermost definition holding it). A use is a (path, line):
several uses of the name on one line are one.

jedi: Python, with Jedi's Script.get_references(scope='project') as the oracle (pip
install jedi, pinned in requirements/dev.txt). The definitions are drawn at random (seeded)
from every function, method and class of the live .py files of all the checkouts together
(code_symbols, the first part of each). For each, Jedi is asked at its name, in a copy of
the checkout at HEAD, with the checkout and its src/ (if any) on the project's path. Jedi's
answer, less the definition's own name and anything outside the live files, is compared
with ours: precision and recall of the resolved rows, and of all rows (resolved +
by_name). Treatment: uses in strings, comments and docstrings are no uses on either side
(both read the syntax tree's names); the names of import statements (`from m import f`,
`from .app import Flask as Flask` in a package's __init__.py, a re-export) are uses on both
sides; a use Jedi reaches through a re-export counts like any other. Every miss (a Jedi use
ours does not resolve) and every extra resolved row (no Jedi use there) is put in a
category from the stored reference at that line (what qualifies the name, whether it is
stored at all) and printed with its line with --misses. --cache keeps Jedi's answers
(JSON) so that a rerun after a resolution change only asks the database. --exclude leaves
a drawn definition out, for one whose oracle answer is known to be incomplete (Jedi lists
a pytest fixture's parameter in the first test function of each module only): the results
give the figures with and without it.

labelled: another language, against a hand-verified sample (bench/queries/references-*.json):
for each definition ({"repo", "path", "line", "name", "uses": [[path, line], ...]}) the
uses a person established by reading the code. The procedure used for
bench/queries/references-gin.json (Go, gin-gonic/gin at the commit the file names):
  1. 50 definitions drawn at random (seed 30) from gin's functions, methods and types,
     the same query as the jedi mode, then each read in place.
  2. `git grep -nw NAME` over the checkout's .go files lists every line naming it.
  3. Each line is read and kept when the name there denotes that definition: a bare use in
     the same package (folder) or `gin.NAME` / an aliased import of its package elsewhere; a
     method or field when the receiver's static type (read from the declaration of the
     variable, parameter or field, following embedded structs) is the definition's type
     or embeds it; a type in a declaration, conversion, composite literal or assertion.
     Dropped: a different type's member of the same name, a local variable or parameter
     of the name, strings and comments, and the definition's own name.
  4. The line of the definition's name is left out of its uses, as in the jedi mode.
Precision and recall of the resolved rows and of all rows, and the misses with their lines.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdb  # noqa: E402
import psycopg  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402

DB = "codesift_bench_oracle"  # + _jedi or _labelled: each mode its own
TENANT = "bench"
KINDS = ("function", "method", "class", "struct", "interface", "type")


def index_all(checkouts: list[Path], reuse: bool) -> None:
    global DB
    DB = f"codesift_bench_oracle_{'_'.join(c.name for c in checkouts)}"
    if reuse and benchdb.exists(DB):
        return
    benchdb.create(DB)
    benchdb.migrate(DB)
    for checkout in checkouts:
        with benchdb.connect(DB) as conn:
            index_repository(
                conn, checkout, name=checkout.name, tenant=TENANT, embed=False, show_progress=False
            )


def app_connection() -> psycopg.Connection:
    with benchdb.connect(DB) as owner:
        row = owner.execute("select id from codesift.tenants where name = %s", (TENANT,)).fetchone()
    assert row is not None
    conn = psycopg.connect(benchdb.dsn(DB), autocommit=True, user="codesift_app")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    conn.add_notice_handler(lambda n: None)
    return conn


def all_definitions(conn, suffix: str) -> list[tuple[str, str, str, str, int]]:
    """(repo, path, qualified name, name, start line) of every definition of the live files
    whose path ends with suffix, in a stable order."""
    return [
        tuple(r)
        for r in conn.execute(
            "select distinct r.name, f.path, s.qualified_name, s.name, s.start_line"
            " from codesift.code_symbols s"
            " join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha"
            " join codesift.repositories r on r.id = f.repository_id"
            " where f.live and s.kind = any(%s) and s.part <= 1 and f.path like %s"
            " order by 1, 2, 5, 3",
            (list(KINDS), "%" + suffix),
        ).fetchall()
    ]


def name_line(lines: list[str], short: str, start: int, pattern: str) -> tuple[int, int] | None:
    """(1-based line, column) of the definition's name at or after its start line."""
    found = re.compile(pattern.format(re.escape(short)))
    for n in range(start - 1, min(len(lines), start + 40)):
        m = found.search(lines[n])
        if m:
            return n + 1, m.start(1)
    return None


def ours(conn, repo: str, path: str, line: int) -> list[tuple[str, str, int, str, str | None]]:
    """find_references of the definition whose name is at repo:path:line:
    (repo, path, line, resolution, qualifier)."""
    return [
        tuple(r)
        for r in conn.execute(
            "select repository, path, line, resolution, qualifier"
            " from codesift.find_references(%s, repo => %s, max_rows => 1000)",
            (f"{repo}:{path}:{line}", repo),
        ).fetchall()
    ]


def stored(owner, repo: str, path: str, line: int, name: str) -> list[tuple]:
    """The stored references of name at repo:path:line: (qualifier, import_line, is_call)."""
    return owner.execute(
        "select c.qualifier, c.import_line, c.is_call from codesift.code_references c"
        " join codesift.files f on f.tenant_id = c.tenant_id and f.blob_sha = c.blob_sha"
        " join codesift.repositories r on r.id = f.repository_id and r.name = %s"
        " where f.live and f.path = %s and c.line = %s and c.name = %s",
        (repo, path, line, name),
    ).fetchall()


def category(rows: list[tuple], text: str, name: str) -> str:
    """Why a use is where it is, from what is stored at its line."""
    if not rows:
        if re.search(rf"\bimport\b.*\b{re.escape(name)}\b", text):
            return "not stored: an import line"
        return "not stored"
    qualifier, import_line, _call = rows[0]
    if qualifier is None:
        kind = "bare name" + (" bound by an import" if import_line is not None else "")
    elif qualifier in ("self", "cls", "this"):
        kind = f"member of {qualifier}"
    elif qualifier == "?":
        kind = "member of an expression"
    elif import_line is not None:
        kind = "member of an imported name"
    else:
        kind = "member of a local name"
    return kind


def checkout_copies(checkouts: list[Path], tmp: Path) -> dict[str, Path]:
    """repo -> a copy of its HEAD (what was indexed, not the work tree)."""
    out = {}
    for checkout in checkouts:
        data = subprocess.run(
            ["git", "archive", "--format=tar", "HEAD"],
            cwd=checkout,
            capture_output=True,
            check=True,
        ).stdout
        root = tmp / checkout.name
        root.mkdir()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(root, filter="data")
        out[checkout.name] = root
    return out


# what Jedi's answer holds that is no use: another definition of the name (a redefinition
# in the same scope, a property's setter, `name = other.name`), by the parso node defining it
KEPT_DEFINITIONS = frozenset({"import_from", "import_name", "param"})


def jedi_uses(root: Path, path: str, at: tuple[int, int], live: set[str]) -> list[list]:
    """[[path, line, kind]]: kind 'use', or the node type of a definition Jedi counts."""
    import jedi

    extra = [str(root / "src")] if (root / "src").is_dir() else []
    project = jedi.Project(root, added_sys_path=extra)
    source = (root / path).read_text(encoding="utf-8", errors="replace")
    script = jedi.Script(source, path=root / path, project=project)
    found = {}
    for ref in script.get_references(*at, scope="project", include_builtins=False):
        if ref.module_path is None or ref.line is None:
            continue
        try:
            rel = str(Path(ref.module_path).relative_to(root))
        except ValueError:
            continue  # outside the checkout
        if rel in live and (rel, ref.line) != (path, at[0]):
            kind = "use"
            if ref.is_definition():
                tree_name = ref._name.tree_name  # noqa: SLF001 (Jedi has no public API for it)
                node = tree_name.get_definition(import_name_always=True) if tree_name else None
                kind = node.type if node is not None else "definition"
            # a line with a use and a definition of the name is a use
            found[rel, ref.line] = "use" if "use" in (found.get((rel, ref.line)), kind) else kind
    return sorted([p, n, k] for (p, n), k in found.items())


class Tally:
    def __init__(self) -> None:
        self.counts = {"resolved": [0, 0, 0], "all": [0, 0, 0]}  # hits, ours, theirs
        self.misses: Counter[str] = Counter()
        self.extras: Counter[str] = Counter()
        self.lines: list[str] = []
        self.dropped = 0  # oracle answers that are other definitions of the name
        self.per: list[tuple[int, int, str]] = []  # (misses, extras, definition)

    def add(self, label: str, mine: set, theirs: set) -> None:
        t = self.counts[label]
        t[0] += len(mine & theirs)
        t[1] += len(mine)
        t[2] += len(theirs)

    def print(self, title: str) -> None:
        print(title)
        defs = len(self.per)
        exact = sum(1 for m, e, _ in self.per if not m and not e)
        print(f"  definitions whose resolved rows are exactly the oracle's: {exact} of {defs}")
        for label, (hits, mine, theirs) in self.counts.items():
            p = hits / mine if mine else float("nan")
            r = hits / theirs if theirs else float("nan")
            print(
                f"  {label:<9} precision {p:.3f} ({hits}/{mine})  recall {r:.3f} ({hits}/{theirs})"
            )
        if self.dropped:
            print(
                f"  left out of the oracle's answers: {self.dropped} other definitions of the name"
            )
        print(f"  misses (oracle uses ours does not resolve): {sum(self.misses.values())}")
        for what, n in self.misses.most_common():
            print(f"    {n:>4}  {what}")
        print(f"  extras (resolved rows the oracle does not have): {sum(self.extras.values())}")
        for what, n in self.extras.most_common():
            print(f"    {n:>4}  {what}")
        worst = sorted((p for p in self.per if p[0] or p[1]), key=lambda p: -(p[0] + p[1]))
        print("  the definitions with the most misses + extras:")
        for misses, extras, what in worst[:10]:
            print(f"    {misses:>4} misses {extras:>4} extras  {what}")


def compare(conn, owner, tally: Tally, repo, path, line, short, theirs, texts) -> None:
    rows = ours(conn, repo, path, line)
    mine_all = {(p, n) for r, p, n, _res, _q in rows if r == repo}
    mine_resolved = {(p, n) for r, p, n, res, _q in rows if r == repo and res == "resolved"}
    tally.add("resolved", mine_resolved, theirs)
    tally.add("all", mine_all, theirs)
    tally.per.append(
        (len(theirs - mine_resolved), len(mine_resolved - theirs), f"{repo}:{path}:{line} {short}")
    )
    for p, n in sorted(theirs - mine_resolved):
        text = texts(p, n)
        what = category(stored(owner, repo, p, n, short), text, short)
        what = ("by_name: " if (p, n) in mine_all else "left out: ") + what
        tally.misses[what] += 1
        tally.lines.append(f"    miss  {repo}:{path}:{line} {short} <- {p}:{n} [{what}] {text}")
    for p, n in sorted(mine_resolved - theirs):
        text = texts(p, n)
        what = category(stored(owner, repo, p, n, short), text, short)
        tally.extras[what] += 1
        tally.lines.append(f"    extra {repo}:{path}:{line} {short} -> {p}:{n} [{what}] {text}")


def run_jedi(args) -> None:
    import jedi

    checkouts = [c.resolve() for c in args.checkouts]
    index_all(checkouts, args.reuse)
    cache: dict[str, list] = {}
    if args.cache and args.cache.exists():
        cache = json.loads(args.cache.read_text())
    conn = app_connection()
    owner = benchdb.connect(DB, autocommit=True)
    defs = all_definitions(conn, ".py")
    picked = random.Random(args.seed).sample(defs, min(args.sample, len(defs)))
    live = {
        (r, p)
        for r, p in conn.execute(
            "select r.name, f.path from codesift.files f join codesift.repositories r"
            " on r.id = f.repository_id where f.live"
        )
    }
    tally = Tally()
    asked = 0
    with tempfile.TemporaryDirectory() as tmp:
        roots = checkout_copies(checkouts, Path(tmp))
        sources: dict[tuple[str, str], list[str]] = {}

        def lines_of(repo: str, path: str) -> list[str]:
            if (repo, path) not in sources:
                text = (roots[repo] / path).read_text(encoding="utf-8", errors="replace")
                sources[repo, path] = text.split("\n")
            return sources[repo, path]

        for repo, path, _qualified, short, start in picked:
            at = name_line(lines_of(repo, path), short, start, r"\b(?:def|class)\s+({})\b")
            if at is None:
                continue
            key = f"{repo}:{path}:{at[0]}"
            if key in args.exclude:
                continue
            if key not in cache:
                files = {p for r, p in live if r == repo}
                cache[key] = jedi_uses(roots[repo], path, at, files)
            asked += 1
            theirs = {
                (p, n) for p, n, kind in cache[key] if kind == "use" or kind in KEPT_DEFINITIONS
            }
            tally.dropped += len(cache[key]) - len(theirs)
            compare(
                conn,
                owner,
                tally,
                repo,
                path,
                at[0],
                short,
                theirs,
                lambda p, n, repo=repo: lines_of(repo, p)[n - 1].strip()[:120],
            )
    if args.cache:
        args.cache.write_text(json.dumps(cache, indent=0, sort_keys=True))
    names = ", ".join(c.name for c in checkouts)
    tally.print(
        f"find_references vs Jedi {jedi.__version__} get_references: {asked} definitions drawn"
        f" (seed {args.seed}) from {len(defs):,} in {names}, by path and line:"
    )
    if args.misses:
        print("\n".join(tally.lines))
    owner.close()
    conn.close()


def run_draw(args) -> None:
    """Draw the definitions of a hand-verified sample: each with every line `git grep -nw`
    finds its name on (the candidates a person reads and keeps or drops)."""
    checkout = args.checkout.resolve()
    index_all([checkout], args.reuse)
    conn = app_connection()
    defs = all_definitions(conn, args.suffix)
    picked = random.Random(args.seed).sample(defs, min(args.sample, len(defs)))
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.strip()
    out = []
    for repo, path, qualified, short, start in sorted(picked):
        lines = (checkout / path).read_text(encoding="utf-8", errors="replace").split("\n")
        at = name_line(lines, short, start, r"\b({})\b")
        grep = subprocess.run(
            ["git", "grep", "-nw", "--", short, f"*{args.suffix}"],
            cwd=checkout,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        candidates = []
        for g in grep:
            p, n, text = g.split(":", 2)
            if at is None or (p, int(n)) != (path, at[0]):
                candidates.append([p, int(n), text.strip()[:160]])
        out.append(
            {
                "repo": repo,
                "path": path,
                "line": at[0] if at else start,
                "name": short,
                "qualified_name": qualified,
                "candidates": candidates,
            }
        )
    doc = {"repository": checkout.name, "commit": commit, "definitions": out}
    args.out.write_text(json.dumps(doc, indent=1))
    print(f"{len(out)} definitions with {sum(len(d['candidates']) for d in out)} candidate lines")
    conn.close()


def run_labelled(args) -> None:
    checkout = args.checkout.resolve()
    labels = json.loads(args.labels.read_text())
    index_all([checkout], args.reuse)
    conn = app_connection()
    owner = benchdb.connect(DB, autocommit=True)
    repo = checkout.name
    tally = Tally()

    def text(p: str, n: int) -> str:
        lines = (checkout / p).read_text(encoding="utf-8", errors="replace").split("\n")
        return lines[n - 1].strip()[:120]

    for d in labels["definitions"]:
        theirs = {(p, n) for p, n in d["uses"]}
        compare(conn, owner, tally, repo, d["path"], d["line"], d["name"], theirs, text)
    tally.print(
        f"find_references vs {len(labels['definitions'])} hand-verified definitions of"
        f" {labels['repository']} at {labels['commit'][:8]}, by path and line:"
    )
    if args.misses:
        print("\n".join(tally.lines))
    owner.close()
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    j = sub.add_parser("jedi")
    j.add_argument("checkouts", type=Path, nargs="+")
    j.add_argument("--sample", type=int, default=200)
    j.add_argument("--seed", type=int, default=30)
    j.add_argument("--cache", type=Path, help="Jedi's answers, read and written (JSON)")
    j.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REPO:PATH:LINE",
        help="leave a drawn definition out (say why in the results)",
    )
    lab = sub.add_parser("labelled")
    lab.add_argument("labels", type=Path)
    lab.add_argument("checkout", type=Path)
    draw = sub.add_parser("draw")
    draw.add_argument("checkout", type=Path)
    draw.add_argument("out", type=Path)
    draw.add_argument("--suffix", default=".go")
    draw.add_argument("--sample", type=int, default=50)
    draw.add_argument("--seed", type=int, default=30)
    for p in (j, lab, draw):
        p.add_argument("--reuse", action="store_true", help="use the database a --keep run left")
        p.add_argument("--keep", action="store_true", help="leave the database")
        p.add_argument("--misses", action="store_true", help="print every miss and extra")
    args = ap.parse_args()
    try:
        {"jedi": run_jedi, "labelled": run_labelled, "draw": run_draw}[args.mode](args)
    finally:
        if not args.keep:
            benchdb.drop(DB)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
