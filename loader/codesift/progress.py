"""Progress bars with rate and ETA on a terminal; silent otherwise.

The rate and the ETA come from a smoothed rate (SmoothedRate: an exponential moving
average of items per second over time), not from rich's own speed (the items of the last
30 s over the time between their first and last report): the embedding bar advances by
batches, and a batch whose vectors are stored (copied in a tenth of a second) next to one
the model computes (seconds) made that speed, and the ETA, swing several-fold from one
batch to the next.
"""

import math
import sys
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TaskProgressColumn,
    TextColumn,
)
from rich.text import Text

# Seconds over which the rate forgets: an observation dt seconds after the last one moves
# the rate toward the rate seen in between by 1 - exp(-dt / RATE_TIME_CONSTANT).
RATE_TIME_CONSTANT = 20.0


class SmoothedRate:
    """Items per second, smoothed over time with time constant `tau` seconds.

    Each observation (the count done so far, at a time) moves the rate toward the rate
    seen since the previous observation by a weight 1 - exp(-dt / tau), dt being the time
    in between: how far the estimate moves depends on the time that passed, not on how
    often progress is reported, so a burst of 64 items done at once moves it no more than
    64 items done one by one over the same time would. The first observation only starts
    the clock (the time before it, e.g. loading a model, is no item's), the second gives
    the first rate. Observations at the same instant are counted with the next one."""

    def __init__(self, tau: float = RATE_TIME_CONSTANT) -> None:
        if not tau > 0:
            raise ValueError(f"tau must be a positive number of seconds, got {tau!r}")
        self.tau = tau
        self.rate: float | None = None  # items per second; None before two observations
        self._time: float | None = None  # of the last observation
        self._done = 0.0  # the count at the last observation

    def observe(self, completed: float, now: float) -> None:
        if self._time is None:
            self._time, self._done = now, completed
            return
        dt = now - self._time
        if dt <= 0:
            return
        seen = max(completed - self._done, 0.0) / dt  # a count that went down adds nothing
        if self.rate is None:
            self.rate = seen
        else:
            self.rate += (1 - math.exp(-dt / self.tau)) * (seen - self.rate)
        self._time, self._done = now, completed

    def eta(self, remaining: float, now: float | None = None) -> float | None:
        """Seconds until `remaining` more items are done at the smoothed rate, counted from
        the last observation (and down from there to `now` when given); None while the
        rate is unknown or zero."""
        if not self.rate:
            return None
        left = max(remaining, 0.0) / self.rate
        if now is not None and self._time is not None:
            left -= now - self._time
        return max(left, 0.0)


def format_eta(seconds: float | None) -> str:
    """H:MM:SS, as rich shows a time remaining; -:--:-- when unknown."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


def _smoothed(task: Task) -> SmoothedRate | None:
    rate = task.fields.get("rate")
    return rate if isinstance(rate, SmoothedRate) else None


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        smoothed = _smoothed(task)
        speed = smoothed.rate if smoothed else None
        return Text(f"{speed:,.1f}/s" if speed else "")


class _TimeRemaining(ProgressColumn):
    """The ETA at the smoothed rate, counting down between two reports."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self.clock = clock

    def render(self, task: Task) -> Text:
        style = "progress.remaining"
        if task.total is None:
            return Text("", style=style)
        smoothed = _smoothed(task)
        if task.finished:
            left: float | None = 0.0
        else:
            left = smoothed.eta(task.remaining or 0.0, self.clock()) if smoothed else None
        return Text(format_eta(left), style=style)


class SmoothedProgress(Progress):
    """rich's Progress whose every task carries a SmoothedRate (task.fields['rate']), fed
    by each advance and update with the bar's clock."""

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields,
    ) -> TaskID:
        fields.setdefault("rate", SmoothedRate())
        return super().add_task(description, start, total, completed, visible, **fields)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._observe(task_id)

    def update(self, task_id: TaskID, **kwargs) -> None:
        super().update(task_id, **kwargs)
        self._observe(task_id)

    def _observe(self, task_id: TaskID) -> None:
        task = next((t for t in self.tasks if t.id == task_id), None)
        smoothed = _smoothed(task) if task is not None else None
        if task is not None and smoothed is not None:
            smoothed.observe(task.completed, self.get_time())


def progress_bar(
    enabled: bool = True, clock: Callable[[], float] = time.monotonic
) -> SmoothedProgress:
    return SmoothedProgress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        _Rate(),
        _TimeRemaining(clock),
        disable=not (enabled and sys.stderr.isatty()),
        console=Console(stderr=True),
        transient=False,
        get_time=clock,
    )
