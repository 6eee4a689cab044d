"""The ``tutor audit`` subcommand's arguments, apart from the audit itself.

Every ``tutor`` command builds the whole parser, so this module imports only
the link names and the base time limit: the audit's runner (the sandbox, the
speed probe, subprocesses) loads only when ``tutor audit`` runs.
"""

from __future__ import annotations

import argparse

from exercises.audit.constants import EXPECTATIONS, LINKS
from tutor.sandbox.audit_limit import AUDIT_BASE_S


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``audit`` subcommand to an argparse subparsers object; return its parser."""
    p = subparsers.add_parser(
        "audit", help=f"audit a GPT: {len(LINKS)} links in order, one verdict each, the first failure named",
        description=f"Run the audit ({', '.join(LINKS)}) on the model FACTORY() in FILE.py builds. FACTORY takes "
                    "no arguments and returns an nn.Module, (model, optimizer), or a dict with 'model' and any of "
                    "'optimizer', 'tokenizer', 'pad_id', 'train_step', 'evaluate', 'scheduler', 'scaler', 'forward' "
                    "('optimizer' and 'scheduler' may each be a list, stepped in order; 'forward' is a function "
                    "(model, idx) -> logits for an interface the audit cannot drive). "
                    "nanoGPT-style, Hugging Face-style and engine-style models are recognised; the report "
                    "says which.")
    p.add_argument("target", metavar="FILE.py:FACTORY", help="a Python file and the factory function in it")
    p.add_argument("--vocab", type=int, metavar="V", help="the vocabulary size the model claims "
                   "(default: read from its logits)")
    p.add_argument("--block", type=int, metavar="T", help="the longest sequence it accepts "
                   "(default: config.block_size, else 64)")
    p.add_argument("--device", default=argparse.SUPPRESS, metavar="D",
                   help="cpu, cuda or auto (default: the global --device, else auto)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"stop the audit after S seconds (default: {AUDIT_BASE_S:g} s on a quiet 2-core machine, "
                        "scaled by the speed probe the audit runs first, or by TUTOR_TIMEOUT_SCALE)")
    p.add_argument("--allow-read", action="append", default=[], metavar="PATH", dest="allow_read",
                   help="let the factory read PATH (a file or folder) outside its own folder: its model code, a "
                        "checkpoint, a git mirror; repeatable. A read the audit refused is named in its report")
    p.add_argument("--expect", action="append", default=[], choices=sorted(EXPECTATIONS), metavar="CONVENTION",
                   help="hold the model to a convention, so that a departure fails its link instead of warning: "
                        "sdpa, every attention module computes causal SDPA at 1/sqrt(D) (no other scale, soft-cap "
                        "or bias); repeatable")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p
