"""``python -m tutor.sandbox.audit_process FILE FACTORY ...``: the audit process ``tutor audit`` starts.

It measures the machine first, then runs the audit (``exercises.audit``'s
``main``, same arguments). The measurement is the exercises' speed probe
(:func:`tutor.sandbox.speed.workload`, one thread, as each side of a plain
run gets on the 2-core reference machine), taken before the learner's file
is imported, so nothing the audited code does can change it. Its figure goes
to stderr as one line, ``SPEED_MARKER`` then JSON (``Speed.to_wire()``);
``tutor audit`` reads it and sets the audit's time limit from it
(:func:`audit_limit`), like an exercise's.
"""

from __future__ import annotations

import json
import sys

from tutor.sandbox import speed

#: Starts the stderr line that carries the probe's figure.
SPEED_MARKER = "tutor-audit-speed: "
#: An audit's time limit on the reference machine (2 quiet cores), seconds. An audit of a
#: 2-layer C = 64 GPT takes a few seconds of CPU there, CAPABILITY's two overfits most of
#: it; the limit leaves room for models tens of times larger, and for a probe that ran in
#: a lull of a busy machine (0.13 s of work can miss a burst: an audit beside a full test
#: suite took over 120 s after a probe that found the machine 0.8x the reference).
AUDIT_BASE_S = 300.0
#: Seconds ``tutor audit`` waits for the probe's line (torch's import and the probe) before the limit
#: is the base limit times ``speed.MAX_SCALE``.
PROBE_WAIT_S = speed.PROBE_TIMEOUT_S + 60.0


def audit_limit(stderr: str, flag: float | None = None, environment: float | None = None) -> speed.TimeLimit:
    """The audit's limit from the probe's line in its stderr so far (``AUDIT_BASE_S`` × the probe's
    scale), or from an explicit scale (``--timeout-scale``, then ``TUTOR_TIMEOUT_SCALE``), which wins;
    the base limit as written when none is known."""
    figure = None
    at = stderr.find(SPEED_MARKER)
    if at >= 0:
        try:
            figure = speed.Speed.from_wire(json.loads(stderr[at + len(SPEED_MARKER):].split("\n", 1)[0]))
        except ValueError:
            figure = None
    return speed.time_limit(AUDIT_BASE_S, flag=flag, environment=environment, speed=figure)


def probe() -> dict | None:
    """The probe's figure, measured here with one thread (``Speed.to_wire()``), or None if it fails."""
    try:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            runs = [speed.workload(torch)]
        finally:
            torch.set_num_threads(threads)
        return speed.Speed.of(runs).to_wire()
    except Exception:
        return None


def main() -> int:
    from exercises.audit.__main__ import main as audit_main, private_stdout

    report_to = private_stdout()
    figure = probe()
    sys.stderr.write(f"\n{SPEED_MARKER}{json.dumps(figure)}\n")
    sys.stderr.flush()
    return audit_main(report_to=report_to)


if __name__ == "__main__":
    sys.exit(main())
