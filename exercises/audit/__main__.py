"""``python -m exercises.audit FILE FACTORY [--vocab V] [--block T] [--device D] [--expect sdpa] [--json]``.

What ``tutor audit`` starts in a separate process. The report goes to
stdout (text, or one JSON object with ``--json``, its ``text`` included)
and nothing else does: run as a program, the process keeps a private copy
of file descriptor 1 for the report and points descriptor 1 itself at
stderr, so whatever the audited code writes — ``print``, ``sys.__stdout__``,
C code, a subprocess, 10 MB without a newline — lands on stderr, between
the ``STAGE_MARKER`` lines that name each step as it starts. Exit status as
``AuditReport.exit_code``, or 2 for a missing file or factory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from exercises.audit.constants import EXIT_USAGE, EXPECTATIONS, STAGE_MARKER


def main(argv: list[str] | None = None, report_to=None) -> int:
    """Parse the arguments, import the factory, audit it, print the report; return the exit status.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        report_to: the text stream the report goes to (default: stdout as it
            is when ``main`` starts).
    """
    parser = argparse.ArgumentParser(prog="python -m exercises.audit")
    parser.add_argument("file")
    parser.add_argument("factory")
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--block", type=int)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--expect", action="append", default=[], choices=sorted(EXPECTATIONS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out, err = report_to or sys.stdout, sys.stderr
    sys.stdout = sys.stderr  # the audited code may print; keep stdout for the report

    def stage(_fraction: float, what: str) -> None:
        # What is running now, for the message if the time limit stops the audit.
        try:
            err.write(f"\n{STAGE_MARKER}{what}\n")
            err.flush()
        except OSError:  # stderr full (the output cap): the report still goes out
            pass

    from exercises.audit.loading import load_factory
    from exercises.audit.reads import ReadWatch, sentence
    from exercises.audit.report import AuditReport

    watch = ReadWatch().install()
    watch.on = True
    stage(0.0, f"the import of {os.path.basename(args.file)}")
    try:
        factory = load_factory(args.file, args.factory)
    except (FileNotFoundError, LookupError) as exc:
        sys.stderr.write(f"audit: {exc}\n")
        return EXIT_USAGE
    except BaseException as exc:  # the learner's module raised on import
        report = AuditReport.crashed(f"importing the file raised {type(exc).__name__}: {exc}")
    else:
        import torch

        from exercises.audit.pipeline import audit

        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        report = audit(factory, vocab_size=args.vocab, block_size=args.block, device=device, progress=stage,
                       expect=args.expect)
    watch.on = False
    refused = watch.refused()
    if refused:  # a read the confinement refused explains the failure better than the audited code's own words
        report.setup["refused_reads"] = refused
        if report.status == "crashed":
            report.error = f"{report.error}; {sentence(refused)}"
    stage(1.0, "the end of the audit, after every link ran (something the model's file started may keep "
               "the process alive)")
    data = report.to_dict()
    data["text"] = report.text()
    out.write((json.dumps(data) if args.json else data["text"]) + "\n")
    out.flush()
    return report.exit_code


def private_stdout():
    """A text stream on a private copy of descriptor 1; descriptor 1 itself then writes to stderr."""
    report_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return os.fdopen(report_fd, "w", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(report_to=private_stdout()))
