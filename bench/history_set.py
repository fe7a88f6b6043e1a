"""A query set from a repository's own history, for any repository with one (no curated set
needed): each question is a commit's message, asked at the commit's parent, and its gold is the
definitions the commit changed (loader/codesift/history.py: code files only, innermost
definitions). The output has swebench-dev.json's shape, so bench/eval.py and
bench/pack_misses.py read it as they read that set:

    .venv/bin/python bench/history_set.py --repo-path /tmp/xarray --repository pydata/xarray \\
        --count 30 --out /tmp/history-xarray.json
    .venv/bin/python bench/eval.py --queries /tmp/history-xarray.json \\
        --repo-path xarray=/tmp/xarray --tenant 'history-{repository}' --arms lexical,pack_lexical

Ask a repository's history in a tenant of its own (--tenant): its questions index a ref per
commit, and BM25's statistics are per tenant, so in the tenant of a curated set of the same
repository they would change that set's answers.

A commit qualifies when it changed definitions in at most --max-files code files and its
message, trailers dropped, has at least --min-chars characters. The newest qualifying
commits before --head are taken, every --stride-th of them (commits far apart index as refs
that share little, so fewer asked at nearby commits skew the set less). A commit message
describes its change more plainly than a bug report does: this set confirms a change
measured on the bug reports, it does not replace them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "plpython"))

from codesift import git, history  # noqa: E402
from codesift_db.pipeline import question as reading  # noqa: E402


def qualifying(
    root: Path,
    head: str,
    count: int,
    stride: int,
    max_files: int,
    min_chars: int,
    tracebacks: bool = False,
):
    """(commit, question, gold) of the newest qualifying commits before `head`, newest first;
    `tracebacks`: only messages holding a traceback (a frame question.py reads)."""
    taken, seen = [], 0
    for c in history.commits_before(root, head, history.MAX_LIMIT):
        question = history.question_of(c.message)
        if len(question) < min_chars:
            continue
        if tracebacks and not reading.read(question).frames:
            continue
        gold = history.gold_of(root, c.sha)
        if not gold or len({g["path"] for g in gold}) > max_files:
            continue
        seen += 1
        if (seen - 1) % stride == 0:
            taken.append((c, question, gold))
        if len(taken) == count:
            break
    return taken


def query_of(repository: str, root: Path, commit, question: str, gold: list[dict]) -> dict:
    parent = git._git(root, "rev-parse", f"{commit.sha}^").decode().strip()
    spans: dict[str, list[str]] = {}
    for g in gold:
        names = spans.setdefault(g["path"], [])
        if g["symbol"] not in names:
            names.append(g["symbol"])
    return {
        "id": f"{repository.split('/')[-1]}-{commit.sha[:10]}",
        "repository": repository,
        "commit": parent,
        "kind": "history",
        "query": question,
        "gold_files": sorted(spans),
        "gold_spans": spans,
        "fix_commit": commit.sha,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo-path", required=True, type=Path, help="a clone with its history")
    ap.add_argument("--repository", required=True, help="owner/name, as the set names it")
    ap.add_argument("--head", default="HEAD", help="questions come from commits before this")
    ap.add_argument("--count", type=int, default=30, help="questions (default 30)")
    ap.add_argument("--stride", type=int, default=1, help="take every Nth qualifying commit")
    ap.add_argument("--max-files", type=int, default=3, help="code files changed, at most")
    ap.add_argument("--min-chars", type=int, default=40, help="message length, at least")
    ap.add_argument(
        "--tracebacks",
        action="store_true",
        help="only messages holding a traceback (a set of bug reports with one)",
    )
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    if not 1 <= args.count <= 1000 or args.stride < 1 or args.max_files < 1:
        ap.error("--count is 1 to 1000; --stride and --max-files at least 1")
    root = args.repo_path.resolve()
    head = git._git(root, "rev-parse", "--verify", f"{args.head}^{{commit}}").decode().strip()
    found = qualifying(
        root, head, args.count, args.stride, args.max_files, args.min_chars, args.tracebacks
    )
    queries = [query_of(args.repository, root, *f) for f in found]
    args.out.write_text(
        json.dumps(
            {
                "name": f"history-{args.repository.split('/')[-1]}",
                "about": (
                    f"{len(queries)} commits of {args.repository} before {head[:12]}: the "
                    "message asked at the parent; gold = the definitions the commit changed "
                    "(bench/history_set.py)"
                ),
                "queries": queries,
            },
            indent=1,
        )
    )
    print(f"{len(queries)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
