"""JSON answers read an item at a time (:mod:`tutor.instructor.json_items`): an array parsed over chunks gives
what ``json.loads`` gives, wherever the chunks cut it; what does not parse is one sentence; a Gradescope
submission's JSON answers read the same way."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_grade_batch import autograder, run_command
from tutor.instructor import json_items
from tutor.model.errors import UsageError

values = st.recursive(st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
                      | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=8)


class Reads(io.StringIO):
    """A text file that counts what is asked of it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.asked: list[int] = []

    def read(self, size=-1):
        self.asked.append(size)
        return super().read(size)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(values, max_size=6), chunk=st.integers(1, 9), space=st.sampled_from(["", " ", "\n", "\r\n  "]))
def test_an_array_over_chunks_reads_as_json_loads_does(items, chunk, space):
    text = "\ufeff" + space + "[" + space + ("," + space).join(json.dumps(v) for v in items) + space + "]" + space
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(json_items, "JSON_CHUNK", chunk)
        fh = Reads(text)
        got = [item for _, item in json_items.items(fh)]
    assert got == json.loads(text.lstrip("\ufeff"))



def test_a_large_array_is_never_read_whole():
    text = "[" + ",".join(json.dumps({"learner": f"l{n}", "answer": "b" * 100}) for n in range(5000)) + "]"
    fh = Reads(text)
    assert sum(1 for _ in json_items.items(fh)) == 5000
    assert max(fh.asked) <= 2 * json_items.JSON_CHUNK and len(text) > 8 * json_items.JSON_CHUNK


@pytest.mark.parametrize("text, sentence", [
    ('[{"a": 1},\n{"a": 2}', "Expecting ',' delimiter, line 2"),
    ('[{"a": 1},\n{"a": }]', "Expecting value, line 2"),
    ('[{"a": 1}] x', "Extra data, line 1"),
    ('[{"a": 1},]', "Expecting value, line 1"),
    ('[{"a": "never ends}]', "Unterminated string"),
])
def test_an_array_that_does_not_parse_is_one_sentence(text, sentence):
    with pytest.raises(UsageError, match="the answers is not a JSON array of objects") as caught:
        list(json_items.items(io.StringIO(text)))
    assert sentence in str(caught.value) and "write one object per line" in str(caught.value)


def test_an_item_longer_than_the_limit_is_refused_not_buffered(monkeypatch):
    monkeypatch.setattr(json_items, "JSON_CHUNK", 16)
    monkeypatch.setattr(json_items, "MAX_JSON_ITEM", 100)
    with pytest.raises(UsageError, match="item 2 is longer than"):
        list(json_items.items(io.StringIO('[{"a": 1}, {"a": "' + "x" * 1000 + '"}]')))


def test_json_lines_name_the_line_that_is_not_json():
    got = list(json_items.items(io.StringIO('{"a": 1}\n\n{"a": \n[1]\n')))
    assert [n for n, _ in got] == [1, 3, 4] and isinstance(got[1][1], json_items.Bad)
    assert got[1][1].problem.startswith("line 3 is not a JSON object") and got[2][1] == [1]


@pytest.mark.parametrize("name, text, sentence", [
    ("answers.jsonl", '{"exercise": "head-split", "answer": "b"}\n{"exercise": \n', "answers.jsonl: line 2 is not a JSON object"),
    ("answers.json", '[{"exercise": "head-split", "answer": "b"}', "answers.json is not a JSON array of objects"),
])
def test_a_submissions_json_that_does_not_parse_is_one_sentence_in_results_json(tmp_path, name, text, sentence):
    root = autograder(tmp_path, {name: text}, 'exercises = ["head-split"]\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    assert reply.code == 2 and result["score"] == 0.0 and sentence in result["output"]


def test_a_submissions_answers_file_over_the_limit_is_refused(tmp_path, monkeypatch):
    from tutor.instructor import gradescope
    monkeypatch.setattr(gradescope, "MAX_ANSWERS_BYTES", 2**20)
    root = autograder(tmp_path, {"answers.csv": "exercise,answer\n" + "head-split,b\n" * 100_000}, 'exercises = ["head-split"]\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    assert reply.code == 2 and "answers.csv is larger than 1 MiB" in result["output"]


def test_a_submissions_json_array_is_graded(tmp_path):
    root = autograder(tmp_path, {"answers.json": '[{"exercise": "head-split", "answer": "b"},\n'
                                                 ' {"exercise": "cache-offset", "answer": false}]'},
                      'exercises = ["head-split", "cache-offset"]\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    assert reply.code == 0 and [t["name"].split()[0] for t in reply.data["result"]["tests"]] == ["head-split", "cache-offset"]
    assert reply.data["result"]["tests"][1]["status"] == "passed"

