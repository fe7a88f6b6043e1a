"""pack_context latency of the baseline engine and the default one, short questions and long ones,
side by side on an indexed repository (prints only, never asserts).

    .venv/bin/python bench/question_latency_bench.py --tenant eval-express --repo express \\
        --queries bench/queries/express.json --long bench/queries/swebench-dev.json --reps 3

Short questions: the --queries set. Long questions: the --long set's query texts, cut to
about 300 words (the issue text of a SWE-bench instance, whatever its repository: the cost
of reading a long question does not depend on whether it matches). Each timed round runs
every engine on one question before the next question (interleaved), warm, the database
embedding the text itself. Engines (--engines) are bench/eval.py's: the settings of
pipeline/features.py, `baseline` (codesift.retrieval_off = all), `default` (the defaults) and
`no-X` (feature X off alone)."""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "loader"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval import engine_settings, set_engine  # noqa: E402
from bench.question_sets import questions  # noqa: E402

PACK = "select count(*) from codesift.pack_context(%s, repo => %s, token_budget => 4000)"
TIMING_NOTICE = "codesift.timing:"  # pipeline/timing.py's notice: 'stage 0.4 ms, ...; total'
STAGE_MS = re.compile(r"(\w+) ([\d.]+) ms")


def run(conn, texts: list[str], repo: str, reps: int, engines: list[str]) -> dict:
    times: dict[str, list[float]] = {e: [] for e in engines}
    for rep in range(reps + 1):
        for text in texts:
            for engine in engines:
                set_engine(conn, engine)
                start = time.perf_counter()
                conn.execute(PACK, (text, repo)).fetchone()
                if rep:  # the first round warms caches and the model
                    times[engine].append((time.perf_counter() - start) * 1000)
    return times


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tenant", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--queries", required=True, help="short questions (express.json shape)")
    ap.add_argument("--long", required=True, help="a set whose query texts are long")
    ap.add_argument("--long-n", type=int, default=10, help="long questions taken")
    ap.add_argument("--words", type=int, default=300, help="words a long question keeps")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default="baseline,default", help="e.g. baseline,default,no-frames")
    ap.add_argument("--dsn")
    args = ap.parse_args()
    from codesift.db import current_dsn

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for engine in engines:
        engine_settings(engine)  # an unknown engine stops here, before any work

    short, long = questions(args.queries, args.long, args.words, args.long_n)
    with psycopg.connect(args.dsn or current_dsn(), autocommit=True) as conn:
        tenant = conn.execute(
            "select id from codesift.tenants where name = %s", (args.tenant,)
        ).fetchone()[0]
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
        print(f"pack_context on {args.repo} (tenant {args.tenant}), ms, {args.reps} rounds")
        print(f"{'questions':<28}{'engine':<11}{'n':>5}{'p50':>9}{'p95':>9}{'mean':>9}")
        for label, texts in (
            (f"short ({len(short)})", short),
            (f"long ({len(long)} x {args.words} words)", long),
        ):
            for engine, values in run(conn, texts, args.repo, args.reps, engines).items():
                print(
                    f"{label:<28}{engine:<11}{len(values):>5}{pct(values, 0.5):>9.1f}"
                    f"{pct(values, 0.95):>9.1f}{statistics.mean(values):>9.1f}"
                )
        print("\nwhere pack_context's time goes (codesift.timing, default engine), p50 ms")
        for label, texts in (("short", short), ("long", long)):
            stages = stage_medians(conn, texts, args.repo)
            print(f"{label:<8}" + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    return 0


def stage_medians(conn, texts: list[str], repo: str) -> dict[str, float]:
    """The median milliseconds of each stage of pack_context over the questions (the
    codesift.timing notice of one call each; explain_context's why.stage_ms would count
    the languages of every candidate, which a pack looks up for its packed rows only)."""
    set_engine(conn, "default")
    notices: list[str] = []

    def keep(diagnostic) -> None:
        notices.append(diagnostic.message_primary or "")

    per_stage: dict[str, list[float]] = {}
    conn.add_notice_handler(keep)
    conn.execute("set codesift.timing = on")
    try:
        for text in texts:
            notices.clear()
            conn.execute(PACK, (text, repo)).fetchone()
            line = next((n for n in notices if n.startswith(TIMING_NOTICE)), "")
            stages = line.removeprefix(TIMING_NOTICE).split(";")[0]
            for stage, ms in STAGE_MS.findall(stages):
                per_stage.setdefault(stage, []).append(float(ms))
    finally:
        conn.execute("reset codesift.timing")
        conn.remove_notice_handler(keep)
    order = sorted(per_stage, key=lambda s: -statistics.median(per_stage[s]))
    return {s: statistics.median(per_stage[s]) for s in order}


if __name__ == "__main__":
    sys.exit(main())
