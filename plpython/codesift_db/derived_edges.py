"""Edges an import graph misses, derived from a ref's tree next to its import edges
(extraction.py resolve_repository_edges):

* tests: a test file to the code it tests, by name (tests/test_client.py -> client.py,
  router_test.go -> router.go) and by the defined names it uses (a test that requires the
  package root reaches no file through imports, but it calls the functions it tests);
* references: a file to the file that defines a name it imports, when the import resolved to
  a package that only re-exports the name (`from pkg import Session` -> pkg/sessions.py).

Each edge is (source, target, relation, weight), weight in (0, 1]. Co-change edges come from
the loader (loader/codesift/cochange.py): the database has no git history."""

import re
from collections.abc import Iterable

from .file_kinds import TEST_PATH, file_kind

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


def _shared_folders(a: str, b: str) -> int:
    ours = {p for p in a.split("/")[:-1] if p not in TEST_DIRS}
    return len(ours & set(b.split("/")[:-1]))


def naming_edges(paths: Iterable[str], sources: frozenset | None = None) -> list[tuple]:
    """tests edges by name: each test (of sources, if given) to the code files its name names,
    the ones sharing most folders with it (at most two)."""
    paths = list(paths)
    by_name = _code_names(paths)
    out = []
    for test in paths:
        if (sources is not None and test not in sources) or not is_test(test):
            continue
        name = subject(test)
        candidates = by_name.get(name or "", [])
        if not candidates:
            continue
        ranked = sorted(candidates, key=lambda c: (-_shared_folders(test, c), c))
        best = _shared_folders(test, ranked[0])
        for target in [c for c in ranked if _shared_folders(test, c) == best][:2]:
            out.append((test, target, "tests", 1.0))
    return out


def definers(definitions: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """name -> the code files defining it at top level, for names defined in few files."""
    out: dict[str, set[str]] = {}
    for path, name in definitions:
        if len(name) >= 4 and file_kind(path) == "code":
            out.setdefault(name, set()).add(path)
    return {n: sorted(ps) for n, ps in out.items() if len(ps) <= MAX_DEFINERS}


def usage_edges(texts: dict[str, str], defined: dict[str, list[str]]) -> list[tuple]:
    """tests edges by use: each test to the code files defining most of the names it uses."""
    out = []
    for test, text in texts.items():
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


def reference_edges(imports: Iterable[tuple], defined: dict[str, list[str]]) -> list[tuple]:
    """references: (source, target, names) import edges whose names the target does not
    define -> the files under the target's folder that do (re-exports)."""
    out: dict[tuple[str, str], float] = {}
    for source, target, names in imports:
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
