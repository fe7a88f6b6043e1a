"""Where a call's time goes: the milliseconds of each stage, for explain_context's
`why.stage_ms` and, when a session sets codesift.timing = on, a NOTICE after every call
(`codesift.timing: prepare 0.4 ms, legs 3.1 ms, ...`) that any client can read."""

import time
from collections.abc import Iterator
from contextlib import contextmanager

SETTING = "codesift.timing"


class StageTimes:
    """Milliseconds per stage name, in the order the stages first ran."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            spent = (time.perf_counter() - start) * 1000
            self.ms[name] = round(self.ms.get(name, 0.0) + spent, 2)

    def line(self) -> str:
        total = sum(self.ms.values())
        stages = ", ".join(f"{name} {ms:.1f} ms" for name, ms in self.ms.items())
        return f"{SETTING}: {stages}; total {total:.1f} ms"


def stage_name(stage) -> str:
    """A stage function's name as the timings show it: expand_graph -> graph."""
    return STAGE_NAMES.get(stage.__name__, stage.__name__)


STAGE_NAMES = {
    "apply_recency": "recency",
    "expand_graph": "graph",
    "split_big_files": "standins",
    "add_callees": "callees",
}
