"""What kind of file a path names: changelog, test, bench, template, doc, translation, example,
config or code. The path prior of the ranking (pipeline/recency.py), the derived edges
(derived_edges.py) and the lookups (lookup.py) read the same patterns."""

import re
from functools import lru_cache

TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$"
    r"|\.(test|spec)(-d)?\.[a-z]+$|Tests?\.(java|cs|kt)$|_spec\.rb$"
)
# pytest's fixtures for the tests of a folder: test code wherever it is, unless documentation
FIXTURES_PATH = re.compile(r"(^|/)conftest\.py$")
# benchmark suites (asv's, cargo's benches/): like tests, they call the code by its names
BENCH_PATH = re.compile(r"(^|/)(bench|benches|benchmarks?|asv_bench)/", re.I)
CHANGELOG_PATH = re.compile(r"(^|/)(changelog|changes|history|news|releases?)[^/]*$", re.I)
# message catalogs (gettext, XLIFF): every user-facing message again, once per language, so a
# question quoting an error message matches each of them as well as the code that raises it
TRANSLATION_PATH = re.compile(r"\.(po|pot|xlf|xliff)$|(^|/)LC_MESSAGES/", re.I)
# legal and credits files (LICENSE, LICENSE-MIT, COPYING, NOTICE, AUTHORS) are prose
DOC_PATH = re.compile(
    r"(^|/)docs?/|\.(rst|md|markdown|txt|adoc|rdoc|ipynb)$"
    r"|(^|/)(licen[cs]e|copying|notice|authors|contributors)(-[^/.]*)?$",
    re.I,
)
# programs that show how to use the code, not the code itself (a JavaScript monorepo's
# playground/ holds the apps its end-to-end tests drive)
EXAMPLE_PATH = re.compile(r"(^|/)(examples?|samples?|demos?|playgrounds?)/", re.I)
TEMPLATE_PATH = re.compile(r"(^|/)\.github/|(^|/)[^/]*_TEMPLATE\b", re.I)
# ...rc without an extension is the Unix name for a settings file (pylintrc, npmrc)
CONFIG_PATH = re.compile(
    r"\.(toml|cfg|ini|ya?ml|json|lock|conf|editorconfig)$|(^|/)go\.(mod|sum|work)$"
    r"|(^|/)(\.[^/]+|Makefile|Dockerfile|[A-Za-z]+rc)$",
    re.I,
)


# a pure function of the path, asked about every candidate of every query: the same paths
# come back query after query, and the regexes cost more than the rest of the stage
@lru_cache(maxsize=65_536)
def file_kind(path: str) -> str:
    """changelog, test, bench, template, doc, translation, example, config or code."""
    if CHANGELOG_PATH.search(path):
        return "changelog"
    if TEST_PATH.search(path):
        return "test"
    if BENCH_PATH.search(path):
        return "bench"
    if TEMPLATE_PATH.search(path):
        return "template"
    if TRANSLATION_PATH.search(path):
        return "translation"
    if DOC_PATH.search(path):
        return "doc"
    if EXAMPLE_PATH.search(path):
        return "example"
    if FIXTURES_PATH.search(path):
        return "test"
    if CONFIG_PATH.search(path):
        return "config"
    return "code"
