"""One worker thread per process that runs a call beside the caller: a question's forward
pass on ONNX Runtime while the caller's lexical legs run.

Only a call that releases the GIL for its whole length gains from this: ONNX Runtime's
session.run does. Inside PostgreSQL the backend's own thread holds the GIL whenever it runs
SQL (PL/Python never releases it), so the worker must already be inside such a call when
the caller goes on: `run_beside` returns only then. The worker never calls into PostgreSQL,
and it blocks every signal, so that the server's signals (a cancel, a timeout) always reach
the backend's own thread."""

import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
STARTED_WAIT_S = 5.0  # a worker that has not begun by then is busy: the caller goes on anyway

_lock = threading.Lock()
_pool: list[ThreadPoolExecutor] = []


def _worker() -> ThreadPoolExecutor:
    """The process's single worker thread, started with every signal blocked (a thread
    inherits its creator's signal mask)."""
    with _lock:
        if not _pool:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codesift-embed")
            old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            try:
                pool.submit(lambda: None).result()  # the thread is made now, masked
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
            _pool.append(pool)
        return _pool[0]


def run_beside(call: Callable[[], T]) -> Future:
    """Run call() on the worker thread; return its Future once call has begun (or after
    STARTED_WAIT_S, if an earlier call still holds the worker)."""
    started = threading.Event()

    def run() -> T:
        started.set()
        return call()

    future = _worker().submit(run)
    started.wait(STARTED_WAIT_S)
    return future
