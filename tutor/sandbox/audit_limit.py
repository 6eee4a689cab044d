"""The audit's time limit: the speed probe's line the audit process writes first, and the limit it gives.

``tutor audit`` reads this without torch; the process that measures and
audits is :mod:`tutor.sandbox.audit_process`. The limit is set like an
exercise's (:func:`tutor.sandbox.speed.time_limit`): ``AUDIT_BASE_S`` on the
quiet 2-core reference machine, times the probe's slowdown, or an explicit
scale.
"""

from __future__ import annotations

import json

from tutor.sandbox import speed

#: Starts the stderr line that carries the probe's figure (``Speed.to_wire()`` as JSON, or null).
SPEED_MARKER = "tutor-audit-speed: "
#: An audit's time limit on the reference machine (2 quiet cores), seconds. An audit of a
#: 2-layer C = 64 GPT takes a few seconds of CPU there, CAPABILITY's two overfits most of
#: it; the limit leaves room for models tens of times larger, and for a probe that ran in
#: a lull of a busy machine (0.13 s of work can miss a burst: an audit beside a full test
#: suite took over 120 s after a probe that found the machine 0.8x the reference).
AUDIT_BASE_S = 300.0
#: Seconds ``tutor audit`` waits for the probe's line (torch's import and the probe) before the limit
#: is the base limit as written.
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
