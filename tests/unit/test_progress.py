"""The progress bars' rate and ETA: a rate smoothed over time (loader/codesift/progress.py),
driven here by a fake clock, so nothing depends on how fast this machine is."""

import math

import pytest
from codesift.progress import SmoothedRate, format_eta, progress_bar


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_steady_rate_is_exact_and_the_first_report_only_starts_the_clock():
    r = SmoothedRate(tau=20)
    r.observe(64, 5.0)  # the first batch, after loading a model: no rate yet
    assert r.rate is None and r.eta(100) is None
    for i in range(1, 6):
        r.observe(64 + 10 * i, 5.0 + i)
        assert r.rate == pytest.approx(10.0)
    assert r.eta(100) == pytest.approx(10.0)
    assert r.eta(100, now=12.5) == pytest.approx(7.5)  # counts down from the last report
    assert r.eta(100, now=60.0) == 0.0


def test_the_weight_depends_on_the_time_that_passed_not_on_how_often_it_is_reported():
    def after_step(steps: list[float]) -> float:
        r = SmoothedRate(tau=20)
        t, done = 0.0, 0.0
        r.observe(done, t)
        for _ in range(10):  # 10 s at 10/s
            t, done = t + 1, done + 10
            r.observe(done, t)
        for dt in steps:  # then 20/s
            t, done = t + dt, done + 20 * dt
            r.observe(done, t)
        assert r.rate is not None
        return r.rate

    # 30 s at 20/s, reported in 1 step, in 30, or unevenly: the same exponential approach
    expected = 20 - 10 * math.exp(-30 / 20)
    assert after_step([30.0]) == pytest.approx(expected)
    assert after_step([1.0] * 30) == pytest.approx(expected)
    assert after_step([0.5, 7.5, 2.0, 15.0, 5.0]) == pytest.approx(expected)


def test_batches_of_stored_and_computed_vectors_barely_move_the_eta():
    # the embedding bar's input: batches of 64 rows, alternately copied from stored vectors
    # (0.1 s) and computed by the model (6.4 s); each batch alone says 640/s or 10/s
    total, mean_rate = 64 * 200, 128 / 6.5
    r = SmoothedRate(tau=20)
    t, done = 0.0, 0
    r.observe(done, t)
    rates, etas = [], []
    for n in range(200):
        t += 0.1 if n % 2 else 6.4
        done += 64
        r.observe(done, t)
        if t > 60:  # past the first minute: the estimate has settled
            assert r.rate is not None
            rates.append(r.rate)
            eta = r.eta(total - done)
            assert eta is not None
            etas.append((eta, (total - done) / mean_rate))
    assert max(rates) / min(rates) < 1.25  # the raw per-batch rates differ 64-fold
    assert all(abs(eta - truth) <= 0.15 * truth + 1 for eta, truth in etas)


def test_reports_at_the_same_instant_count_with_the_next_and_a_count_going_down_adds_nothing():
    r = SmoothedRate(tau=20)
    r.observe(0, 0.0)
    r.observe(64, 1.0)
    r.observe(128, 1.0)  # no time passed: no division by zero, counted next time
    assert r.rate == pytest.approx(64.0)
    r.observe(192, 2.0)
    assert r.rate == pytest.approx(64 + (1 - math.exp(-1 / 20)) * (128 - 64))
    before = r.rate
    r.observe(100, 3.0)  # another process's rows joined the backlog: not negative speed
    assert r.rate is not None and 0 < r.rate < before
    with pytest.raises(ValueError):
        SmoothedRate(tau=0)


def test_the_bar_shows_the_smoothed_rate_and_eta():
    clock = Clock()
    with progress_bar(enabled=False, clock=clock) as bar:
        task_id = bar.add_task("embedding", total=640)
        rate_column, eta_column = bar.columns[-2], bar.columns[-1]
        task = bar.tasks[0]
        assert eta_column.render(task).plain == "-:--:--"
        for n in range(1, 9):
            clock.now += 0.1 if n % 2 else 6.4
            if n < 8:
                bar.advance(task_id, 64)
            else:
                bar.update(task_id, completed=8 * 64)  # the wait loop sets the count
            task = bar.tasks[0]
            smoothed = task.fields["rate"]
            if n == 1:  # the first batch starts the clock
                assert smoothed.rate is None and rate_column.render(task).plain == ""
                assert eta_column.render(task).plain == "-:--:--"
                continue
            assert rate_column.render(task).plain == f"{smoothed.rate:,.1f}/s"
            assert eta_column.render(task).plain == format_eta(smoothed.eta(task.remaining))
        clock.now += 3
        assert eta_column.render(task).plain == format_eta(smoothed.eta(task.remaining) - 3)
        bar.update(task_id, completed=640)
        assert eta_column.render(bar.tasks[0]).plain == "0:00:00"


def test_format_eta():
    assert format_eta(None) == "-:--:--"
    assert format_eta(0) == "0:00:00"
    assert format_eta(3725.9) == "1:02:05"
