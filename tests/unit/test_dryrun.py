"""`codesift index --dry-run`'s report and estimate, without a database or a model: the
skipped paths it names, the rate it measures (a fake encoder and clock) and the symbols it
extrapolates once its extraction time is spent."""

import pytest
from codesift import dryrun
from codesift.ignore import Skipped


def test_skipped_paths_are_named_up_to_a_bound_per_reason():
    skipped = Skipped()
    for i in range(Skipped.SHOWN + 3):
        skipped.add("default: vendored folder", f"vendor/m{i:02}.py")
    skipped.add("symlink", "link")
    p = dryrun.Plan("r", "0" * 40, "t", skipped=skipped)
    lines = dryrun.report(p)
    at = lines.index("  skipped 13 file(s): default: vendored folder")
    assert lines[at + 1 : at + 12] == [f"    vendor/m{i:02}.py" for i in range(10)] + [
        "    ... and 3 more"
    ]
    assert lines[lines.index("  skipped 1 file(s): symlink") + 1] == "    link"
    assert skipped == {"default: vendored folder": 13, "symlink": 1}  # still a Counter


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_is_timed_on_a_spread_sample_after_an_untimed_warm_up():
    clock, calls = FakeClock(), []

    def encode(texts: list[str]) -> None:
        calls.append(texts)
        clock.now += 5.0 if len(calls) == 1 else 0.05 * len(texts)  # loading, then 20/s

    texts = [f"t{i}" for i in range(320)]
    rate, timed = dryrun.measure_rate(encode, texts, clock)
    assert rate == pytest.approx(20.0) and timed == dryrun.SAMPLE_TEXTS
    assert calls[0] == texts[: dryrun.WARM_UP_TEXTS]
    assert calls[1] == texts[::10]  # spread over the texts, not the first ones only


def test_past_the_extraction_time_symbols_are_extrapolated_by_bytes():
    clock = FakeClock()
    texts = dryrun._Texts(clock)
    body = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(4))
    texts.add("a.py", body)
    texts.add("b.py", body)
    clock.now += dryrun.EXTRACT_SECONDS + 1
    texts.add("c.py", body * 2)  # not extracted: twice a.py's bytes
    assert (texts.files, texts.extracted, texts.symbols) == (3, 2, 8)
    assert texts.estimated_symbols() == 16
    assert len(texts.texts) == 3 + 8  # every file's text, the extracted symbols'


def test_the_report_says_how_the_time_was_estimated():
    measured = dryrun.Embedding(symbols=90, files=10, to_compute=60, extracted=10)
    measured.rate, measured.measured = 12.0, 32
    p = dryrun.Plan("r", "0" * 40, "t", new_blobs=10, embedding=measured)
    assert dryrun.report(p)[-2:] == [
        "would embed 100 texts (90 symbols + 10 files): 60 vectors to compute,"
        " 40 stored or repeated",
        "  estimate: about 5 s at 12.0 texts/s (measured here on 32 of those texts with the"
        " loader's builtin; the database's own work not counted)",
    ]
    assumed = dryrun.Embedding(symbols=9000, files=1000, to_compute=10000, extracted=400)
    assumed.why_assumed, assumed.backlog = "the embedding endpoint is not asked", 7
    p = dryrun.Plan("r", "0" * 40, "t", new_blobs=1000, embedding=assumed)
    assert dryrun.report(p)[-3:] == [
        "would embed 10,000 texts (9,000 symbols (estimated: extracted 400 of 1,000 files in"
        " 20 s, the rest from their symbols per byte) + 1,000 files): 10,000 vectors to"
        " compute, 0 stored or repeated",
        "  estimate: about 8 min 20 s at 20.0 texts/s (assumed, not measured: the embedding"
        " endpoint is not asked; the database's own work not counted)",
        "  the tenant's queue already holds 7 texts to embed (codesift worker, or index"
        " --wait, embeds them too)",
    ]
