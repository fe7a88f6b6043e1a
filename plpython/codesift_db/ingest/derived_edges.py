"""Edges an import graph misses, derived from a ref's tree next to its import edges
(extraction.py resolve_repository_edges):

* tests: a test file to the code it tests, by name (tests/test_client.py -> client.py,
  router_test.go -> router.go) and by the defined names it uses (a test that requires the
  package root reaches no file through imports, but it calls the functions it tests);
* references: a file to the file that defines a name it imports, when the import resolved to
  a package that only re-exports the name (`from pkg import Session` -> pkg/sessions.py).

Each edge is (source, target, relation, weight), weight in (0, 1]. Co-change edges come from
the loader (loader/codesift/cochange.py): the database has no git history.

The work grows linearly with the repository: a test finds the nearest code files of its
name through an index of their folders (_Namesakes), within MAX_NAMESAKE_WORK per test and
MAX_NAMING_WORK in all, not by comparing itself with every file of that name (3,000 folders
each holding test_x.py and x.py made that 9 million comparisons). Each function takes a
`tick` (budget.Ticker), called once per item: it lets a cancel end the loop, and its True
(the time budget is spent) stops it with the edges found so far."""

import heapq
import re
from collections.abc import Callable, Iterable

from ..budget import no_ticks
from ..file_kinds import TEST_PATH, file_kind

# a defined name a test uses: long enough to be distinctive
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
MAX_DEFINERS = 2  # a name defined in more files than this says nothing about which one
MAX_TEST_TARGETS = 3  # files a test reaches by the names it uses, most names first
MIN_NAMES_USED = 2  # one shared name is a coincidence
NAMES_FOR_FULL_WEIGHT = 8
MAX_TEST_FILES = 5_000  # bounds on the text read per ref
MAX_TEST_CHARS = 200_000  # of one test file
MAX_TEST_TEXT = 20_000_000  # of all of them
PACKAGE_FILES = ("__init__", "index", "mod", "lib", "main")
TEST_MARKERS = re.compile(r"^(test_|tests_|test-)|(_test|_tests|-test|\.test|\.spec|_spec)$")
CLASS_TEST_SUFFIX = re.compile(r"(?<=[a-z0-9])Tests?$")
TEST_DIRS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__"})
# Code files of a test's name read through its folders' lists, rarest folder first, up to
# MAX_NAMESAKE_WORK per test; the lists of more crowded folders are read only where they
# can change the answer, paid from MAX_NAMING_WORK for all the tests. Past that, a test's
# namesakes are ranked by its rarest folders only: the answer differs from comparing each
# test with each namesake only where that would have taken millions of comparisons.
MAX_NAMESAKE_WORK = 256
MAX_NAMING_WORK = 2_000_000


def is_test(path: str) -> bool:
    return bool(TEST_PATH.search(path))


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.split(".", 1)[0] if not name.startswith(".") else name


def subject(path: str) -> str | None:
    """The name of what a test file tests: test_client.py, client_test.go, client.test.js,
    ClientTest.java -> client; a file in a tests folder without a marker names it as is."""
    name = path.rsplit("/", 1)[-1]
    base = name.rsplit(".", 1)[0] if "." in name else name
    stripped = CLASS_TEST_SUFFIX.sub("", TEST_MARKERS.sub("", base))
    if not stripped or stripped in TEST_DIRS or stripped in PACKAGE_FILES:
        return None
    return stripped.lower().replace("-", "_")


def _code_names(paths: Iterable[str]) -> dict[str, list[str]]:
    """Code files by the name a test would use: the file's stem, a package file's folder."""
    out: dict[str, list[str]] = {}
    for path in paths:
        if file_kind(path) != "code":
            continue
        parts = path.split("/")
        stem = _stem(path)
        key = parts[-2] if stem in PACKAGE_FILES and len(parts) > 1 else stem
        out.setdefault(key.lower().replace("-", "_"), []).append(path)
    return out


def _test_folders(test: str) -> set[str]:
    """The folders of a test that say where its code is (not tests/, spec/, ...)."""
    return {p for p in test.split("/")[:-1] if p not in TEST_DIRS}


class _Namesakes:
    """The code files of one name, sorted, and the nearest of them to a test: those sharing
    most folders with it (by name, anywhere in the path), the first by path among equals.

    Each folder lists the files under it (their positions in `files`, ascending), but for
    the folders that hold every file: those add one to every file and change no ranking."""

    __slots__ = ("files", "folders", "under")

    def __init__(self, files: list[str]):
        self.files = sorted(files)
        self.folders = [set(f.split("/")[:-1]) for f in self.files]
        under: dict[str, list[int]] = {}
        for i, folders in enumerate(self.folders):
            for folder in folders:
                under.setdefault(folder, []).append(i)
        everywhere = len(self.files)
        self.under = {f: found for f, found in under.items() if len(found) < everywhere}

    def nearest(self, test: str, work_left: int) -> tuple[list[str], int]:
        """The (at most two) nearest files to test, and the work spent from work_left: what
        is over MAX_NAMESAKE_WORK. When work_left is not enough, the files listed by the
        test's rarest folders are ranked by those only (or all files are as near)."""
        if len(self.files) == 1:
            return self.files[:], 0
        lists = sorted(
            ((f, self.under[f]) for f in _test_folders(test) if f in self.under),
            key=lambda folder_files: len(folder_files[1]),
        )
        # the rarest folders first, while the files they list stay within the cap
        light, read = 0, 0
        while light < len(lists) and read + len(lists[light][1]) <= MAX_NAMESAKE_WORK:
            read += len(lists[light][1])
            light += 1
        counts = _count(found for _, found in lists[:light])
        heavy = [f for f, _ in lists[light:]]
        if not heavy:
            return self._ranked(counts), 0
        # the files found so far get their full count (checks past MAX_NAMESAKE_WORK are
        # paid from work_left: a path may have thousands of folders)
        spent = max(0, len(counts) * len(heavy) - MAX_NAMESAKE_WORK)
        if spent > work_left:
            return self._ranked(counts), 0
        for i in counts:
            counts[i] += sum(1 for f in heavy if f in self.folders[i])
        best = max(counts.values(), default=0)
        if best > len(heavy):  # no other file counts as much
            return self._ranked(counts), spent
        if len(heavy) == 1:
            # best is 0 or 1, and every file under that folder counts 1: its first files
            # tie with the files found that count 1
            tied = {i for i, k in counts.items() if k == 1}
            return self._first(tied.union(lists[light][1][:2])), spent
        more = sum(len(found) for _, found in lists[light:])
        if spent + more > work_left:
            return self._ranked(counts), spent
        return self._ranked(_count(found for _, found in lists)), spent + more

    def _ranked(self, counts: dict[int, int]) -> list[str]:
        if not counts:  # no file shares a folder with the test: all are as near
            return self.files[:2]
        best = max(counts.values())
        return self._first(i for i, k in counts.items() if k == best)

    def _first(self, found: Iterable[int]) -> list[str]:
        return [self.files[i] for i in heapq.nsmallest(2, found)]


def _count(lists: Iterable[list[int]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for found in lists:
        for i in found:
            counts[i] = counts.get(i, 0) + 1
    return counts


def naming_edges(
    paths: Iterable[str],
    sources: frozenset | None = None,
    tick: Callable[[], bool] = no_ticks,
) -> list[tuple]:
    """tests edges by name: each test (of sources, if given) to the code files its name names,
    the ones sharing most folders with it (at most two)."""
    paths = list(paths)
    by_name = _code_names(paths)
    namesakes: dict[str, _Namesakes] = {}
    work_left = MAX_NAMING_WORK
    out = []
    for test in paths:
        if tick():
            break
        if (sources is not None and test not in sources) or not is_test(test):
            continue
        name = subject(test) or ""
        candidates = by_name.get(name)
        if not candidates:
            continue
        group = namesakes.get(name)
        if group is None:
            group = namesakes[name] = _Namesakes(candidates)
        targets, spent = group.nearest(test, work_left)
        work_left -= spent
        for target in targets:
            out.append((test, target, "tests", 1.0))
    return out


def definers(
    definitions: Iterable[tuple[str, str]], tick: Callable[[], bool] = no_ticks
) -> dict[str, list[str]]:
    """name -> the code files defining it at top level, for names defined in few files."""
    out: dict[str, set[str]] = {}
    for path, name in definitions:
        if tick():
            break
        if len(name) >= 4 and file_kind(path) == "code":
            out.setdefault(name, set()).add(path)
    return {n: sorted(ps) for n, ps in out.items() if len(ps) <= MAX_DEFINERS}


def usage_edges(
    texts: dict[str, str], defined: dict[str, list[str]], tick: Callable[[], bool] = no_ticks
) -> list[tuple]:
    """tests edges by use: each test to the code files defining most of the names it uses."""
    out = []
    for test, text in texts.items():
        if tick():
            break
        used: dict[str, float] = {}
        for name in set(IDENTIFIER.findall(text[:MAX_TEST_CHARS])):
            for path in defined.get(name, ()):
                if path != test:
                    used[path] = used.get(path, 0.0) + 1.0 / len(defined[name])
        ranked = sorted(used.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TEST_TARGETS]
        for path, names in ranked:
            if names >= MIN_NAMES_USED:
                out.append((test, path, "tests", min(1.0, names / NAMES_FOR_FULL_WEIGHT)))
    return out


def reference_edges(
    imports: Iterable[tuple], defined: dict[str, list[str]], tick: Callable[[], bool] = no_ticks
) -> list[tuple]:
    """references: (source, target, names) import edges whose names the target does not
    define -> the files under the target's folder that do (re-exports)."""
    out: dict[tuple[str, str], float] = {}
    for source, target, names in imports:
        if tick():
            break
        folder = target.rsplit("/", 1)[0] + "/" if "/" in target else ""
        for name in names or ():
            where = defined.get(name, [])
            if target in where:
                continue
            inside = [p for p in where if p.startswith(folder) and p != source]
            for path in inside:
                key = (source, path)
                out[key] = max(out.get(key, 0.0), 1.0 / len(inside))
    return [(s, t, "references", w) for (s, t), w in sorted(out.items())]


def wanted_tests(paths: Iterable[str], sources: frozenset | None) -> list[str]:
    """The test files whose text the usage edges read (a bounded number)."""
    tests = [p for p in paths if is_test(p)]
    if sources is not None:
        tests = [p for p in tests if p in sources]
    return sorted(tests)[:MAX_TEST_FILES]
