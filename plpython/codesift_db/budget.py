"""Per-blob limits of extraction: every cap in one place, and a work budget with a deadline;
and the checks a long loop inside the server makes (Ticker).

Extraction runs inside PostgreSQL, in the PL/Python statement trigger that inserts blobs.
PL/Python ignores statement_timeout and cancel requests until it returns, so whatever a
tenant pushes must be extracted in bounded time and memory. Two kinds of bound:

* Caps on what one blob may produce (symbols, markdown sections, the text of its symbols,
  import statements, references, file-level terms). What is over a cap is not stored, but counted.
* A work budget: a deadline on time.monotonic(), checked inside the Python loops (and by
  tree-sitter's parse progress callback) that gives up cleanly, keeping what was extracted.

Either way the blob is stored with what was extracted, and codesift.blobs.extraction_limited
records why it is incomplete ('symbols cap 5000 (812 more)', 'time budget 2 s: symbols');
it is null when extraction was complete.

    b = Budget()                    # the default deadline, BLOB_SECONDS from now
    b = Budget(seconds=None)        # caps only, no deadline (deterministic, for tests)
    b.expired()                     # True once the deadline has passed (sticky)
    b.over('symbols', MAX_SYMBOLS, 812)
    b.reason()                      # None, or the notes joined by '; '

Edge resolution (codesift.resolve_edges, one statement over a whole repository) has a
budget of RESOLVE_SECONDS, and its loops call a Ticker once per unit of work: every
INTERRUPT_SECONDS the ticker runs a trivial statement, which is when PostgreSQL acts on a
pending cancel or statement_timeout (raised into the loop as plpy's QueryCanceled: the
statement ends with its usual error), and it says when the budget's time is spent.

    tick = Ticker(Budget(RESOLVE_SECONDS), lambda: plpy.execute(plan))
    for item in work:
        if tick():
            break                   # out of time: keep what was done (tick.limits.reason())
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

# --- caps per blob -----------------------------------------------------------------------

# Symbols of one blob (functions, classes, methods, parts of long symbols, blocks): the
# first MAX_SYMBOLS in file order are kept.
MAX_SYMBOLS = 5000
# Markdown sections of one blob (each heading is one, or several parts when it is long).
MAX_SECTIONS = 5000
# Characters of symbol bodies of one blob, all symbols together (nested symbols repeat the
# text of their children; MAX_NESTING bounds the repetition, this bounds the total).
MAX_SYMBOL_TEXT_CHARS = 16 << 20
# Import statements of one blob.
MAX_IMPORTS = 5000
# References of one blob (uses of names that could name a definition, ingest/references.py):
# the first MAX_REFERENCES in file order are kept.
MAX_REFERENCES = 50_000
# Terms of one document's lexemes (a tsvector must stay under 1 MB) and their characters.
MAX_DOC_TERMS = 50_000
MAX_DOC_CHARS = 400_000

# --- work ------------------------------------------------------------------------------

# Seconds of Python work per blob before extraction gives up and keeps what it has. A
# session may lower it with `set codesift.extraction_seconds = ...`; only a superuser may
# raise it (see blob_seconds).
BLOB_SECONDS = 2.0
SETTING = "codesift.extraction_seconds"
# Loops check the clock once per this many iterations (a power of two, minus one: a mask).
CHECK_EVERY = 255
# Finding things (the file's terms, its imports, its symbols) may use this share of the
# budget; the rest is left for the terms of the symbols found, so that a blob that runs out
# of time still stores what was found first.
EXTRACT_SHARE = 0.6
# Counting what is over a cap (walking the rest of a file) stops at this share of the
# budget; past it the count is a lower bound ('at least N more').
COUNT_SHARE = 0.4


class Budget:
    """The limits one blob's extraction ran into, and its deadline.

    Not thread-safe; one per blob. `seconds=None` disables the deadline (caps still apply).
    """

    __slots__ = ("start", "deadline", "seconds", "notes", "_limit", "_phase")

    def __init__(self, seconds: float | None = BLOB_SECONDS):
        self.seconds = seconds
        self.start = time.monotonic()
        self.deadline = None if seconds is None else self.start + seconds
        self.notes: dict[str, str] = {}
        self._limit = self.deadline  # the current phase's deadline
        self._phase = "extraction"

    def phase(self, name: str, share: float | None = None) -> Budget:
        """Name the work under way, for the time-budget note ('symbols', 'imports', ...);
        with `share`, that work must end when that share of the budget is spent (until the
        next call with a share)."""
        self._phase = name
        if share is not None and self.seconds is not None:
            self._limit = self.start + share * self.seconds
        return self

    def expired(self) -> bool:
        """True once the current phase's deadline has passed; the first phase that ran out
        of time is noted."""
        if self._limit is None or time.monotonic() < self._limit:
            return False
        self.notes.setdefault("time", f"time budget {self.seconds:g} s: {self._phase} incomplete")
        return True

    def used(self, share: float) -> bool:
        """True once `share` of the budget's time is spent (never without a deadline)."""
        return self.seconds is not None and time.monotonic() > self.start + share * self.seconds

    def add(self, what: str, text: str) -> None:
        """Append to the note about `what` (e.g. to the time-budget note)."""
        if what in self.notes:
            self.notes[what] += text

    def progress(self, *_args) -> bool:
        """tree-sitter's parse progress callback: True cancels the parse."""
        return self.expired()

    def over(self, what: str, cap: int, more: int, unit: str = "more", exact: bool = True) -> None:
        """Record that `more` items of `what` were not kept because of `cap` (at least that
        many when not `exact`)."""
        if more > 0:
            count = f"{more}" if exact else f"at least {more}"
            self.notes[what] = f"{what} cap {cap} ({count} {unit})"

    def reason(self) -> str | None:
        """Why this blob's extraction is incomplete, or None when it is complete."""
        return "; ".join(self.notes.values()) or None


def blob_seconds(setting: str | None, superuser: bool = False) -> float:
    """The per-blob budget for a session whose codesift.extraction_seconds is `setting`:
    BLOB_SECONDS when unset or not a number, never below 0, and above BLOB_SECONDS only for
    a superuser (any other role runs extraction for any tenant's blob: the default is its
    ceiling)."""
    try:
        value = float(setting)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return BLOB_SECONDS
    if math.isnan(value):
        return BLOB_SECONDS
    value = max(value, 0.0)
    return value if superuser else min(value, BLOB_SECONDS)


def unlimited() -> Budget:
    """Caps only: for callers outside the trigger (tests, tools) that want no deadline."""
    return Budget(seconds=None)


# --- long loops of one statement ----------------------------------------------------------

# Seconds one codesift.resolve_edges call may take before it stops deriving edges and
# stores those it found: a bound for servers without a statement_timeout (its loops are
# linear: bench/results/resolve-edges.txt).
RESOLVE_SECONDS = 30.0
# How often a Ticker runs its statement: the delay before a cancel or a statement_timeout
# ends a loop inside the server (a statement costs about a microsecond).
INTERRUPT_SECONDS = 0.02


class Ticker:
    """Called once per unit of work by a long loop inside the server: every `every` seconds
    it calls `interrupts` (a function running a trivial statement, which raises a pending
    cancel or statement timeout into the loop), and it returns True once the time of
    `limits` is spent (then at every call). `ticks` counts the calls.

    Call it outside any `try` that catches Exception: the cancel must end the statement."""

    __slots__ = ("limits", "interrupts", "every", "ticks", "_next", "_spent")

    def __init__(
        self,
        limits: Budget | None = None,
        interrupts: Callable[[], object] | None = None,
        every: float = INTERRUPT_SECONDS,
    ):
        self.limits = limits
        self.interrupts = interrupts
        self.every = every
        self.ticks = 0
        self._next = time.monotonic() + every
        self._spent = False

    def __call__(self) -> bool:
        self.ticks += 1
        if self._spent:
            return True
        if self.interrupts is not None:
            now = time.monotonic()
            if now >= self._next:
                self._next = now + self.every
                self.interrupts()
        if self.limits is not None and self.limits.expired():
            self._spent = True
        return self._spent


def no_ticks() -> bool:
    """A Ticker that never stops anything (plain Python callers, tests)."""
    return False
