"""Edit mode's text rules, pinned where they live (tutor/model/patch.py): what a learner's file may be, the
sentence for a syntax error, the diff shown, and how a unified patch finds its place in the file."""

from __future__ import annotations

import pytest

from tutor.model import patch
from tutor.model.patch import EditError, PatchError, apply_patch, check_text, syntax_problem, unified_diff


def test_a_learners_file_is_text_under_the_cap_without_nul_and_with_unix_line_ends():
    assert check_text("m.py", "a\r\nb\rc\n") == "a\nb\nc\n"
    assert check_text("m.py", "x" * patch.MAX_EDIT_BYTES) == "x" * patch.MAX_EDIT_BYTES
    with pytest.raises(EditError) as caught:
        check_text("m.py", "x" * (patch.MAX_EDIT_BYTES + 1))
    assert str(caught.value) == ("your m.py is 65,537 bytes; edits over 64 KiB are refused — edit the subject file, "
                                 "do not paste another program into it")
    with pytest.raises(EditError, match="^your m.py must be text$"):
        check_text("m.py", b"bytes")
    with pytest.raises(EditError, match="^your m.py holds a NUL byte; save it as plain UTF-8 text$"):
        check_text("m.py", "a\x00b")


def test_a_syntax_error_is_named_by_its_line_and_column_and_compiled_as_the_learner_wrote_it(monkeypatch):
    assert syntax_problem("m.py", "def f(:\n") == "SyntaxError in your m.py at line 1, column 7: invalid syntax"
    assert syntax_problem("m.py", "x = 1\n") is None
    # compiled with no future flags of the tutor's own (its annotations are lazy; the learner's are not)
    assert syntax_problem("m.py", "a: (b := 1) = 2\n") is None
    assert syntax_problem("m.py", "a\x00") == "your m.py cannot be compiled: source code string cannot contain null bytes"

    def no_column(*args, **kwargs):
        raise SyntaxError("invalid syntax", ("m.py", 3, None, "x"))
    monkeypatch.setattr(patch, "compile", no_column, raising=False)
    assert syntax_problem("m.py", "x") == "SyntaxError in your m.py at line 3: invalid syntax"


def test_the_diff_names_both_sides_and_keeps_the_context_asked_for():
    before = "".join(f"{i}\n" for i in range(1, 8))
    after = before.replace("4\n", "four\n")
    assert unified_diff("m.py", before, after, context=1) == \
        "--- a/m.py\n+++ b/m.py\n@@ -3,3 +3,3 @@\n 3\n-4\n+four\n 5\n"
    long = "".join(f"{i}\n" for i in range(1, 21))
    assert unified_diff("m.py", long, long.replace("10\n", "ten\n")).count("\n ") == 6  # three each side by default
    assert unified_diff("m.py", "a", "b") == \
        "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"


def test_a_patch_written_on_windows_or_against_a_file_without_a_final_newline_applies():
    assert apply_patch("a\nold\nc\n", "@@ -2 +2 @@\r\n-old\r\n+new\r\n", "m.py") == "a\nnew\nc\n"
    no_newline = "@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n"
    assert apply_patch("old", no_newline, "m.py") == "new\n"
    assert apply_patch("old", "\\ stray\n" + no_newline, "m.py") == "new\n"  # a marker outside a hunk is skipped
    both = "@@ -1,2 +1,2 @@\n keep\n-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n"
    assert apply_patch("keep\nold", both, "m.py") == "keep\nnew"
    context_last = "--- a/m.py\n\\ stray\n@@ -1,2 +1,2 @@\n-old\n+new\n keep\n\\ No newline at end of file\n\\ again\n"
    assert apply_patch("old\nkeep", context_last, "m.py") == "new\nkeep"


@pytest.mark.parametrize("text, diff, sentence", [
    ("a\n", "just text\n", "the patch holds no hunk (no line starting with '@@'); make it with 'diff -u faulted.py "
                            "yours.py' or 'git diff'"),
    ("a\n", "@@ -1 +1 @@\n*a\n", "hunk 1 (@@ -1 +1 @@) holds a line that starts with '*', not ' ', '-' or '+'; write "
                                  "the patch with 'diff -u' or 'git diff'"),
    ("a\nb\n", "@@ -1,2 +1,2 @@\n-a\n+A\n@@ -2 +2 @@\n-b\n+B\n",
     "hunk 1 (@@ -1,2 +1,2 @@) ends before the 2 old and 2 new lines its header states; the patch was cut or edited "
     "by hand")])
def test_a_patch_that_is_not_one_says_how_to_make_it(text, diff, sentence):
    with pytest.raises(PatchError) as caught:
        apply_patch(text, diff, "m.py")
    assert str(caught.value) == sentence


def test_a_hunk_not_found_names_its_first_line_and_where_it_was_looked_for():
    long = "x" * 80
    with pytest.raises(PatchError) as caught:
        apply_patch("a\n", f"@@ -1 +1 @@\n-{long}\n+b\n", "m.py")
    assert str(caught.value) == (f"hunk 1 (@@ -1 +1 @@) does not apply to m.py: its lines (around {long[:60]!r}) are "
                                 "not in the file; make the patch against the file you were given to edit "
                                 "(the faulted file; 'tutor show ID' shows the fault)")
    with pytest.raises(PatchError, match="its lines \\(blank lines only\\) are not in the file;"):
        apply_patch("a\n", "@@ -1,2 +1,3 @@\n \n \n+b\n", "m.py")  # only blank context, nowhere in the file
    with pytest.raises(PatchError, match="hunk 2 .* its lines \\(around 'a'\\) are not in the file below line 2, "
                                         "where hunk 1 ends;"):
        apply_patch("x\na\ny\n", "@@ -2 +2 @@\n-a\n+A\n@@ -2 +2 @@\n-a\n+B\n", "m.py")  # a is above, taken


def test_a_hunk_applies_at_the_place_nearest_its_line_and_never_before_the_last_hunk():
    text = "a\nx\ny\nz\nw\na\nv\n"
    assert apply_patch(text, "@@ -6 +6 @@\n-a\n+A\n", "m.py") == "a\nx\ny\nz\nw\nA\nv\n"
    assert apply_patch(text, "@@ -1 +1 @@\n-a\n+A\n", "m.py") == "A\nx\ny\nz\nw\na\nv\n"
    twice = "@@ -1 +1 @@\n-a\n+A\n@@ -1 +1 @@\n-a\n+B\n"  # the second stated at line 1 too: found after the first
    assert apply_patch(text, twice, "m.py") == "A\nx\ny\nz\nw\nB\nv\n"
