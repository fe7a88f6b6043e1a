"""Edge resolution (codesift.resolve_edges: import_resolution.py, derived_edges.py) grows
linearly with the repository, on the layouts that made it quadratic: thousands of files
sharing one name (d0001/test_x.py next to d0001/x.py, ...), one package folder holding
thousands of files, thousands of folders or classes of the same name.

The work is counted, not timed: the Python and C calls a resolution makes
(sys.setprofile) on n files and on 2n files. Linear work doubles (about 2x); the nested
loops it replaced quadrupled it (about 4x). Each test also checks the edges themselves,
so that a fast answer is also the right one."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

from codesift_db.file_kinds import file_kind
from codesift_db.ingest import derived_edges as d
from codesift_db.ingest.import_resolution import resolve_import, resolve_imports

N = 300  # files of each kind on the small side; the large side has twice as many
LINEAR = 2.6  # growth of the work from n to 2n: 2 when linear, 4 when quadratic


def _calls(work: Callable[[], object]) -> int:
    """The Python and C calls that work() makes."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    file_kind.cache_clear()  # each measure starts cold
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def _growth(work: Callable[[int], object], n: int = N) -> float:
    """How much more work n -> 2n files take."""
    return _calls(lambda: work(2 * n)) / _calls(lambda: work(n))


# --- tests to the code they test, by name ---------------------------------------------


def _namesakes(n: int) -> list[str]:
    """n folders each holding test_x.py and x.py: every test's name names n files."""
    return [p for i in range(n) for p in (f"d{i:04d}/test_x.py", f"d{i:04d}/x.py")]


def test_pairing_tests_with_namesakes_is_linear_and_picks_the_nearest():
    edges = d.naming_edges(_namesakes(N))
    assert sorted((s, t) for s, t, _, _ in edges) == [
        (f"d{i:04d}/test_x.py", f"d{i:04d}/x.py") for i in range(N)
    ]
    assert _growth(lambda n: d.naming_edges(_namesakes(n))) < LINEAR


def test_pairing_tests_under_a_shared_folder_is_linear():
    # all under one folder but one: the shared folder cannot be left out of the count
    def layout(n: int) -> list[str]:
        return ["other/x.py"] + [
            f"src/d{i:04d}/{f}" for i in range(n) for f in ("x.py", "test_x.py")
        ]

    edges = {(s, t) for s, t, _, _ in d.naming_edges(layout(N))}
    assert (f"src/d{N - 1:04d}/test_x.py", f"src/d{N - 1:04d}/x.py") in edges
    assert len(edges) == N
    assert _growth(lambda n: d.naming_edges(layout(n))) < LINEAR


def _brute_force(paths: list[str]) -> list[tuple]:
    """naming_edges by its definition, every test against every namesake."""
    by_name = d._code_names(paths)

    def shared(a: str, b: str) -> int:
        ours = {p for p in a.split("/")[:-1] if p not in d.TEST_DIRS}
        return len(ours & set(b.split("/")[:-1]))

    out = []
    for test in paths:
        if not d.is_test(test):
            continue
        candidates = by_name.get(d.subject(test) or "", [])
        if candidates:
            best = max(shared(test, c) for c in candidates)
            for target in sorted(c for c in candidates if shared(test, c) == best)[:2]:
                out.append((test, target, "tests", 1.0))
    return sorted(out)


def test_pairing_tests_gives_the_edges_of_its_definition_on_random_trees():
    rng = random.Random(35)
    folders = ["src", "lib", "pkg", "a", "b", "c", "tests", "test", "spec", "x", "core"]
    names = ["x", "y", "client", "index", "__init__", "main"]
    for _ in range(200):
        paths = set()
        for _ in range(rng.randrange(1, 40)):
            parts = [rng.choice(folders) for _ in range(rng.randrange(0, 5))]
            name = rng.choice(names)
            if rng.random() < 0.5:
                name = rng.choice([f"test_{name}", f"{name}_test", f"{name}.test"])
            paths.add("/".join([*parts, name + rng.choice([".py", ".js", ".go"])]))
        listed = sorted(paths)
        assert sorted(d.naming_edges(listed)) == _brute_force(listed)


# --- imports --------------------------------------------------------------------------


def _resolve_all(files: dict[str, list[str]], language: str, go_module: str | None = None):
    """Every file's imports resolved against the repository of those files."""
    paths = frozenset(files)
    out = []
    for path, modules in files.items():
        imports = [{"module": m, "names": [], "relation": "import", "line": 1} for m in modules]
        out += [
            (path, e["target"]) for e in resolve_imports(path, imports, language, paths, go_module)
        ]
    return out


def _go_package(n: int) -> dict[str, list[str]]:
    """One package folder: n test files (sorted before the code) importing the package."""
    files: dict[str, list[str]] = {"go.mod": [], "pkg/zz.go": []}
    files.update({f"pkg/a{i:04d}_test.go": ["example.com/m/pkg"] for i in range(n)})
    return files


def test_go_package_of_many_files_resolves_in_linear_work():
    edges = _resolve_all(_go_package(N), "go", "example.com/m")
    assert len(edges) == N and {t for _, t in edges} == {"pkg/zz.go"}
    assert _growth(lambda n: _resolve_all(_go_package(n), "go", "example.com/m")) < LINEAR


def _java_modules(n: int, module: str) -> dict[str, list[str]]:
    """n modules with the same package com.acme and class Util, each importing `module`."""
    return {f"m{i:04d}/src/com/acme/Util.java": [module] for i in range(n)}


def test_java_classes_of_one_name_in_many_modules_resolve_in_linear_work():
    for module in ("com.acme.Util", "com.acme.*"):
        edges = _resolve_all(_java_modules(N, module), "java")
        # every module's import is its own class: the nearest of the namesakes, not itself
        assert edges == [], module  # the nearest is the importing file itself: no self edge
        assert _growth(lambda n, m=module: _resolve_all(_java_modules(n, m), "java")) < LINEAR


def test_java_import_picks_the_nearest_of_many_namesakes_in_linear_work():
    def layout(n: int) -> dict[str, list[str]]:
        files = {f"m{i:04d}/src/com/acme/Util.java": [] for i in range(n)}
        files.update({f"m{i:04d}/src/com/acme/app/App.java": ["com.acme.Util"] for i in range(n)})
        return files

    edges = _resolve_all(layout(N), "java")
    assert sorted(edges) == [
        (f"m{i:04d}/src/com/acme/app/App.java", f"m{i:04d}/src/com/acme/Util.java")
        for i in range(N)
    ]
    assert _growth(lambda n: _resolve_all(layout(n), "java")) < LINEAR


def test_python_top_level_package_in_many_folders_resolves_in_linear_work():
    def layout(n: int) -> dict[str, list[str]]:
        # n top-level folders each with a package x: an import of a missing x.nothere
        # looks at every one of them
        files = {f"d{i:04d}/x/__init__.py": ["x.nothere", "x.sub"] for i in range(n)}
        files[f"d{n - 1:04d}/x/sub.py"] = []
        return files

    edges = _resolve_all(layout(N), "python")
    assert {t for _, t in edges} == {f"d{N - 1:04d}/x/sub.py"} and len(edges) == N
    assert _growth(lambda n: _resolve_all(layout(n), "python")) < LINEAR


def test_resolution_keeps_its_answers_on_the_namesake_layouts():
    paths = frozenset(
        [f"m{i}/src/com/acme/Util.java" for i in range(3)]
        + ["m1/src/com/acme/app/App.java", "lib/a/x/__init__.py", "lib/b/x/y.py", "x/z.py"]
    )
    app = "m1/src/com/acme/app/App.java"
    assert resolve_import(app, "com.acme.Util", "java", paths) == "m1/src/com/acme/Util.java"
    assert resolve_import(app, "com.acme.*", "java", paths) == "m1/src/com/acme/Util.java"
    assert resolve_import("x/z.py", "x.z", "python", paths) == "x/z.py"


def test_pairing_reads_the_crowded_folders_only_where_they_change_the_answer(monkeypatch):
    # every folder lists more namesakes than the cap: the answer is still the definition's
    monkeypatch.setattr(d, "MAX_NAMESAKE_WORK", 1)
    rng = random.Random(3)
    folders = ["src", "lib", "a", "b", "c", "tests", "x"]
    for _ in range(300):
        paths = set()
        for _ in range(rng.randrange(1, 60)):
            parts = [rng.choice(folders) for _ in range(rng.randrange(0, 4))]
            name = rng.choice(["x", "test_x", "x_test", "y", "test_y"])
            paths.add("/".join([*parts, name + ".py"]))
        listed = sorted(paths)
        assert sorted(d.naming_edges(listed)) == _brute_force(listed)


def test_pairing_stays_linear_past_its_work_for_the_repository(monkeypatch):
    # tests under two crowded folders each (a/, c/) and no work left for the repository:
    # those in a folder of namesakes (d0001/) still find theirs through it; the others
    # (e0001/, where no namesake is) would have to read the crowded folders' lists, and get
    # the first files instead; all in linear work
    monkeypatch.setattr(d, "MAX_NAMESAKE_WORK", 8)
    monkeypatch.setattr(d, "MAX_NAMING_WORK", 0)

    def layout(n: int) -> list[str]:
        files = [f"{top}/{mid}/d{i:04d}/x.py" for i in range(n) for top in "ab" for mid in "cd"]
        return files + [f"a/c/{sub}{i:04d}/test_x.py" for i in range(n) for sub in "de"]

    edges = sorted((s, t) for s, t, _, _ in d.naming_edges(layout(N)))
    assert [e for e in edges if "/d" in e[0]] == [
        (f"a/c/d{i:04d}/test_x.py", f"a/c/d{i:04d}/x.py") for i in range(N)
    ]
    assert [e for e in edges if "/e0007" in e[0]] == [
        ("a/c/e0007/test_x.py", "a/c/d0000/x.py"),
        ("a/c/e0007/test_x.py", "a/c/d0001/x.py"),
    ]
    assert _growth(lambda n: d.naming_edges(layout(n))) < LINEAR
