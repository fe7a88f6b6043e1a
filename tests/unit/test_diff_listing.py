"""diff_context's listings without a database: within the limit exactly, best first,
one item per role and file, names kept to one line, bounded work for thousands of
neighbours."""

import pytest
from codesift_db.diff_listing import LISTED, entry, listings, pack_with_listing
from codesift_db.tokens import estimate_tokens


def _n(i: int, path: str = "tests/test_a.py", role: str = "test", symbol: str | None = None):
    return {
        "role": role,
        "repository": "r",
        "ref": "head",
        "path": path,
        "blob_sha": "ab" * 20,
        "start_line": 10 * i + 1,
        "end_line": 10 * i + 8,
        "symbol": symbol or f"test_{i}",
        "_key": (role, path, 10 * i + 1),
    }


@pytest.mark.parametrize("limit", [0, 5, 40, 100, 1000, 10_000])
def test_listings_stay_within_the_limit_best_first(limit):
    left_out = [_n(i, path=f"tests/test_{i % 3}.py") for i in range(300)]
    found = listings(left_out, limit)
    assert sum(i["tokens"] for i in found) <= limit
    for item in found:
        assert item["tokens"] == estimate_tokens(item["packed_text"])
        names = [line.split(" ", 1)[1] for line in item["packed_text"].split("\n")[1:]]
        numbers = [int(n.split("_")[1]) for n in names]
        assert numbers == sorted(numbers) and item["listed"] == len(names)
    listed = sum(i["listed"] for i in found)
    assert listed == 300 if limit == 10_000 else listed < 300
    if limit >= 1000:
        assert listed > 50
    # the best come first: what is listed is a prefix of each file's members
    for item in found:
        mine = [n for n in left_out if n["path"] == item["path"]]
        assert item["packed_text"].split("\n")[1:] == [entry(n) for n in mine[: item["listed"]]]


def test_one_item_per_role_and_file_in_the_order_of_their_best():
    left_out = [_n(0, "b.py"), _n(1, "a.py"), _n(2, "b.py", role="caller"), _n(3, "b.py")]
    found = listings(left_out, 10_000)
    assert [(i["role"], i["path"], i["listed"]) for i in found] == [
        (LISTED["test"], "b.py", 2),
        (LISTED["test"], "a.py", 1),
        (LISTED["caller"], "b.py", 1),
    ]
    first = found[0]
    assert (first["start_line"], first["end_line"]) == (1, 38)
    assert first["packed_text"].startswith("# r:b.py:1-38 (2 tests not packed: ")


def test_a_name_cannot_add_lines_of_its_own():
    hostile = _n(0, symbol="x\n# r:other.py:1-9 (9 tests not packed\n1-2 fake")
    [item] = listings([hostile], 10_000)
    assert item["packed_text"].count("\n") == 1  # the header and one entry
    assert item["listed"] == 1


def test_thousands_of_neighbours_in_one_file_are_listed_in_one_pass():
    left_out = [_n(i) for i in range(5000)]
    found = listings(left_out, 200_000)
    assert [i["listed"] for i in found] == [5000]
    assert found[0]["tokens"] <= 200_000


def test_bodies_that_fit_leave_nothing_to_list():
    body = {**_n(0), "text": "def test_0():\n    pass"}
    packed = pack_with_listing([body], [body], 4000)
    assert [p["_key"] for p in packed] == [body["_key"]] and "listed" not in packed[0]
    # a budget that cannot hold the body lists it instead, after the change
    change = {**_n(9, path="pkg/core.py", role="change"), "text": "def f():\n    return 2"}
    del change["_key"]
    big = {**body, "text": "x = 1\n" * 400}
    packed = pack_with_listing([change, big], [big], 80)
    assert [(p["role"], p.get("listed")) for p in packed] == [("change", None), ("test_list", 1)]
    assert sum(p["tokens"] for p in packed) <= 80


def test_once_some_are_listed_a_callers_body_goes_before_a_tests():
    change = {**_n(9, path="pkg/core.py", role="change"), "text": "def f():\n    return 2"}
    del change["_key"]
    body = "\n".join(f"    v{i} = f({i})" for i in range(12))
    test = {**_n(0), "text": body}
    caller = {**_n(1, path="pkg/use.py", role="caller"), "text": body}
    extra = [_n(i) for i in range(2, 30)]  # tests whose bodies were never offered
    for budget in (300, 400, 600):
        packed = pack_with_listing([change, test, caller], [test, caller, *extra], budget)
        assert sum(p["tokens"] for p in packed) <= budget
        roles = [p["role"] for p in packed]
        # the caller's body stays; the test's goes first (listed) when room is short
        assert roles[:2] == ["change", "caller"] and roles[-1] == LISTED["test"], budget
    assert "test" not in [
        p["role"] for p in pack_with_listing([change, test, caller], [test, caller, *extra], 300)
    ]
