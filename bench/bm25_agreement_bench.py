"""How close the bounded BM25 legs come to exhaustive BM25 on a real corpus (prints only).

    .venv/bin/python bench/bm25_agreement_bench.py [--rebuild] [--db codesift_bench_corpus]

The retrieval bench scales by replicating one repository, so every document has a hundred
identical copies and the approximation of the BM25 legs cannot be judged there. This bench
uses real code instead: the first run (or --rebuild) downloads the source distributions of
Django and SymPy from PyPI (about 110,000 symbols, 6,600 files; --packages names others,
--wheels takes their wheels), commits them to a git repository in a temp folder and indexes
it without embeddings (lexical legs only need the postings) into --db, which later runs
reuse. --add-packages grows a built corpus without rebuilding it: those packages become
another repository (--add-repo) of the same tenant, indexed once, and the questions then ask
the whole tenant (every repository of it in scope, as one scope of a million symbols).

For each question (30 about Django and SymPy, or --questions FILE with one per line), the top
20 of bm25_symbols and bm25_files at each --depths value (the setting codesift.bm25_depth:
postings read per term before exact rescoring; `default` leaves it unset and prints the depth
the engine then reads for the corpus) are compared with exhaustive BM25 (every posting of
every query term summed): mean top-20 overlap, the score share (the exact score sum of the
leg's top 20 over the exhaustive top 20's: near copies score alike, so a low overlap with a
share near 1 misses only near ties), how often the first result is the same, and the p50
latency of the leg and of exhaustive scoring. --rough-ranks DEPTH also says where the
exhaustive top 20 stand in the order the symbol leg ranks its candidates by before exact
scoring (each term's best DEPTH postings summed as idf * impact): those past the candidates
the leg scores exactly are the ones it can miss.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import benchdb
from codesift.db import current_dsn
from question_sets import parser

SDISTS = ["django==5.1.4", "sympy==1.13.3"]
QUESTIONS = [
    "how are csrf tokens validated",
    "migration autodetector detects renamed fields",
    "template filter escapes html",
    "integrate a rational function",
    "simplify trigonometric expression",
    "queryset prefetch related objects",
    "password hashing pbkdf2 iterations",
    "session middleware cookie expiry",
    "url resolver reverse a view name with arguments",
    "matrix determinant computation",
    "solve polynomial equation roots",
    "lazy translation gettext",
    "model field validation error messages",
    "form widget renders html attributes",
    "cache backend timeout",
    "sql compiler group by clause",
    "latex printing of expressions",
    "series expansion around a point",
    "file upload handler temporary file",
    "email message with attachments",
    "paginator page range",
    "signal receivers connected to a sender",
    "groebner basis computation",
    "limit of an expression at infinity",
    "admin changelist filters",
    "json field lookups",
    "timezone aware datetime conversion",
    "static files storage manifest hashing",
    "differential equation solver",
    "prime factorization of integers",
]

# every posting of every term summed, each term's idf times its weight (none: 1), live in
# the ref (under path prefix p, if any): what a bounded leg approximates
# (bm25_versions_bench.py uses them too)
EXHAUSTIVE = {
    "symbol": """
with w as (select * from unnest(%(terms)s::text[], %(weights)s::float8[]) as w (term, weight)),
idf as (
    select i.term, i.idf * coalesce(w.weight, 1) as idf, i.avgdl
    from codesift._bm25_idf(%(t)s, 'symbol', %(terms)s) as i left join w on w.term = i.term
),
scored as (
    select p.symbol_id, sum(idf.idf * codesift.bm25_weight(p.tf, p.dl, idf.avgdl)) as score
    from idf join codesift.symbol_terms p on p.tenant_id = %(t)s and p.term = idf.term
    group by p.symbol_id
)
select scored.symbol_id, scored.score from scored
where exists (select 1 from codesift.code_symbols s join codesift.files f
    on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live
    and f.repository_id = any(%(r)s) and starts_with(f.path, coalesce(%(p)s, ''))
    where s.id = scored.symbol_id)
order by scored.score desc, scored.symbol_id
limit 20
""",
    "file": """
with w as (select * from unnest(%(terms)s::text[], %(weights)s::float8[]) as w (term, weight)),
idf as (
    select i.term, i.idf * coalesce(w.weight, 1) as idf, i.avgdl
    from codesift._bm25_idf(%(t)s, 'file', %(terms)s) as i left join w on w.term = i.term
)
select f.path, sum(idf.idf * codesift.bm25_weight(p.tf, p.dl, idf.avgdl)) as score
from idf join codesift.blob_terms p on p.tenant_id = %(t)s and p.term = idf.term
join codesift.files f on f.tenant_id = p.tenant_id and f.blob_sha = p.blob_sha and f.live
    and f.repository_id = any(%(r)s) and starts_with(f.path, coalesce(%(p)s, ''))
group by f.path
order by score desc, f.path
limit 20
""",
}
LEGS = {
    "symbol": "select symbol_id, score from codesift._bm25_symbols(%(t)s, %(terms)s,"
    " %(r)s::bigint[], null, null, null, 50, 1.2, 0.75) limit 20",
    "file": "select path, score from codesift._bm25_files(%(t)s, %(terms)s,"
    " %(r)s::bigint[], null, null, 40, 1.2, 0.75) limit 20",
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def download(specs: list[str], folder: Path, wheels: bool) -> None:
    """Each package of `specs` from PyPI, one pip call each (so that two versions of one
    project may be asked for): its sdist, or with `wheels` its wheel for CPython 3.12 on
    x86-64 Linux (the code inside is the same; no build, no Python version check)."""
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder)]
    if wheels:
        pip += ["--only-binary", ":all:", "--python-version", "3.12"]
        pip += ["--platform", "manylinux_2_17_x86_64", "--platform", "any"]
    else:
        pip += ["--no-binary", ":all:"]
    for spec in specs:
        subprocess.run([*pip, spec], check=True)


def unpack(archive: Path, tree: Path) -> None:
    """An sdist (tar) or a wheel (zip) into a folder of its own under `tree`."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            z.extractall(tree / archive.stem)
    else:
        subprocess.run(["tar", "xzf", str(archive), "-C", str(tree)], check=True)


def commit_tree(tree: Path, home: Path) -> None:
    """Make the folder `tree` a git repository of one commit holding all its files (git's
    settings read from `home`, an empty folder: none of the user's)."""
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    env |= {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "corpus"]):
        subprocess.run(["git", *args], cwd=tree, env=env, check=True)


def build(dsn: str, db: str, repo: str, tenant: str, specs: list[str], wheels: bool) -> None:
    """Fresh database with the packages `specs` indexed as one repository (no embeddings)."""
    benchdb.create(db, server_dsn=dsn)
    benchdb.migrate(db, dsn)
    add(dsn, db, repo, tenant, specs, wheels)


def add(dsn: str, db: str, repo: str, tenant: str, specs: list[str], wheels: bool) -> None:
    """The packages `specs` indexed as the repository `repo` of `tenant` (no embeddings) in
    the migrated database `db`, beside what it holds."""
    from codesift.indexer import index_repository

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log(f"downloading {', '.join(specs)} from PyPI ({'wheels' if wheels else 'sdists'})")
        download(specs, work / "archives", wheels)
        tree = work / "corpus"
        tree.mkdir()
        for archive in sorted((work / "archives").iterdir()):
            unpack(archive, tree)
        commit_tree(tree, work)
        with benchdb.connect(db, dsn) as conn:
            log(f"indexing {repo} (no embeddings); a few minutes per 100,000 symbols")
            t0 = time.perf_counter()
            s = index_repository(conn, tree, name=repo, tenant=tenant, embed=False)
            took = time.perf_counter() - t0
            log(f"indexed {s.files} files, {s.new_symbols} symbols in {took:.0f} s")
        with benchdb.connect(db, dsn, autocommit=True) as conn:
            conn.execute("vacuum analyze")


def corpus_indexed(dsn: str, db: str, tenant: str, repo: str) -> bool:
    if not benchdb.exists(db, dsn):
        return False
    with benchdb.connect(db, dsn) as c:
        if c.execute("select to_regclass('codesift.repositories')").fetchone()[0] is None:
            return False
        return bool(
            c.execute(
                "select 1 from codesift.repositories r join codesift.tenants t"
                " on t.id = r.tenant_id where t.name = %s and r.name = %s"
                " and r.indexed_commit is not null",
                (tenant, repo),
            ).fetchone()
        )


# the symbol leg's first step at a fixed depth (sql/idempotent/003-lexical.sql, the
# `summed` CTE): each term's best postings in impact order, summed as idf * impact
ROUGH = """
with idf as (
    select i.term, i.idf, 0.1 * max(i.idf) over () / nullif(i.idf, 0) as least_impact
    from codesift._bm25_idf(%(t)s, 'symbol', %(terms)s) as i
)
select p.symbol_id
from idf cross join lateral (
    select x.symbol_id, x.impact from codesift.symbol_terms as x
    where x.tenant_id = %(t)s and x.term = idf.term and x.impact >= idf.least_impact
    order by x.impact desc
    limit %(depth)s
) as p
group by p.symbol_id
order by sum(idf.idf * p.impact) desc, p.symbol_id
"""
ROUGH_RANKS = ((100, "1-100"), (200, "101-200"), (400, "201-400"), (800, "401-800"))


def rough_ranks(conn, tenant: int, repos: list[int], questions: list[str], depth: int) -> None:
    """Where each question's exhaustive top 20 stand in the symbol leg's rough order."""
    counts = dict.fromkeys([label for _, label in ROUGH_RANKS] + ["> 800", "not read"], 0)
    for q in questions:
        terms = conn.execute("select codesift._query_terms(%s)", (q,)).fetchone()[0]
        params = {"t": tenant, "r": repos, "terms": terms, "weights": None, "p": None}
        exact = conn.execute(EXHAUSTIVE["symbol"], params).fetchall()
        order = conn.execute(ROUGH, {**params, "depth": depth}).fetchall()
        rank = {symbol_id: i + 1 for i, (symbol_id,) in enumerate(order)}
        for symbol_id, _ in exact:
            at = rank.get(symbol_id)
            label = next((lb for cut, lb in ROUGH_RANKS if at is not None and at <= cut), None)
            counts[label or ("> 800" if at else "not read")] += 1
    total = sum(counts.values())
    print(f"exhaustive top 20 by rough rank at {depth:,} postings a term ({total} rows):")
    for label, n in counts.items():
        print(f"  {label:>9} {n:5d} {n / max(total, 1):7.3f}")


def _depth_label(conn, tenant: int, tier: str, depth: str) -> str:
    """The depth as set, or `default` with the depth the engine reads for the tier, asked of
    the legs' own rule (a whole-tenant scope, up to 8 terms)."""
    if depth != "default":
        return f"{int(depth):,}"
    reads = conn.execute(
        "select codesift._bm25_tier_depth(%s, %s, 1, 0)", (tenant, tier)
    ).fetchone()[0]
    return f"={reads:,}"


def measure(conn, tenant: int, repos: list[int], questions: list[str], depths: list[str]) -> None:
    conn.execute("set jit = off")
    print(
        f"{'tier':7} {'depth':>10} {'top-20 overlap':>15} {'score share':>12}"
        f" {'same first':>11} {'p50 ms':>8}"
    )
    for tier in ("symbol", "file"):
        cases, exhaustive_ms = [], []
        for q in questions:
            terms = conn.execute("select codesift._query_terms(%s)", (q,)).fetchone()[0]
            params = {"t": tenant, "r": repos, "terms": terms, "weights": None, "p": None}
            t0 = time.perf_counter()
            exact = conn.execute(EXHAUSTIVE[tier], params).fetchall()
            exhaustive_ms.append((time.perf_counter() - t0) * 1000)
            cases.append((params, exact))
        for depth in depths:
            # `default`: unset, the depth the engine picks for the tier's size
            conn.execute(
                "reset codesift.bm25_depth"
                if depth == "default"
                else f"set codesift.bm25_depth = {int(depth)}"
            )
            overlap, share, first, ms = [], [], [], []
            for params, exact in cases:
                conn.execute(LEGS[tier], params).fetchall()  # warm
                t0 = time.perf_counter()
                got = conn.execute(LEGS[tier], params).fetchall()
                ms.append((time.perf_counter() - t0) * 1000)
                if exact:
                    ids = [r[0] for r in exact]
                    overlap.append(len(set(ids) & {r[0] for r in got}) / len(exact))
                    # near copies score alike: how much of the best score sum was found
                    share.append(sum(r[1] for r in got) / sum(r[1] for r in exact))
                    first.append(bool(got) and got[0][0] == ids[0])
            print(
                f"{tier:7} {_depth_label(conn, tenant, tier, depth):>10}"
                f" {statistics.mean(overlap):>15.3f} {statistics.mean(share):>12.3f}"
                f" {statistics.mean(first):>11.2f} {statistics.median(ms):>8.1f}"
            )
        conn.execute("reset codesift.bm25_depth")
        exhaustive = statistics.median(exhaustive_ms)
        print(f"{tier:7} {'exhaustive':>10} {1:>15.3f} {1:>12.3f} {1:>11.2f} {exhaustive:>8.1f}")


def parse_depths(text: str) -> list[str]:
    depths = [d.strip() for d in text.split(",") if d.strip()]
    for d in depths:
        if d != "default" and not d.isdigit():
            raise SystemExit(f"--depths: {d!r} is neither a number of postings nor `default`")
    return depths


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--db", default="codesift_bench_corpus", help="database with the corpus")
    ap.add_argument("--rebuild", action="store_true", help="rebuild --db from PyPI packages")
    ap.add_argument(
        "--packages",
        default=",".join(SDISTS),
        help="pip requirement specs, comma-separated, indexed as one repository on a build",
    )
    ap.add_argument(
        "--wheels",
        action="store_true",
        help="download wheels instead of sdists (packages whose sdists need a build)",
    )
    ap.add_argument("--repo", default="corpus", help="repository name")
    ap.add_argument("--tenant", default="corpus", help="tenant name")
    ap.add_argument(
        "--depths",
        default="250,500,1000,2000,default",
        help="codesift.bm25_depth values; `default` leaves it unset (the engine's own)",
    )
    ap.add_argument("--questions", type=Path, help="one question per line (default: built-in)")
    ap.add_argument(
        "--add-packages",
        help="pip requirement specs indexed as another repository of the tenant (--add-repo), "
        "to grow the corpus without rebuilding it; the questions then ask the whole tenant",
    )
    ap.add_argument("--add-repo", default="more", help="the repository --add-packages builds")
    ap.add_argument(
        "--rough-ranks",
        type=int,
        metavar="DEPTH",
        help="also where the exhaustive top 20 stand in the symbol leg's order before exact"
        " scoring, at DEPTH postings a term",
    )
    args = ap.parse_args()
    if args.rough_ranks is not None and args.rough_ranks < 1:
        ap.error(f"--rough-ranks: {args.rough_ranks} is not a number of postings (1 or more)")
    benchdb.check_name(args.db)
    dsn = current_dsn()
    if args.rebuild or not corpus_indexed(dsn, args.db, args.tenant, args.repo):
        specs = [p.strip() for p in args.packages.split(",") if p.strip()]
        build(dsn, args.db, args.repo, args.tenant, specs, args.wheels)
    else:
        # measure the engine of this checkout, not the one that built it
        benchdb.migrate(args.db, dsn)
    if args.add_packages and not corpus_indexed(dsn, args.db, args.tenant, args.add_repo):
        specs = [p.strip() for p in args.add_packages.split(",") if p.strip()]
        add(dsn, args.db, args.add_repo, args.tenant, specs, args.wheels)
    questions = (
        [q.strip() for q in args.questions.read_text().splitlines() if q.strip()]
        if args.questions
        else QUESTIONS
    )
    with benchdb.connect(args.db, dsn, autocommit=True) as conn:
        tenant, repos, symbols = conn.execute(
            "select t.id, array_agg(r.id order by r.id), (select count(*)"
            " from codesift.code_symbols where tenant_id = t.id) from codesift.tenants t"
            " join codesift.repositories r on r.tenant_id = t.id where t.name = %s"
            " group by t.id",
            (args.tenant,),
        ).fetchone()
        print(
            f"bm25 agreement: {args.db}, {symbols:,} symbols in {len(repos)} repositories,"
            f" {len(questions)} questions"
        )
        measure(conn, tenant, repos, questions, parse_depths(args.depths))
        if args.rough_ranks:
            rough_ranks(conn, tenant, repos, questions, args.rough_ranks)


if __name__ == "__main__":
    main()
