"""What checks hand back: the exception line they show as evidence."""

from exercises.outcome import first_line


def test_first_line_is_the_tracebacks_last_line_start():
    assert first_line(RuntimeError("view size is not compatible\nwith input")) == \
        "RuntimeError: view size is not compatible"
    assert first_line(KeyError("character 'B' is not in the vocabulary")) == \
        "KeyError: character 'B' is not in the vocabulary"  # bare, not str()'s quoted form
    assert first_line(ValueError("abcdef"), with_type=False, limit=3) == "ab…"
    assert first_line(ValueError("abc"), with_type=False, limit=3) == "abc"  # not cut: as it is
    cut = first_line(RuntimeError("Given normalized_shape=[16, 64], expected input with shape [*, 16, 64]"), limit=60)
    assert cut == "RuntimeError: Given normalized_shape=[16, 64], expected…" and len(cut) <= 60
    assert first_line(TypeError()) == "TypeError: "
