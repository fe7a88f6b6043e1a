"""The learned ranker on the SWE-bench dev repositories (issue 33): per repository, mine the
history before the oldest instance's base commit, ask each question of the newest ones
against that base commit's indexed ref (hybrid_search, ranker off), train, and report
the training set, its cost, a held-out score on the newest history questions (base order
against the ranker's, each feature group left out, and the training-set size curve), and
write the models for bench/eval.py's `ranker` engine (--ranker-models).

    .venv/bin/python bench/ranker_bench.py --dsn DSN --queries bench/queries/swebench-dev.json \\
        --repo-path requests=/path/to/requests ... --models OUT.json --cache DIR

Leakage: every training commit is checked (by SHA, with git) to be an ancestor of every
instance's base commit of its repository and none of them; an instance's fix commit comes
after its base commit (a descendant of it), so no fix commit is ever trained on. Works on a
database without the ranker's tables (the questions are mined in memory)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from codesift import history, learn  # noqa: E402
from codesift_db.ranker import features, order, train  # noqa: E402

HELD_OUT = 0.2  # the newest share of the questions, never trained on in the held-out scores


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def oldest_base(root: Path, bases: list[str]) -> str:
    """The base commit every other one descends from (the merge base of them all)."""
    out = _git(root, "merge-base", "--octopus", *bases).stdout.strip()
    if out not in bases:
        raise SystemExit(f"{root}: no base commit is an ancestor of all the others")
    return out


def check_leakage(root: Path, shas: list[str], bases: list[str]) -> int:
    """Every training commit is an ancestor of every base commit, and none of them."""
    for sha in shas:
        assert sha not in bases, sha
        for base in bases:
            if _git(root, "merge-base", "--is-ancestor", sha, base).returncode != 0:
                raise SystemExit(f"leak: {sha} is not an ancestor of base {base}")
    return len(shas)


def collect(conn, root: Path, repo: str, ref: str, n: int, dense: bool, cache: Path) -> list:
    """The newest n questions with gold before `ref`, asked and labelled (cached)."""
    if cache.exists():
        return [learn.Example(**e) for e in json.loads(cache.read_text())]
    pairs = []
    for c in history.commits_before(root, ref, history.MAX_LIMIT):
        gold = history.gold_of(root, c.sha)
        if gold:
            pairs.append((c.sha, c.when, history.question_of(c.message), gold))
        if len(pairs) == n:
            break
    exs = learn.examples(conn, repo, ref, pairs, log=print, dense=dense)
    cache.write_text(json.dumps([e.__dict__ for e in exs]))
    return exs


def scores(exs: list, model) -> dict:
    """Over questions: file Acc@1 and Acc@5 (files by first candidate; the model does not
    move files), gold MRR, and in_file1: of the gold files found, the share whose first
    candidate is gold (what the model orders)."""
    acc1 = acc5 = rr = firsts = gold_found = 0.0
    for e in exs:
        base = [v["score"] for v in e.views]
        if model is not None:
            s = model.score(features.vectors(e.question, e.views))
            base = order.within_files([v["path"] for v in e.views], base, s)
        ranked = sorted(range(len(e.views)), key=lambda i: (-base[i], i))
        files: list[str] = []
        for i in ranked:
            if e.views[i]["path"] not in files:
                files.append(e.views[i]["path"])
                gold_file = any(
                    e.labels[j] for j in range(len(e.views)) if e.views[j]["path"] == files[-1]
                )
                gold_found += gold_file
                firsts += gold_file and bool(e.labels[i])
        gold_files = {e.views[i]["path"] for i in range(len(e.views)) if e.labels[i]}
        acc1 += files[0] in gold_files
        acc5 += bool(gold_files & set(files[:5]))
        first = next(r for r, i in enumerate(ranked, 1) if e.labels[i])
        rr += 1 / first
    n = max(1, len(exs))
    return {
        "acc1": acc1 / n,
        "acc5": acc5 / n,
        "mrr": rr / n,
        "in_file1": firsts / max(1, gold_found),
    }


def _fmt(d: dict) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in d.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--repo-path", action="append", default=[], help="NAME=PATH")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--models", required=True, help="write {repository: model} here")
    ap.add_argument("--cache", required=True, help="folder for the asked questions")
    ap.add_argument("--lexical", action="append", default=[], help="repositories without vectors")
    ap.add_argument("--tenant", default="eval-{repository}", help="as bench/eval.py --tenant")
    args = ap.parse_args(argv)
    paths = dict(p.split("=", 1) for p in args.repo_path)
    doc = json.loads(Path(args.queries).read_text())
    corpus = doc.get("corpus") or {}
    at = corpus.get("commit") or corpus.get("measured_at_commit")
    queries = [
        {**q, "repository": q.get("repository") or corpus["repository"],
         "commit": q.get("commit") or at}
        for q in doc["queries"]
    ]  # fmt: skip
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    models = {}
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        for name, path in paths.items():
            root = Path(path)
            bases = sorted({q["commit"] for q in queries if q["repository"].endswith("/" + name)})
            ref = oldest_base(root, bases)
            found = conn.execute(
                "select id from codesift.tenants where name = %s",
                (args.tenant.replace("{repository}", name),),
            ).fetchone()
            if found is None:
                raise SystemExit(f"no tenant for {name}: index it (bench/eval.py)")
            tenant = found[0]
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
            started = time.perf_counter()
            exs = collect(
                conn,
                root,
                name,
                ref,
                args.questions,
                name not in args.lexical,
                cache / f"{name}-{ref[:12]}-{args.questions}.json",
            )
            asked = time.perf_counter() - started
            checked = check_leakage(root, [e.commit for e in exs], bases)
            exs.sort(key=lambda e: e.committed_at)  # oldest first
            cut = int(len(exs) * (1 - HELD_OUT))
            fit_on, held = exs[:cut], exs[cut:]
            started = time.perf_counter()
            full = train.fit(learn.groups(exs))
            seconds = time.perf_counter() - started
            assert full is not None
            models[name] = full.to_json()
            print(
                f"## {name}: base {ref[:12]} ({len(bases)} instances); {len(exs)} questions "
                f"with gold found ({sum(len(e.views) for e in exs)} candidates; asked in "
                f"{asked:.0f}s); leakage check: {checked} commits, each an ancestor of every "
                f"base, none a base; trained in {seconds:.2f}s; model "
                f"{len(json.dumps(full.to_json()))} bytes"
            )
            held_model = train.fit(learn.groups(fit_on))
            print(f"held-out (newest {len(held)}): base    {_fmt(scores(held, None))}")
            print(f"held-out (newest {len(held)}): ranker  {_fmt(scores(held, held_model))}")
            for group in features.GROUPS:
                kept = [n for n, g in features.FEATURES if g != group]
                m = train.fit(learn.groups(fit_on), kept)
                print(f"  without {group:<9} {_fmt(scores(held, m))}")
            for size in (25, 50, 100, 1000):
                if size < len(fit_on):
                    m = train.fit(learn.groups(fit_on[-size:]))
                    print(f"  trained on newest {size:<5} {_fmt(scores(held, m))}")
            print(f"  trained on all {len(fit_on):<7} {_fmt(scores(held, held_model))}")
            w = dict(zip(full.features, full.weights, strict=True))
            top = sorted(w.items(), key=lambda kv: -abs(kv[1]))[:8]
            print("  largest weights: " + ", ".join(f"{k} {v:+.2f}" for k, v in top))
            sys.stdout.flush()
    Path(args.models).write_text(json.dumps(models))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
