"""``tutor audit FILE.py:FACTORY``: prove the chain on a model you did not write.

Seed 004, the final exercise. The learner's file is untrusted code that may
be broken: it runs in a separate process (``python -m exercises.audit``),
inside a fresh temporary folder, under a time limit, and this process never
imports it (nor torch). Exit status: 0 every link holds, 1 a link failed,
2 a usage error (no such file, no such factory, a bad option), 3 the factory
raised, the forward pass crashed, or the audit ran past its time limit.

Wire it into ``tutor.cli`` with two lines:

    from tutor import audit_cmd          # at the top
    audit_cmd.add_parser(sub)            # in build_parser, after the other subcommands

and dispatch ``"audit": audit_cmd.run`` in ``main``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASHED = 0, 1, 2, 3
DEFAULT_TIMEOUT_S = 300


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``audit`` subcommand to an argparse subparsers object; return its parser."""
    p = subparsers.add_parser(
        "audit", help="audit a GPT: ten links in order, one verdict each, the first failure named",
        description="Run the capstone audit (TOKENIZER, ALIGNMENT, CAUSALITY, SHAPE, INIT, REGISTRATION, "
                    "GRADIENTS, OWNERSHIP, UPDATE, CAPABILITY) on the model FACTORY() in FILE.py builds. "
                    "FACTORY takes no arguments and returns an nn.Module, or (model, optimizer).")
    p.add_argument("target", metavar="FILE.py:FACTORY", help="a Python file and the factory function in it")
    p.add_argument("--vocab", type=int, metavar="V", help="the vocabulary size the model claims "
                   "(default: read from its logits)")
    p.add_argument("--block", type=int, metavar="T", help="the longest sequence it accepts "
                   "(default: config.block_size, else 64)")
    p.add_argument("--device", default=argparse.SUPPRESS, metavar="D",
                   help="cpu, cuda or auto (default: the global --device, else auto)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"stop the audit after S seconds (default {DEFAULT_TIMEOUT_S})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)
    return p


def _fail(sentence: str) -> None:
    sys.stderr.write(f"tutor: {sentence}\n")


def _split_target(target: str) -> tuple[str, str]:
    path, sep, factory = target.rpartition(":")
    if not sep or not path or not factory:
        raise ValueError(f"expected FILE.py:FACTORY, got {target!r}; for example: tutor audit mygpt.py:build")
    if not factory.isidentifier():
        raise ValueError(f"{factory!r} is not a Python name; name the factory function after the colon")
    return path, factory


def _device(requested: str) -> str:
    if requested in ("cpu", "cuda"):
        return requested
    if requested != "auto":
        raise ValueError(f"unknown device {requested!r}; use cpu, cuda or auto")
    return "auto"


def run(args) -> int:
    """Run the audit of ``args.target`` in a separate process and print its report."""
    try:
        path, factory = _split_target(args.target)
        device = _device(getattr(args, "device", "auto") or "auto")
        for name, value in (("--vocab", args.vocab), ("--block", args.block)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
    except ValueError as exc:
        _fail(str(exc))
        return EXIT_USAGE
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        _fail(f"no such file: {path}; pass the path to a Python file, e.g. tutor audit mygpt.py:build")
        return EXIT_USAGE
    command = [sys.executable, "-m", "exercises.audit", path, factory, "--device", device, "--json"]
    if args.vocab is not None:
        command += ["--vocab", str(args.vocab)]
    if args.block is not None:
        command += ["--block", str(args.block)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_source_root(), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="tutor-audit-") as folder:
        try:
            done = subprocess.run(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=args.timeout,
                                  preexec_fn=_cap_memory if _cpu_only(device) else None)
        except subprocess.TimeoutExpired:
            _fail(f"the audit did not finish within {args.timeout:g} s and was stopped; the forward pass or "
                  "training may hang (raise --timeout if the model is just slow)")
            return EXIT_CRASHED
    if done.returncode == EXIT_USAGE:
        _fail((done.stderr.strip().splitlines() or ["the audit could not start"])[-1].removeprefix("audit: "))
        return EXIT_USAGE
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        _fail(f"the audit process died (exit {done.returncode}) without a report: {tail}")
        return EXIT_CRASHED
    code = {"crashed": EXIT_CRASHED, "failed": EXIT_FAILED}.get(report.get("status"), EXIT_OK)
    text = report.pop("text", "")
    if args.json:
        report["exit_code"] = code
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return code
    sys.stdout.write(text + "\n")
    if code == EXIT_CRASHED:
        _fail(report.get("error", "the model could not be audited"))
    return code


def _cpu_only(device: str) -> bool:
    """Whether the audit will surely run on the CPU (a cap on address space breaks CUDA)."""
    return device == "cpu" or (device == "auto" and not os.path.exists("/dev/nvidiactl"))


def _cap_memory() -> None:
    """In the audit process: cap its address space, like the check worker's children
    (TUTOR_MEMORY_CAP_MB, default 8192), so a runaway model fails instead of the machine."""
    try:
        import resource
        cap = int(os.environ.get("TUTOR_MEMORY_CAP_MB", "8192")) * 1024 * 1024
        if cap > 0:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def _source_root() -> str:
    from exercises.faults import source_root

    return str(source_root())
