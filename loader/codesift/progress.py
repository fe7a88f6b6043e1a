"""Progress bars with rate and ETA on a terminal; silent otherwise."""

import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class _Rate(TextColumn):
    def __init__(self):
        super().__init__("")

    def render(self, task):
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f}/s" if speed else "")


def progress_bar(enabled: bool = True) -> Progress:
    return Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        _Rate(),
        TimeRemainingColumn(),
        disable=not (enabled and sys.stderr.isatty()),
        console=Console(stderr=True),
        transient=False,
    )
