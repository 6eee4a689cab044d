"""``tutor audit FILE.py:FACTORY``: prove the chain on a model you did not write.

Seed 004, the final exercise. The learner's file is untrusted code that may
be broken: it runs in a separate process (``python -m
tutor.sandbox.audit_process``, which measures the machine and runs
``exercises.audit``), inside a fresh temporary folder, under a time limit
scaled by that measurement, and this process never
imports it (nor torch): it only parses the source (``ast``) to refuse at
once a factory name the file plainly does not define, naming those it does. Exit status: 0 every link holds, 1 a link failed,
2 a usage error (no such file, no such factory, a bad option), 3 the factory
raised or returned no model, the forward pass crashed, or the audit ran past
its time limit. An error is one sentence on stderr; with ``--json`` stdout
holds one JSON object in every case: the report (status ok, failed or
crashed, with ``exit_code``), or ``{"status": "usage_error" | "timeout" |
"crashed", "error": SENTENCE, "exit_code": 2 | 3}`` when there is none.

Whatever the audited code prints goes to a file, never to this terminal:
more than ``FLOOD_BYTES`` of it is an *output flood*, said in one line on
stderr (and as ``output_flood`` in the JSON) beside the report; the file may
not grow past ``OUTPUT_CAP_BYTES``.

``tutor.cli`` adds the subcommand with ``add_parser`` (:mod:`tutor.cli.audit_args`) and dispatches to ``run``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import time

from exercises.audit.constants import (EXIT_CRASHED, EXIT_FAILED, EXIT_OK, EXIT_USAGE, FLOOD_BYTES,
                                       OUTPUT_CAP_BYTES, STAGE_MARKER, TAIL_BYTES, memory_cap_bytes)
from exercises.audit.loading import missing_factory
from exercises.faults import source_root
from tutor.cli.audit_args import add_parser
from tutor.cli.output import envelope
from tutor.sandbox import confine, landlock, reads
from tutor.sandbox.audit_limit import SPEED_MARKER, audit_limit
from tutor.sandbox.speed import ScaleError, TimeLimit, environment_scale

__all__ = ["EXIT_CRASHED", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "STAGE_MARKER", "add_parser", "flood_sentence",
           "last_stage", "run", "timeout_sentence"]


def _fail(sentence: str) -> None:
    sys.stderr.write(f"tutor: {sentence}\n")


def _error(code: int, status: str, sentence: str, as_json: bool) -> int:
    """Report an audit that gave no report: the sentence on stderr, and with --json one JSON object
    in the envelope every command's has (``tutor.cli.output.envelope``)."""
    _fail(sentence)
    if as_json:
        sys.stdout.write(json.dumps(envelope({"status": status, "error": sentence}, code), indent=2) + "\n")
    return code


def _wait(process: subprocess.Popen, output_path: str, timeout_s: float | None, flag: float | None,
          environment: float | None) -> tuple[int | None, TimeLimit]:
    """Wait for the audit process within its limit; (its exit status, or None when the limit stopped it;
    the limit). ``--timeout`` fixes the limit; else it follows the speed probe the process reports first
    and how late that line came (``audit_limit``); until it arrives the limit is the base at the largest
    scale, however long the line takes."""
    started = time.monotonic()
    fixed = TimeLimit(timeout_s, 1.0, "flag") if timeout_s is not None else None
    limit = fixed or audit_limit("", flag, environment)
    probed = fixed is not None
    while True:
        try:
            return process.wait(timeout=0.2), limit
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.monotonic() - started
        if not probed:
            head = _head(output_path, 1 << 16)
            if SPEED_MARKER in head:
                limit, probed = audit_limit(head, flag, environment, arrived_s=elapsed), True
        if elapsed > limit.seconds:
            process.kill()
            process.wait()
            return None, limit


def _head(path: str, limit: int) -> str:
    """The first ``limit`` bytes of a file, as text."""
    with open(path, "rb") as f:
        return f.read(limit).decode("utf-8", errors="replace")


def _text(stream: str | bytes | None) -> str:
    """Captured output as text (a timeout hands it over as bytes)."""
    if isinstance(stream, bytes):
        return stream.decode("utf-8", errors="replace")
    return stream or ""


def last_stage(stderr: str | bytes | None) -> str | None:
    """The step the audit process last said it started (see ``STAGE_MARKER``), or None."""
    text = _text(stderr)
    at = text.rfind(STAGE_MARKER)
    if at < 0:
        return None
    return text[at + len(STAGE_MARKER):].split("\n", 1)[0].strip() or None


def timeout_sentence(timeout_s: float, stderr: str | bytes | None, limit: TimeLimit | None = None) -> str:
    """The message for an audit stopped by its time limit, naming the step it was in when known and,
    for a limit the probe scaled, why it was that long."""
    stage = last_stage(stderr)
    where = (f"during {stage}" if stage else
             "before it named a step (it may hang in the factory or the audit's model calls)")
    why = ""
    if limit is not None and limit.source != "flag":
        said = limit.why.replace("this exercise", "the audit").replace(" at the worker's start", " before the audit")
        why = f" ({said})"
    return f"the audit did not finish within {timeout_s:g} s{why} and was stopped {where}; " \
           "raise --timeout if the model is just slow"


def _last_line(stderr: str | bytes | None, default: str) -> str:
    """The last line of the audit process's stderr that is not a step marker."""
    lines = [line for line in _text(stderr).strip().splitlines()
             if line.strip() and not line.startswith(STAGE_MARKER)]
    return lines[-1] if lines else default


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
    """Run the audit of ``args.target`` in a separate process and print its report.

    Returns the exit status (module docstring); never raises for the model's
    faults or for bad input, which are reported as one sentence.
    """
    as_json = bool(getattr(args, "json", False))
    try:
        path, factory = _split_target(args.target)
        device = _device(getattr(args, "device", "auto") or "auto")
        for name, value in (("--vocab", args.vocab), ("--block", args.block)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
    except ValueError as exc:
        return _error(EXIT_USAGE, "usage_error", str(exc), as_json)
    given, path = path, os.path.abspath(path)
    if not os.path.isfile(path):
        return _error(EXIT_USAGE, "usage_error",
                      f"no such file: {path}; pass the path to a Python file, e.g. tutor audit mygpt.py:build", as_json)
    absent = missing_factory(path, factory)  # the source read, not run: the file itself runs only confined
    if absent is not None:
        return _error(EXIT_USAGE, "usage_error", absent.replace(path, given), as_json)
    try:
        scale = environment_scale()
    except ScaleError as exc:
        return _error(EXIT_USAGE, "usage_error", str(exc), as_json)
    granted = [os.path.realpath(os.path.expanduser(p)) for p in getattr(args, "allow_read", None) or []]
    missing = [p for p in granted if not os.path.exists(p)]
    if missing:
        return _error(EXIT_USAGE, "usage_error", f"--allow-read {missing[0]}: no such file or folder; name one that "
                      "exists, e.g. --allow-read ~/.cache/huggingface", as_json)
    if args.timeout is not None and not args.timeout > 0:
        return _error(EXIT_USAGE, "usage_error", f"--timeout must be a number of seconds above 0, got {args.timeout:g}",
                      as_json)
    command = [sys.executable, "-m", "tutor.sandbox.audit_process", path, factory, "--device", device, "--json"]
    if args.vocab is not None:
        command += ["--vocab", str(args.vocab)]
    if args.block is not None:
        command += ["--block", str(args.block)]
    for convention in getattr(args, "expect", None) or []:
        command += ["--expect", convention]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_source_root(), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="tutor-audit-") as root:
        work, report_path, output_path = (os.path.join(root, name) for name in ("work", "report.json", "output.log"))
        os.mkdir(work)
        with open(report_path, "wb") as report_file, open(output_path, "wb") as output_file:
            policy = _audit_policy(work, path, granted)
            process = subprocess.Popen(command, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=report_file,
                                       stderr=output_file,
                                       preexec_fn=functools.partial(_limits, _cpu_only(device), policy))
            returncode, limit = _wait(process, output_path, args.timeout, getattr(args, "timeout_scale", None), scale)
        stdout = _read(report_path, OUTPUT_CAP_BYTES)
        stderr, output_bytes = _read(output_path, TAIL_BYTES), os.path.getsize(output_path)
    flood = flood_sentence(output_bytes)
    if returncode is None:
        return _error(EXIT_CRASHED, "timeout", timeout_sentence(limit.seconds, stderr, limit) + _after(flood),
                      as_json)
    if returncode == EXIT_USAGE:
        sentence = _last_line(stderr, "the audit could not start").removeprefix("audit: ")
        return _error(EXIT_USAGE, "usage_error", sentence, as_json)
    try:
        report = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        stage = last_stage(stderr)
        during = f" during {stage}" if stage else ""
        return _error(EXIT_CRASHED, "crashed", f"the audit process died (exit {returncode}){during} without a "
                      f"report: {_last_line(stderr, 'no output')}" + _after(flood), as_json)
    code = {"crashed": EXIT_CRASHED, "failed": EXIT_FAILED}.get(report.get("status"), EXIT_OK)
    text = report.pop("text", "")
    if flood:
        _fail(f"note: {flood}")
        report["output_flood"] = flood
    if code == EXIT_CRASHED:  # said once, on stderr; with --json the report carries it too
        _fail(f"could not audit {args.target}: {report.get('error') or 'the model could not be audited'}")
    report["time_limit"] = limit.to_dict()
    if args.json:
        report["error"] = report.get("error") or None
        sys.stdout.write(json.dumps(envelope(report, code), indent=2) + "\n")
    elif code != EXIT_CRASHED:
        sys.stdout.write(text + "\n")
    return code


def flood_sentence(output_bytes: int) -> str | None:
    """The note for an output flood (more than ``FLOOD_BYTES`` written by the audited code), or None."""
    if output_bytes <= FLOOD_BYTES:
        return None
    capped = "; it reached the cap, so its later writes failed" if output_bytes >= OUTPUT_CAP_BYTES else ""
    return (f"the audited code wrote {output_bytes / 1e6:.1f} MB of output (an output flood); the tutor kept it out "
            f"of the report and read only its last {TAIL_BYTES / 1e6:.1f} MB{capped}")


def _after(flood: str | None) -> str:
    return f", after an output flood ({flood.split(' (an output flood)')[0].removeprefix('the audited code ')})" \
        if flood else ""


def _read(path: str, limit: int) -> str:
    """The last ``limit`` bytes of a file, as text."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - limit))
        return f.read().decode("utf-8", errors="replace")


def _cpu_only(device: str) -> bool:
    """Whether the audit will surely run on the CPU (a cap on address space breaks CUDA)."""
    return device == "cpu" or (device == "auto" and not os.path.exists("/dev/nvidiactl"))


def _limits(cap_memory: bool, policy=None) -> None:
    """In the audit process, before it starts: cap the size of any file it writes (``OUTPUT_CAP_BYTES``:
    its output log) and, on the CPU, its address space like the check worker's children
    (``constants.memory_cap_bytes``), so a runaway model fails instead of the machine; then confine it
    (``policy``, from :func:`_audit_policy`): it writes only its work folder, opens no TCP connection."""
    try:
        # Unix only; the audit's child limits itself where it can
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_CAP_BYTES, OUTPUT_CAP_BYTES))
        cap = memory_cap_bytes()
        if cap_memory and cap > 0:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass
    if policy is not None:
        try:
            landlock.restrict(*policy)
        except OSError:
            pass  # the audit still runs; :func:`_audit_policy` found Landlock, so this is the kernel's refusal


def _audit_policy(work: str, audited: str, granted: list[str] = ()):
    """The Landlock policy of the audit process, as ``(Policy, abi)``, or None where confinement is off or absent.

    The audited model's own folder, the tutor's packages (``tutor``,
    ``engine``, ``exercises``: the audit's instruments), the Python
    installation and the paths ``--allow-read`` grants (``granted``) are
    readable; only ``work`` is writable; every TCP bind and connect is
    refused (ABI 4 and later). The folder that holds the packages is only
    listed, so that Python finds them there: in a checkout it also holds
    the learner's ``progress/``, the git history and whatever else the
    owner keeps, none of which a model under audit may read. With a grant,
    git's configuration files (``GIT_CONFIG``) are readable too: git
    refuses to run at all when one exists that it cannot read.
    """
    if not confine.enabled():
        return None
    abi = landlock.landlock_abi()
    if abi < 1:
        return None
    executable = os.path.realpath(sys.executable)
    packages = [os.path.join(_source_root(), name) for name in reads.PRIVATE_PACKAGES]
    extra = [os.path.dirname(os.path.abspath(audited)), *packages, os.path.dirname(executable),
             os.path.dirname(os.path.abspath(sys.executable)), os.path.join(sys.prefix, "pyvenv.cfg"), *granted]
    if granted:  # a factory granted a git mirror runs git, which stops on a config file it may not read
        extra += [p for p in GIT_CONFIG if os.path.exists(p)]
    roots = reads.read_roots()
    return landlock.Policy(tree=os.path.realpath(work), read=roots + tuple(extra), network=True,
                           listed=(_source_root(),)), abi


#: git's configuration files, read-only to a factory granted reads outside its folder.
GIT_CONFIG = ("/etc/gitconfig", os.path.expanduser("~/.gitconfig"), os.path.expanduser("~/.config/git"))


def _source_root() -> str:
    return str(source_root())
