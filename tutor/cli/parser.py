"""The command line's grammar: every subcommand and option of ``tutor``, and nothing else.

``build_parser`` is read by :mod:`tutor.cli`; an argument that does not parse
raises :class:`ArgumentsError` (one sentence, exit 2) instead of argparse's
own exit, so ``--json`` can still answer with one JSON object.
"""

from __future__ import annotations

import argparse
import re

from tutor.cli import audit_args
from tutor.model.attempts import GUESS
from tutor.sandbox.speed import ENV as SCALE_ENV, ScaleError, parse_scale


class ArgumentsError(Exception):
    """Arguments argparse could not read; the message is one sentence naming the fix."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Anything that starts like a negative number is a value, never an option: --predict -1/4,
        # --predict -1e-3 and --predict -.5 are answers (no option of tutor starts with a digit).
        self._negative_number_matcher = NEGATIVE_NUMBER

    def parse_known_args(self, args=None, namespace=None):
        self._reading = list(args) if args is not None else None  # what error() looks through for unknown options
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # one sentence, exit 2, like every other input error
        unknown = self._unknown_options()
        if unknown and message.startswith("the following arguments are required: "):
            # argparse checks what is missing before what is unknown: a mistyped option would hide behind
            # the required one it may have been meant as, so the unknown option is named first
            missing = message.removeprefix("the following arguments are required: ")
            raise ArgumentsError(f"'{self.prog}' has no option {', '.join(unknown)} (remove it or check its "
                                 f"spelling), and {_joined(missing.split(', '))} is required; see "
                                 f"'{self.prog} --help'.")
        prog = self._command_prog()
        raise ArgumentsError(f"{house_sentence(message, prog)}; see '{prog} --help'.")

    def _command_prog(self) -> str:
        """``tutor run`` where the arguments name the command ``run`` (the top parser reports what is left
        over after the command's parser ran), else this parser's own name."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for arg in getattr(self, "_reading", None) or ():
                    if arg in action.choices:
                        return action.choices[arg].prog
        return self.prog

    def _unknown_options(self) -> list[str]:
        """The options in the arguments being read that this parser does not know (nor abbreviates)."""
        unknown = []
        for arg in getattr(self, "_reading", None) or ():
            if arg == "--":
                break
            if not arg.startswith("-") or arg == "-" or self._negative_number_matcher.match(arg):
                continue
            name = arg.split("=", 1)[0]
            known = self._option_string_actions
            if name in known or (name.startswith("--") and any(o.startswith(name) for o in known)):
                continue
            if not name.startswith("--") and name[:2] in known:  # -j4: a short option with its value
                continue
            unknown.append(name)
        return unknown


_ARGUMENT = re.compile(r"argument (?P<name>[^:]+): (?P<detail>.*)$", re.S)
_CHOICE = re.compile(r"invalid choice: (?P<got>'.*?') \(choose from (?P<choices>.*)\)$", re.S)
_TYPED = re.compile(r"invalid (?P<type>\w+) value: (?P<got>.*)$", re.S)
#: How argparse's own type names read in a sentence.
_TYPE_WORDS = {"int": "a whole number", "float": "a number"}


def _joined(names: list[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def house_sentence(message: str, prog: str) -> str:
    """argparse's ``message`` as the tutor says any bad input: what is wrong and what to give instead.

    ``argument --seed: invalid int value: 'x'`` reads ``--seed expected a
    whole number, got 'x'``; an unknown option, a bad choice, a missing
    value or argument, and two options that exclude each other each get
    their own sentence; anything else loses only argparse's ``argument``.
    """
    if message.startswith("unrecognized arguments: "):
        extra = message.removeprefix("unrecognized arguments: ").split()
        options = [a for a in extra if a.startswith("-")]
        if options:
            return f"'{prog}' has no option {_joined(options)}: remove it or check its spelling"
        return (f"'{prog}' takes no argument {_joined([repr(a) for a in extra])} there: remove it, or quote a "
                "value that has spaces")
    if message.startswith("the following arguments are required: "):
        missing = message.removeprefix("the following arguments are required: ").split(", ")
        one = len(missing) == 1
        return f"{_joined(missing)} {'is' if one else 'are'} required: give {'it' if one else 'them'}"
    if message.startswith("one of the arguments ") and message.endswith(" is required"):
        names = message.removeprefix("one of the arguments ").removesuffix(" is required").split()
        return f"one of {_joined(names, 'or')} is required: give one"
    found = _ARGUMENT.match(message)
    if not found:
        return message
    name, detail = found["name"], found["detail"]
    if (choice := _CHOICE.match(detail)) is not None:
        choices = [c.strip().strip("'") for c in choice["choices"].split(",")]
        if name == "COMMAND":
            return f"{choice['got']} is no command of {prog}: use one of {_joined(choices, 'or')}"
        return f"{name} has no choice {choice['got']}: use one of {_joined(choices, 'or')}"
    if (typed := _TYPED.match(detail)) is not None:
        return f"{name} expected {_TYPE_WORDS.get(typed['type'], 'a ' + typed['type'])}, got {typed['got']}"
    if detail == "expected one argument":
        return f"{name} needs a value after it"
    if detail.startswith("not allowed with argument "):
        return f"{name} and {detail.removeprefix('not allowed with argument ')} cannot be given together: give one"
    if detail.startswith("ignored explicit argument "):
        return f"{name} takes no value, got {detail.removeprefix('ignored explicit argument ')}"
    return f"{name} {detail}" if detail.startswith("expected ") else f"{name}: {detail}"


#: ``--device`` values: :data:`tutor.sandbox.runner.DEVICES`, spelled here so that parsing the arguments
#: of ``tutor list`` does not import the runner (tests/test_import_hygiene.py holds them equal).
DEVICES = ("auto", "cpu", "cuda")

#: An argument that starts as a negative number does ("-1", "-1/4", "-1e-3", "-.5", "-0x2").
NEGATIVE_NUMBER = re.compile(r"^-\.?\d")


def build_parser() -> argparse.ArgumentParser:
    """The ``tutor`` parser: global options, then one subcommand (none opens the TUI)."""
    parser = _Parser(prog="tutor", description="Learn PyTorch and GPT internals by breaking real code on "
                     "purpose. With no command, opens the terminal UI.")
    parser.add_argument("--progress-dir", help="folder for progress files (default: TUTOR_PROGRESS_DIR, "
                        "the checkout's progress/, or your user data folder)")
    parser.add_argument("--learner", help="learner name (default: TUTOR_LEARNER or your login name)")
    parser.add_argument("--device", choices=DEVICES, default="auto",
                        help="where checks run (default: auto, CUDA when present)")
    parser.add_argument("--version", action="store_true", help="print the version of tutor and exit")
    parser.add_argument("--timeout-scale", type=_scale, metavar="X", default=None, help=SCALE_HELP)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("list", help="list the exercises")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("show", help="show an exercise (prompt, answer format, the fault's diff) or a set "
                                    "(its primer and its exercises in order)")
    p.add_argument("id", metavar="ID|SET", help="an exercise id, or a set's id or title")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("run", help="do one exercise headlessly: predict, run the check, grade, save")
    p.add_argument("id")
    p.add_argument("--predict", required=True, metavar="ANSWER", help="your prediction (see 'tutor show ID')")
    p.add_argument("--explain", metavar="TEXT", help="your explain-back note, saved with the attempt")
    p.add_argument("--confidence", type=_percent, metavar="PERCENT",
                   help="how sure you are, from the question's chance (1/k of k choices, 50 for yes/no, 10 for a "
                        "typed answer; 'guess' says it is one) to 100 (certain); saved with the attempt")
    p.add_argument("--no-save", action="store_true", help="do not record the attempt")
    p.add_argument("--seed", type=_seed, metavar="N", help="the check's seed (default: 0; for the capstone, "
                   "the number of your earlier attempts, so each attempt meets a new mystery)")
    p.add_argument("--json", action="store_true")
    _shared(p)

    p = sub.add_parser("check", help="run checks without a prediction: does each fault show?")
    p.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    p.add_argument("--set", dest="set_ids", action="append", metavar="SET",
                   help="only this set (give --set again for more: their exercises together)")
    p.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                   help="run checks in N workers at once and report the wall time (default: 1 worker, "
                        "safe on 2 cores; each worker gets its share of the cores)")
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)

    p = sub.add_parser("doctor", help="run this first on a new machine: where the tutor and progress are, torch and "
                       "the device, each layer of the sandbox, and one check of each kind",
                       description="Say where the tutor runs from and where progress goes, the Python, torch and "
                       "device the check worker reports, whether each layer of the sandbox holds, and run a snippet "
                       "exercise, an engine exercise and a fix. Exit 0 all works; 1 a learner's runs do not; 3 the "
                       "check worker cannot start; 5 a learner's runs work but grading would refuse here (code "
                       "under check would run unconfined). Nothing is recorded.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _shared(p)

    p = sub.add_parser("progress", help="review saved attempts and notes")
    p.add_argument("--all", action="store_true", help="one line per learner with a file in the progress folder")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    _add_edit_parsers(sub)

    p = sub.add_parser("grade", help="grade a file of answers (CSV or JSON lines) on one warm worker",
                       description="Grade every row of an answers file: learner, exercise, answer, and optionally "
                       "note, submitted_at and seed. Each row's check runs now, on warm workers; the gradebook "
                       "(gradebook.csv) and Gradescope-style results (results.json) are written to --out.")
    p.add_argument("words", nargs="*", metavar="merge DIR", help="'merge DIR...': join the folders of graded "
                   "shards into one gradebook and results.json in --out")
    p.add_argument("--answers", metavar="FILE", help="the answers: a .csv file with a header row, "
                   "or JSON lines (.jsonl), one object per line; - reads standard input")
    p.add_argument("--fixes", metavar="DIR", help="fix-mode submissions: one folder per learner, in it a repaired "
                   "file (ID.py) or a patch (ID.diff) per exercise")
    p.add_argument("--assignment", metavar="FILE.toml", help="the assignment: exercises, points, due time, "
                   "hidden seeds, visibility (see docs/grading.md)")
    p.add_argument("--exercises", metavar="ID,...", help="the assignment as exercise ids, one point each")
    p.add_argument("--columns", metavar="FIELD=COLUMN,...", help="which column is which field, such as "
                   "learner=Email,exercise=Question,answer=Response")
    p.add_argument("--layout", choices=("long", "wide"), default=None, help="long: one row per answer; wide: one "
                   "row per student, one column per question (Canvas Student Analysis, Moodle Responses); default: "
                   "wide when the header is one of those")
    p.add_argument("--resume", action="store_true", help="carry on a grading that stopped: rows already in "
                   "--out's gradebook are not graded again")
    p.add_argument("--shard", metavar="K/N", help="grade only shard K of N (learners split by a stable hash)")
    p.add_argument("--out", metavar="DIR", help="where gradebook.csv and results.json go "
                   "(default: a folder beside the answers, <name>-graded)")
    p.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N",
                   help="check workers to run at once (default 1; at most the number of cores)")
    p.add_argument("--save", action="store_true", help="also record each graded answer in its learner's progress "
                   "file (with its note)")
    p.add_argument("--allow-unconfined", action="store_true", help=UNCONFINED_GRADE_HELP)
    p.add_argument("--hidden-seeds", type=_hidden_seeds, default=None, metavar="N", help=HIDDEN_GRADE_HELP)
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)
    p.add_argument("--progress-dir", default=argparse.SUPPRESS)

    p = sub.add_parser("gradescope", help="grade one Gradescope submission into /autograder/results/results.json",
                       description="Run as Gradescope's autograder does: read the submission folder "
                       "(answers.csv, answers.jsonl or answers.toml, and ID.py or ID.diff repairs), grade it "
                       "against the assignment and write results.json in Gradescope's format.")
    p.add_argument("--assignment", metavar="FILE.toml", help="the assignment (default: "
                   "/autograder/source/assignment.toml)")
    p.add_argument("--root", metavar="DIR", default="/autograder", help="the autograder folder (default /autograder)")
    p.add_argument("--submission", metavar="DIR", help="the submission (default: ROOT/submission)")
    p.add_argument("--results", metavar="FILE", help="where results.json goes (default: ROOT/results/results.json)")
    p.add_argument("--allow-unconfined", action="store_true", help=UNCONFINED_GRADE_HELP)
    p.add_argument("--hidden-seeds", type=_hidden_seeds, default=None, metavar="N", help=HIDDEN_GRADE_HELP)
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)

    p = sub.add_parser("report", help="a class report over a folder of progress files",
                       description="Per exercise: learners who tried, solved it on the first attempt, ever solved "
                       "it, the median number of attempts, the most common wrong predictions, and notes; "
                       "calibration per learner where confidences were saved. Reads only: damaged files are "
                       "named, never changed.")
    p.add_argument("folder", metavar="DIR", help="the folder of progress files (*.toml)")
    p.add_argument("--top", type=_jobs, default=3, metavar="N", help="wrong predictions shown per exercise (default 3)")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print one JSON object")
    shape.add_argument("--csv", action="store_true", help="print one CSV row per exercise")

    p = sub.add_parser("review", help="exercises due for review (answered wrongly or unsurely: back after "
                       "1, 3 and 7 days)")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    audit_args.add_parser(sub)
    return parser


def _add_edit_parsers(sub) -> None:
    """``tutor fix`` and ``tutor break``: the learner's own file, run and judged headlessly (edit mode)."""
    p = sub.add_parser("fix", help="repair an exercise's fault in your own copy; the tutor measures whether "
                       "it is fixed (on the capstone: find and fix the mystery's hidden fault)")
    p.add_argument("id")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", metavar="PATH", help="your whole repaired subject file")
    source.add_argument("--patch", metavar="FILE.diff", help="a unified diff against the faulted file")
    p.add_argument("--no-save", action="store_true", help="do not record the attempt or keep a working copy")
    p.add_argument("--no-instruments", action="store_true",
                   help="skip the engine's instruments (shape ledger, causality, cache, learning ledger)")
    p.add_argument("--seed", type=_seed, metavar="N", help="the capstone's mystery to hunt (default: the one "
                   "your last prediction met)")
    p.add_argument("--hidden-seeds", type=_hidden_seeds, default=None, metavar="N",
                   help="also judge the repair at N seeds drawn at random now, which nobody saw before "
                   "(0-8, default 1): a file that hard-codes or forges the clean output is not fixed at them")
    p.add_argument("--allow-unconfined", action="store_true", help=UNCONFINED_HELP)
    p.add_argument("--json", action="store_true")
    _shared(p)

    p = sub.add_parser("break", help="write your own fault into the clean subject file and predict what it does")
    p.add_argument("id")
    p.add_argument("--file", metavar="PATH", required=True, help="your whole edited subject file")
    p.add_argument("--predict", required=True, metavar="ANSWER",
                   help="what your fault will do: an answer of the exercise's kind, or free text")
    p.add_argument("--no-save", action="store_true", help="do not record the attempt or keep a working copy")
    p.add_argument("--no-instruments", action="store_true", help="skip the engine's instruments")
    p.add_argument("--allow-unconfined", action="store_true", help=UNCONFINED_HELP)
    p.add_argument("--json", action="store_true")
    _shared(p)


UNCONFINED_HELP = ("run someone else's file even where this machine cannot confine it (no Landlock): "
                   "it could then change files and grades")
MAX_HIDDEN_SEEDS = 8
UNCONFINED_GRADE_HELP = ("grade even where the checks cannot run confined (no Landlock, or TUTOR_CONFINE=off): "
                         "a learner's file could then change files and grades; refused without it")
HIDDEN_GRADE_HELP = ("judge each repair again at N seeds drawn afresh for this grading, clean against the "
                     "repair, beyond an assignment's own hidden_seeds (default 2)")


def _hidden_seeds(text: str) -> int:
    """Read ``--hidden-seeds``: a whole number from 0 to MAX_HIDDEN_SEEDS."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_HIDDEN_SEEDS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_HIDDEN_SEEDS}, got {text!r}")
    return value


SCALE_HELP = (f"multiply every check's time limit by X (default: {SCALE_ENV}, else the speed this machine "
              "shows when the check worker starts)")


def _scale(text: str) -> float:
    """Read ``--timeout-scale``: a number above 0."""
    try:
        return parse_scale(text)
    except ScaleError:
        raise argparse.ArgumentTypeError(f"expected a number above 0 such as 2 or 1.5, got {text!r}") from None


def _jobs(text: str) -> int:
    """Read ``-j``: a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number 1 or more, got {text!r}")
    return value


def _percent(text: str) -> int | str:
    """Read ``--confidence``: ``guess``, or a whole percent (a trailing % is allowed), checked against the
    exercise's own scale once it is known (:func:`tutor.cli.common.confidence_arg`)."""
    if text.strip().lower() == GUESS:
        return GUESS
    try:
        return int(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole percent up to 100, or '{GUESS}', got {text!r}") from None


def _seed(text: str) -> int:
    """Read ``--seed``: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number 0 or more, got {text!r}")
    return value


def _shared(p: argparse.ArgumentParser, learner: bool = True, device: bool = True) -> None:
    # The same options are accepted after the subcommand too.
    if device:
        p.add_argument("--device", choices=DEVICES, default=argparse.SUPPRESS)
        p.add_argument("--timeout-scale", type=_scale, metavar="X", default=argparse.SUPPRESS, help=SCALE_HELP)
    if learner:
        p.add_argument("--learner", default=argparse.SUPPRESS)
        p.add_argument("--progress-dir", default=argparse.SUPPRESS)
