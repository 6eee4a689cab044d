"""``python -m tutor.sandbox.audit_process FILE FACTORY ...``: the audit process ``tutor audit`` starts.

It measures the machine first, then runs the audit (``exercises.audit``'s
``main``, same arguments). The measurement is the exercises' speed probe
(:func:`tutor.sandbox.speed.workload`, one thread, as each side of a plain
run gets on the 2-core reference machine), taken before the learner's file
is imported, so nothing the audited code does can change it. Its figure goes
to stderr as one line (:data:`tutor.sandbox.audit_limit.SPEED_MARKER`, then
JSON); ``tutor audit`` sets the audit's time limit from it
(:func:`tutor.sandbox.audit_limit.audit_limit`), like an exercise's.
"""

from __future__ import annotations

import json
import sys

from tutor.sandbox import speed
from tutor.sandbox.audit_limit import SPEED_MARKER


def probe() -> dict | None:
    """The probe's figure, measured here with one thread (``Speed.to_wire()``), or None if it fails.

    The audit then keeps that one thread: the small GPTs it is made for run
    faster on one (a 2-layer C = 64 nanoGPT's links took 2.7 s on one thread
    and 19.5 s on two beside a loaded machine's other work), and the numbers
    it reports do not depend on how many cores the machine has.
    """
    try:
        import torch  # this is the audit's own process: torch is what it measures and runs

        torch.set_num_threads(1)
        return speed.Speed.of([speed.workload(torch)]).to_wire()
    except Exception:
        return None


def main() -> int:
    # the audit itself, and torch with it, loads only once the process runs
    from exercises.audit.__main__ import main as audit_main, private_stdout

    report_to = private_stdout()
    figure = probe()
    sys.stderr.write(f"\n{SPEED_MARKER}{json.dumps(figure)}\n")
    sys.stderr.flush()
    return audit_main(report_to=report_to)


if __name__ == "__main__":
    sys.exit(main())
