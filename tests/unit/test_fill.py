"""Pruning and packing with refills (pipeline/fill.py): a container the budget cannot hold
gives its place back to what it pruned."""

from codesift_db.pipeline.fill import REFILLS, fill


def item(id_, start, end, text, kind="class", path="m.py", score=1.0):
    return {
        "id": id_,
        "path": path,
        "start_line": start,
        "end_line": end,
        "text": text,
        "kind": kind,
        "score": score,
    }


def big_class():
    return item("cls", 1, 400, "\n".join(f"    value_{i} = compute({i})" for i in range(400)))


def method(name, start, score):
    return item(name, start, start + 1, f"def {name}(self):\n    return 1", "method", score=score)


def by_id(out):
    return {i["id"]: i for i in out}


def test_an_unpacked_class_gives_its_place_back_to_the_methods_it_pruned():
    items = [big_class(), method("a", 10, 0.9), method("b", 20, 0.8)]
    # the first item alone is truncated to fit (packing.py): put a small one before it
    items.insert(0, item("top", 1, 2, "def top():\n    pass", "function", path="t.py"))
    without = by_id(fill(items, 500, 0.88, refill=False))
    assert without["cls"]["decision"] == "not_packed:budget"
    assert without["a"]["decision"] == "pruned:overlap" and not without["a"]["packed"]
    out = fill(items, 500, 0.88, refill=True)
    found = by_id(out)
    assert found["a"]["packed"] and found["b"]["packed"]
    assert found["cls"]["decision"] == "not_packed:budget" and not found["cls"]["packed"]
    assert sorted(i["id"] for i in out) == ["a", "b", "cls", "top"]  # each once


def test_a_class_that_fits_keeps_its_methods_pruned():
    small = item("cls", 1, 30, "class A:\n" + "    x = 1\n" * 29)
    items = [item("top", 1, 2, "def top():\n    pass", "function", path="t.py"), small]
    items.append(method("a", 10, 0.9))
    found = by_id(fill(items, 4000, 0.88, refill=True))
    assert found["cls"]["packed"] and found["a"]["decision"] == "pruned:overlap"


def test_refills_are_bounded():
    # nested containers, each too big and each pruning the next: at most REFILLS rounds
    top = item("top", 1, 2, "def top():\n    pass", "function", path="t.py")
    nested = [
        item(f"c{d}", 1 + d, 400 - d, "\n".join(["    x = compute(1)"] * (399 - 2 * d)))
        for d in range(REFILLS + 3)
    ]
    out = fill([top, *nested], 300, 0.88, refill=True)
    assert len(out) == len(nested) + 1
    assert sum(1 for i in out if i["packed"]) >= 1
