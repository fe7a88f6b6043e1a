"""Path arguments of the MCP tools (related_files' path, the path_prefix of search_code,
find_symbol and explain_search), which take citations: hostile values fail with one clean
line, and a citation naming another tenant's repository reaches nothing of it and says
nothing about it that an unknown name would not."""

import pytest

from tests.mcp.harness import shop_server, text_of
from tests.mcp.test_mcp_stdio import FILES

SECRET = {"vault/keys.py": "SIGNING_KEY = 'hunter2'\n\n\ndef rotate_keys():\n    return 1\n"}
NOISE = ("plpy.", "validation error", "pydantic", "Error executing tool", "Traceback", "\n")


@pytest.fixture(scope="module")
def shop(snapshots, tmp_path_factory):
    """One stdio server for acme in the shop checkout, beside secret indexed for another
    tenant, which these tests call in turn (they only read)."""
    repos = {"shop": ("acme", FILES), "secret": ("other", SECRET)}
    with shop_server(snapshots, tmp_path_factory, repos) as server:
        yield server


REFUSED = [
    "../../etc/passwd",
    "/etc/passwd",
    "shop:../../etc/passwd",
    "shop:/etc/passwd",
    "shop/../../etc/passwd",
    "C:\\Windows\\system.ini",
    "shop/cart.py\x00.txt",
    "a/" * 5_120,  # 10 KB
]
# names no file (the loader stores no name with control characters): nothing found, and
# the message quotes it with its control characters escaped
NOTHING = ["shop/\x1b[31mcart.py", "shop:shop/cart.py\x1b]0;owned\x07", "shop:shop/\x85"]


def _calls(value):
    return [
        ("related_files", {"path": value}),
        ("search_code", {"question": "cart", "path_prefix": value}),
        ("find_symbol", {"name": "Cart", "path_prefix": value}),
        ("explain_search", {"question": "cart", "path_prefix": value}),
    ]


@pytest.mark.parametrize("value", REFUSED, ids=lambda v: repr(v[:24]))
def test_hostile_paths_fail_with_one_clean_line(shop, value):
    for result in shop.calls(_calls(value)):
        text = text_of(result)
        assert result.is_error, text
        assert 0 < len(text) < 400, text
        for noise in NOISE:
            assert noise not in text, text
        assert "\x00" not in text


@pytest.mark.parametrize("value", NOTHING, ids=repr)
def test_control_characters_find_nothing_and_are_never_echoed_raw(shop, value):
    for result in shop.calls(_calls(value)):
        text = text_of(result)
        assert not result.is_error, text
        assert result.structured_content["rows"] == [], text
        assert not any(c in text for c in "\x1b\x07\x85"), text


def test_another_tenants_repository_is_an_unknown_name(shop):
    """Named as repo, in a citation, or as a path_prefix, another tenant's repository gives
    what a name nobody uses gives, and none of its files."""
    results = shop.calls(
        [
            ("related_files", {"path": "vault/keys.py", "repo": "secret"}),
            ("related_files", {"path": "vault/keys.py", "repo": "nosuch"}),
            ("related_files", {"path": "secret:vault/keys.py"}),
            ("related_files", {"path": "nosuch:vault/keys.py"}),
            ("search_code", {"question": "signing key rotate", "path_prefix": "secret:vault/"}),
            ("find_symbol", {"name": "rotate_keys", "path_prefix": "secret:vault/"}),
            ("find_symbol", {"name": "rotate_keys"}),
        ],
    )
    named, unknown, cited, cited_unknown, search, symbol, anywhere = results
    assert named.is_error and unknown.is_error
    assert text_of(named).replace("secret", "X") == text_of(unknown).replace("nosuch", "X")
    assert cited.structured_content["rows"] == []
    assert text_of(cited).replace("secret", "X") == text_of(cited_unknown).replace("nosuch", "X")
    for result in (search, symbol, anywhere):
        assert not result.is_error, text_of(result)
        assert all(r["repository"] == "shop" for r in result.structured_content["rows"])
        assert "hunter2" not in text_of(result) and "vault/keys.py" not in text_of(result)
