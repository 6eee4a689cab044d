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
#: Seconds from the audit process's start to its probe line on the quiet reference machine: Python, the
#: import of torch and the probe (measured 2.4-4.1 s on 2 quiet cores). A line that comes later than this
#: is itself a measurement: the machine is that many times slower, whatever the probe's own 0.13 s found.
PROBE_LINE_S = 4.0


def audit_limit(stderr: str, flag: float | None = None, environment: float | None = None,
                arrived_s: float | None = None) -> speed.TimeLimit:
    """The audit's limit from the probe's line in its stderr so far, or from an explicit scale
    (``--timeout-scale``, then ``TUTOR_TIMEOUT_SCALE``), which wins.

    The probe's scale is the larger of its own factor and the line's lateness (``arrived_s`` over
    ``PROBE_LINE_S``): a busy machine that answers the probe late gets a limit scaled by how late, not
    the limit as written. With no line at all the limit is the base at the largest scale
    (``speed.MAX_SCALE``): a hang still ends, a slow machine is not cut short.
    """
    figure = None
    at = stderr.find(SPEED_MARKER)
    if at >= 0:
        try:
            figure = speed.Speed.from_wire(json.loads(stderr[at + len(SPEED_MARKER):].split("\n", 1)[0]))
        except ValueError:
            figure = None
    limit = speed.time_limit(AUDIT_BASE_S, flag=flag, environment=environment, speed=figure)
    if limit.source in ("flag", "environment"):
        return limit
    late = (arrived_s or 0.0) / PROBE_LINE_S
    if at < 0 and arrived_s is None:
        return speed.TimeLimit(AUDIT_BASE_S, speed.MAX_SCALE, "probe", None)
    factor = max(figure.factor if figure is not None else 0.0, late)
    if factor <= 0:
        return speed.TimeLimit(AUDIT_BASE_S, speed.MAX_SCALE, "probe", None)
    return speed.TimeLimit(AUDIT_BASE_S, speed.probe_scale(factor), "probe", factor)
