"""Arguments that do not parse are said as every other bad input is: ``tutor: `` and one sentence naming what is
wrong and what to give instead, exit 2; never argparse's ``error: argument --x: ...``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.cli.parser import ArgumentsError, build_parser

TUTOR = str(Path(sys.executable).with_name("tutor"))


@pytest.mark.parametrize("argv, sentence", [
    (["run", "softmax-axis", "--predict", "yes", "--confidence", "50.5"],
     "--confidence expected a whole percent up to 100, or 'guess', got '50.5'; see 'tutor run --help'."),
    (["run", "softmax-axis", "--predict", "yes", "--seed", "x"],
     "--seed expected a whole number 0 or more, got 'x'; see 'tutor run --help'."),
    (["run", "softmax-axis", "--predict"], "--predict needs a value after it; see 'tutor run --help'."),
    (["run", "softmax-axis"], "--predict is required: give it; see 'tutor run --help'."),
    (["run", "softmax-axis", "--predict", "yes", "--device", "tpu"],
     "--device has no choice 'tpu': use one of auto, cpu or cuda; see 'tutor run --help'."),
    (["frob"], "'frob' is no command of tutor: use one of list, show, run, check, doctor, progress, fix, break, "
               "grade, gradescope, report, review or audit; see 'tutor --help'."),
    (["list", "--bogus"], "'tutor list' has no option --bogus: remove it or check its spelling; "
                          "see 'tutor list --help'."),
    (["run", "a", "b", "--predict", "yes"],
     "'tutor run' takes no argument 'b' there: remove it, or quote a value that has spaces; "
     "see 'tutor run --help'."),
    (["fix", "x", "--file", "a", "--patch", "b"],
     "--patch and --file cannot be given together: give one; see 'tutor fix --help'."),
    (["fix", "x"], "one of --file or --patch is required: give one; see 'tutor fix --help'."),
])
def test_each_kind_of_argument_error_is_one_sentence_with_its_fix(argv, sentence):
    with pytest.raises(ArgumentsError) as caught:
        build_parser().parse_args(argv)
    assert str(caught.value) == sentence


def test_a_bad_confidence_says_the_house_sentence_on_stderr_and_exits_2():
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([TUTOR, "run", "softmax-axis", "--predict", "yes", "--confidence", "50.5"],
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("tutor: --confidence expected a whole percent up to 100, or 'guess', got '50.5'; "
                           "see 'tutor run --help'.\n")
    as_json = subprocess.run([TUTOR, "run", "softmax-axis", "--predict", "yes", "--confidence", "50.5", "--json"],
                             capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] == proc.stderr.removeprefix("tutor: ").strip()
