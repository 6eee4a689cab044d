"""The command line's grammar: every subcommand and option of ``tutor``, and nothing else.

``build_parser`` is read by :mod:`tutor.cli`; an argument that does not parse
raises :class:`ArgumentsError` (one sentence, exit 2) instead of argparse's
own exit, so ``--json`` can still answer with one JSON object.
"""

from __future__ import annotations

import argparse

from tutor import audit_cmd
from tutor.runner import DEVICES


class ArgumentsError(Exception):
    """Arguments argparse could not read; the message is one sentence naming the fix."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence, exit 2, like every other input error
        raise ArgumentsError(f"{message}; see '{self.prog} --help'.")


def build_parser() -> argparse.ArgumentParser:
    """The ``tutor`` parser: global options, then one subcommand (none opens the TUI)."""
    parser = _Parser(prog="tutor", description="Learn PyTorch and GPT internals by breaking real code on "
                     "purpose. With no command, opens the terminal UI.")
    parser.add_argument("--progress-dir", help="folder for progress files (default: TUTOR_PROGRESS_DIR, "
                        "the checkout's progress/, or your user data folder)")
    parser.add_argument("--learner", help="learner name (default: TUTOR_LEARNER or your login name)")
    parser.add_argument("--device", choices=DEVICES, default="auto",
                        help="where checks run (default: auto, CUDA when present)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("list", help="list the exercises")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("show", help="show an exercise: prompt, answer format, the fault's diff")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("run", help="do one exercise headlessly: predict, run the check, grade, save")
    p.add_argument("id")
    p.add_argument("--predict", required=True, metavar="ANSWER", help="your prediction (see 'tutor show ID')")
    p.add_argument("--explain", metavar="TEXT", help="your explain-back note, saved with the attempt")
    p.add_argument("--confidence", type=_percent, metavar="PERCENT",
                   help="how sure you are, 50 (a guess between two) to 100 (certain); saved with the attempt")
    p.add_argument("--no-save", action="store_true", help="do not record the attempt")
    p.add_argument("--seed", type=_seed, metavar="N", help="the check's seed (default: 0; for the capstone, "
                   "the number of your earlier attempts, so each attempt meets a new mystery)")
    p.add_argument("--json", action="store_true")
    _shared(p)

    p = sub.add_parser("check", help="run checks without a prediction: does each fault show?")
    p.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)

    p = sub.add_parser("progress", help="review saved attempts and notes")
    p.add_argument("--all", action="store_true", help="one line per learner with a file in the progress folder")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    p = sub.add_parser("review", help="exercises due for review (answered wrongly or unsurely: back after "
                       "1, 3 and 7 days)")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    audit_cmd.add_parser(sub)
    return parser


def _percent(text: str) -> int:
    """Read ``--confidence``: a whole percent, 50 to 100 (a trailing % is allowed)."""
    try:
        value = int(text.strip().rstrip("%"))
    except ValueError:
        value = -1
    if not 50 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a whole percent from 50 to 100, got {text!r}")
    return value


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
    if learner:
        p.add_argument("--learner", default=argparse.SUPPRESS)
        p.add_argument("--progress-dir", default=argparse.SUPPRESS)
