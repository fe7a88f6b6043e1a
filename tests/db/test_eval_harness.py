"""bench/eval.py end to end: a small self-made repository, a few queries with gold files,
every arm against the real database, the issue-5 JSON shape and sane values."""

import json
import re

import pytest

from bench import eval as harness
from bench.eval_metrics import METRIC_KEYS

INVOICE = '''"""Billing: invoices and their totals."""


def parse_invoice_total(lines):
    """Sum the amount column of an invoice's line items, in cents."""
    total = 0
    for line in lines:
        total += int(line["amount_cents"])
    return total


def format_currency(cents):
    return f"{cents // 100}.{cents % 100:02d} EUR"
'''
MAILER = '''"""Outgoing mail."""
import smtplib


def send_welcome_email(customer, server="localhost"):
    """Email a greeting message to a newly registered customer over SMTP."""
    with smtplib.SMTP(server) as smtp:
        smtp.sendmail("shop@example.com", customer.email, "Welcome to the shop!")
'''
THROTTLE = '''"""Request throttling."""
import time


class RateLimiter:
    """Token bucket: allow at most `rate` calls per second."""

    def __init__(self, rate):
        self.rate = rate
        self.tokens = rate
        self.stamp = time.monotonic()

    def allow(self):
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
'''
README = "# Shop\n\nA tiny shop backend: billing, mail and throttling.\n"

FILES = {
    "shop/billing/invoice.py": INVOICE,
    "shop/notify/mailer.py": MAILER,
    "shop/net/throttle.py": THROTTLE,
    "README.md": README,
}

QUERIES = {
    "name": "shop-4",
    "corpus": {"repository": "example/shop"},
    "queries": [
        {
            "id": "shop-sym-01",
            "kind": "identifier",
            "query": "parse_invoice_total",
            "gold_files": ["shop/billing/invoice.py"],
            "gold_symbols": [
                {
                    "path": "shop/billing/invoice.py",
                    "name": "parse_invoice_total",
                    "start_line": 4,
                    "end_line": 9,
                }
            ],
        },
        {
            "id": "shop-sym-02",
            "kind": "identifier",
            "query": "RateLimiter allow",
            "gold_files": ["shop/net/throttle.py"],
            # known by name only: the harness looks its lines up in the index
            "gold_spans": {"shop/net/throttle.py": ["RateLimiter.allow"]},
        },
        {
            "id": "shop-sem-01",
            "kind": "semantic",
            "query": "greet a newly registered customer by email",
            "gold_files": ["shop/notify/mailer.py"],
        },
        {
            "id": "shop-sem-02",
            "kind": "semantic",
            "query": "limit how many requests per second are accepted",
            "gold_files": ["shop/net/throttle.py"],
        },
    ],
}


def _fraction(value):
    return value is None or (isinstance(value, float | int) and 0 <= value <= 1)


def test_harness_end_to_end(dsn, make_repo, tmp_path, capsys):
    root = make_repo(FILES, name="shop")
    queries = tmp_path / "shop.json"
    queries.write_text(json.dumps(QUERIES))
    out = tmp_path / "out" / "shop.json"
    details = tmp_path / "details.json"
    argv = ["--queries", str(queries), "--repo-path", str(root), "--name", "shop"]
    argv += ["--dsn", dsn, "--out", str(out), "--details", str(details), "--explain"]

    assert harness.main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"shop @ [0-9a-f]{12} \(tenant eval-shop\): indexed", printed)
    assert "shop-4: all 4 queries" in printed

    report = json.loads(out.read_text())
    assert set(report) == {"arms", "by_kind", "queries"}
    # every arm under the baseline engine and the default one; the baselines once
    labels = [label for label, _, _ in harness.arm_labels(harness.Options())]
    assert list(report["arms"]) == labels
    assert {"bm25_files", "hybrid@baseline", "hybrid", "pack@baseline", "pack"} <= set(labels)
    assert "peer@baseline" not in labels
    assert set(report["by_kind"]) == {"identifier", "semantic"}
    for metrics in [*report["arms"].values()] + [
        m for kind in report["by_kind"].values() for m in kind.values()
    ]:
        assert set(metrics) == set(METRIC_KEYS)
        for key in METRIC_KEYS:
            if key != "tokens":
                assert _fraction(metrics[key]), (key, metrics[key])
    assert [q["id"] for q in report["queries"]] == [q["id"] for q in QUERIES["queries"]]
    for q in report["queries"]:
        assert set(q["first_hit_rank"]) == set(labels)
        assert all(r is None or r >= 1 for r in q["first_hit_rank"].values())

    ranks = {q["id"]: q["first_hit_rank"] for q in report["queries"]}
    # an exact identifier is found first by BM25 alone, and by the full pipeline
    assert ranks["shop-sym-01"]["lexical"] == 1
    assert ranks["shop-sym-01"]["hybrid"] == 1
    assert ranks["shop-sym-01"]["pack"] == 1
    assert ranks["shop-sym-02"]["lexical"] == 1
    lexical = report["by_kind"]["identifier"]["lexical"]
    assert lexical["r1"] == 1.0 and lexical["mrr"] == 1.0 and lexical["symbol_r5"] == 1.0
    # the peer is file-level only; only pack has context recall and tokens
    assert report["arms"]["peer"]["symbol_r5"] is None
    pack = report["arms"]["pack"]
    assert pack["context_recall"] is not None and pack["context_recall"] > 0
    assert 0 < pack["tokens"] <= 4000
    assert report["arms"]["hybrid"]["context_recall"] is None
    assert report["arms"]["hybrid"]["tokens"] is None
    # a four-file repository: every arm that ranks files finds each gold file in the top 10
    for arm in ("lexical", "dense", "hybrid"):
        assert report["arms"][arm]["r10"] == 1.0, arm

    info = json.loads(details.read_text())["queries"]["shop-sym-01"]
    assert info["arms"]["pack"]["packed"]
    assert info["arms"]["lexical"]["files"][0] == "shop/billing/invoice.py"

    # a rerun finds the repository indexed at that commit and goes straight to the queries
    assert harness.main(argv) == 0
    assert re.search(
        r"shop @ [0-9a-f]{12} \(tenant eval-shop\): already indexed", capsys.readouterr().out
    )
    assert json.loads(out.read_text())["arms"]["lexical"] == report["arms"]["lexical"]


def test_engines_name_the_settings_they_select():
    assert harness.engine_settings("baseline") == ("all", "")
    assert harness.engine_settings("default") == ("", "")
    # an ablation is one feature off against the defaults (file evidence and outlines off
    # among them); with-outline is the defaults with outlines on
    assert harness.engine_settings("no-kinds") == ("kinds,evidence,outline", "")
    assert harness.engine_settings("no-kinds+pack") == ("kinds,pack,evidence,outline", "")
    assert harness.engine_settings("with-outline") == ("evidence", "")
    assert harness.engine_settings("fusion-convex") == ("", "convex")
    with pytest.raises(SystemExit, match="unknown engine"):
        harness.engine_settings("no-nonsense")


def test_first_chars_cuts_a_question_at_a_words_end():
    text = "Session drops cookies\nWhen a redirect answers 302 the cookie jar is lost."
    assert harness.first_chars(text, 200) == text
    assert harness.first_chars(text, 25) == "Session drops cookies"
    assert harness.first_chars(text, 30) == "Session drops cookies\nWhen a"
    assert harness.first_chars("x" * 50, 10) == "x" * 10  # no word ends in it: cut as it is
    for bad in ("0", "-5"):
        with pytest.raises(SystemExit):
            harness.main(["--queries", "q.json", "--first-chars", bad])


def test_a_checkpoint_resumes_after_the_queries_it_holds(dsn, make_repo, tmp_path):
    root = make_repo(FILES, name="shop")
    queries = tmp_path / "shop.json"
    queries.write_text(json.dumps(QUERIES))
    checkpoint = tmp_path / "run.jsonl"
    out = tmp_path / "out.json"
    argv = ["--queries", str(queries), "--repo-path", str(root), "--name", "shop", "--dsn", dsn]
    argv += ["--arms", "bm25_files,lexical", "--engines", "default", "--out", str(out)]
    argv += ["--checkpoint", str(checkpoint)]
    assert harness.main([*argv, "--limit", "2"]) == 0  # a run that stopped after two queries
    assert len(checkpoint.read_text().splitlines()) == 2
    # the two it holds are not asked again: their text now matches nothing, their ranks stay
    changed = json.loads(json.dumps(QUERIES))
    for q in changed["queries"][:2]:
        q["query"] = "zzzqqq unmatched words"
    queries.write_text(json.dumps(changed))
    with checkpoint.open("a") as f:
        f.write('{"other": 1}\n[1, 2]\n{"id": 3, "results": {"lexical": 1}, "info": {}}\n')
        f.write('{"id": "shop-sem-01", "resu')  # the line a crash cut short
    assert harness.main(argv) == 0
    ranks = {q["id"]: q["first_hit_rank"] for q in json.loads(out.read_text())["queries"]}
    assert list(ranks) == [q["id"] for q in QUERIES["queries"]]
    assert ranks["shop-sym-01"]["lexical"] == 1 and ranks["shop-sym-02"]["lexical"] == 1
    assert ranks["shop-sem-02"]["lexical"] is not None
    # a run with other arms does not take results that lack them: it asks the changed text
    assert harness.main([*argv, "--arms", "lexical", "--engines", "baseline"]) == 0
    ranks = {q["id"]: q["first_hit_rank"] for q in json.loads(out.read_text())["queries"]}
    assert ranks["shop-sym-01"]["lexical@baseline"] is None


def test_an_imports_gold_span_is_the_files_import_statements():
    text = (
        '"""Doc."""\n'  # 1
        "import os\n"  # 2
        "from .models import (\n"  # 3
        "    Request,\n"  # 4
        "    Response,\n"  # 5
        ")\n"  # 6
        "\n"  # 7
        "def f():\n"  # 8
        "    import json\n"  # 9: inside a function, not the file's imports
    )
    assert harness.import_lines(text) == (2, 6)
    assert harness.import_lines("def f():\n    return 1\n") == (None, None)
    assert harness.IMPORT_SPAN.fullmatch("imports") and harness.IMPORT_SPAN.fullmatch("imports:5")
    assert not harness.IMPORT_SPAN.fullmatch("imports_module")
