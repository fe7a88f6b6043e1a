"""codesift_db.citations: the one citation format, and the ways a path argument is read."""

import pytest
from codesift_db.citations import Reading, citation, nearest_paths, readings, unsafe_path


def test_citation_format():
    assert citation("flask", "src/flask/app.py", 10, 42) == "flask:src/flask/app.py:10-42"
    assert citation("flask", "src/flask/app.py") == "flask:src/flask/app.py"
    assert citation("flask", "a.py", 7) == "flask:a.py:7-7"


@pytest.mark.parametrize(
    ("text", "first_repo_reading"),
    [
        ("flask:src/app.py", Reading("flask", "src/app.py")),
        ("flask:src/app.py:10-42", Reading("flask", "src/app.py")),
        ("flask:src/app.py:10", Reading("flask", "src/app.py")),
        ("flask/src/app.py", Reading("flask", "src/app.py")),
        ("flask/src/app.py:3-4", Reading("flask", "src/app.py")),
        (" flask:./src/app.py ", Reading("flask", "src/app.py")),
    ],
)
def test_every_form_reads_as_the_file(text, first_repo_reading):
    options = readings(text, {"flask", "click"})
    assert options[0].repo is None  # the most literal first: a folder may bear the name
    assert first_repo_reading in options


def test_a_bare_path_and_unknown_leading_words():
    assert readings("src/app.py", {"flask"}) == [Reading(None, "src/app.py")]
    assert readings("src/app.py:3-9", {"flask"}) == [
        Reading(None, "src/app.py:3-9"),
        Reading(None, "src/app.py"),
    ]
    # a leading word that names no repository in scope is part of the path
    assert all(r.repo is None for r in readings("other:src/app.py", {"flask"}))


def test_a_repository_name_may_hold_a_separator():
    options = readings("org/app:src/a.py:3-9", {"org/app", "org"})
    assert options.index(Reading("org/app", "src/a.py")) < options.index(
        Reading("org", "app:src/a.py")
    )


def test_click_in_click():
    """click's code lives in click/: 'click/core.py' is first the path as given."""
    options = readings("click/core.py", {"click"})
    assert options == [Reading(None, "click/core.py"), Reading("click", "core.py")]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "is absolute"),
        ("\\server\\share", "is absolute"),
        ("C:\\Windows", "is absolute"),
        ("~/secrets", "is absolute"),
        ("../x.py", "goes up a folder ('..')"),
        ("a/../../x.py", "goes up a folder ('..')"),
        ("a\\..\\x.py", "goes up a folder ('..')"),
    ],
)
def test_unsafe_paths(path, why):
    assert unsafe_path(path) == why


@pytest.mark.parametrize(
    "path",
    # control characters: no file has them (the loader stores none); found nowhere, quoted
    # through shown()
    ["src/app.py", "a..b/c.py", "...", "src/.hidden", "über/ä.py", "tab\tname.py", "a\x1bb"],
)
def test_safe_paths(path):
    assert unsafe_path(path) is None


def test_nearest_paths_are_citations():
    live = [("shop", "shop/cart.py"), ("shop", "shop/pricing.py"), ("blog", "cart.py")]
    near = nearest_paths(["shop/carts.py"], live)
    assert near[0] == "shop:shop/cart.py"
    assert nearest_paths(["x/cart.py"], live)[:2] == ["shop:shop/cart.py", "blog:cart.py"]
    assert nearest_paths(["zzzz/qqqq.rs"], live) == []


def test_shown_escapes_control_characters_and_cuts():
    from codesift_db.citations import shown

    assert shown("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"
    assert shown("x" * 500) == "x" * 200 + "..."
