"""The unified diff parser diff_context reads a pull request with: files, hunks, the base's
changed lines, git's path forms, and malformed input refused."""

import pytest
from codesift_db.diff_hunks import MAX_HUNK_CHARS, parse_unified_diff

DIFF = """diff --git a/pkg/mod.py b/pkg/mod.py
index 1111111..2222222 100644
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -3,4 +3,5 @@ def f():
 a
-b
+B
+C
 d
 e
@@ -20,2 +21,0 @@
-x
-y
diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+def g():
+    return 1
diff --git a/gone.py b/gone.py
deleted file mode 100644
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-old
Binary files a/img.png and b/img.png differ
"""


def test_files_hunks_and_changed_base_lines():
    mod, new, gone = parse_unified_diff(DIFF)
    assert (mod.old_path, mod.new_path) == ("pkg/mod.py", "pkg/mod.py")
    assert mod.old_changed == {4, 20, 21}  # b replaced; x, y deleted
    assert mod.old_gaps == {(4, 5)}  # B and C added between b and d
    assert [(h.old_start, h.new_start, h.new_end) for h in mod.hunks] == [(3, 3, 7), (20, 21, 21)]
    assert mod.hunks[0].text.splitlines()[2:4] == ["-b", "+B"]
    assert (new.old_path, new.new_path, new.old_changed, new.old_gaps) == (
        None,
        "new.py",
        set(),
        {(0, 1)},
    )
    assert (gone.old_path, gone.new_path, gone.old_changed) == ("gone.py", None, {1})


def test_a_gap_changes_only_the_definition_holding_both_its_lines():
    from codesift_db.diff_context import attribute, changed_lines

    base = [
        "class C:",
        "    def a(self):",
        "        x = 1",
        "        return x",
        "",
        "    def b(self):",
        "        return 2",
    ]
    head = [
        "class C:",
        "    def a(self):",
        "        return x",
        "",
        "    def b(self):",
        "        return 2",
    ]
    old, new, old_gaps, new_gaps = changed_lines(base, head)
    assert (old, new, new_gaps) == ({3}, set(), {(2, 3)})
    c = {"start_line": 1, "end_line": 6}
    a = {"start_line": 2, "end_line": 3}
    b = {"start_line": 5, "end_line": 6}
    touched, outside = attribute([c, a, b], new, new_gaps)
    assert touched == {id(a): [2]} and outside == []
    # a whole method removed: the gap lies between two definitions, in the class only
    head = ["class C:", "    def b(self):", "        return 2"]
    _, new, _, new_gaps = changed_lines(base, head)
    c, b = {"start_line": 1, "end_line": 3}, {"start_line": 2, "end_line": 3}
    touched, _ = attribute([c, b], new, new_gaps)
    assert id(b) not in touched


def test_quoted_paths_and_timestamps():
    diff = (
        '--- "a/caf\\303\\251 x.py"\t2024-01-01\n+++ "b/caf\\303\\251 x.py"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    (fd,) = parse_unified_diff(diff)
    assert fd.old_path == fd.new_path == "café x.py"


def test_a_huge_hunk_is_cut_and_malformed_input_refused():
    body = "".join(f"+line {i}\n" for i in range(10_000))
    (fd,) = parse_unified_diff(f"--- a/x\n+++ b/x\n@@ -0,0 +1,10000 @@\n{body}")
    assert len(fd.hunks[0].text) <= MAX_HUNK_CHARS + 40
    assert fd.hunks[0].text.endswith("... (hunk cut)")
    with pytest.raises(ValueError, match="malformed hunk header"):
        parse_unified_diff("--- a/x\n+++ b/x\n@@ -a +b @@\n")
    with pytest.raises(ValueError, match="before any"):
        parse_unified_diff("@@ -1 +1 @@\n-a\n+b\n")
    assert parse_unified_diff("not a diff\n") == []
