"""How fast this machine runs checks right now, and the time limit that follows from it.

Every exercise's limit (``Exercise.time_limit_s``) is written for the
*reference machine*: two cores, nothing else running. A busy machine — a
laptop building something, a grading box running many ``tutor run`` at once —
runs the same check several times slower, and a limit that does not follow
would record the machine's slowness as the learner's fault. So the check
worker measures the machine once when it starts (:func:`workload`, run by
``tutor.sandbox.worker`` in as many forked children as a plain run has sides, each
with the threads such a side gets) and the runner scales every limit by what
it found (:func:`time_limit`):

* the **speed probe** times two fixed pieces of work: 200 products of
  256 × 256 float32 matrices (compute-bound, like the bigger checks) and 120
  training steps of a tiny MLP with AdamW (many small operators: dispatcher,
  autograd and optimizer overhead, like most checks) — about 0.17 s on a
  quiet reference machine, 1.4 s beside 12 busy processes. The slowest
  child's time for both, over the same work's time on the reference machine
  (:data:`REFERENCE_S`), is the machine's *slowdown factor*;
* the **scale** applied to a limit is, in order: a retry's (twice the limit
  that ran out), ``--timeout-scale X``, the environment variable
  ``TUTOR_TIMEOUT_SCALE``, else the probe's factor rounded up to a tenth and
  kept between 1 (a fast machine never tightens a limit the catalog set) and
  :data:`MAX_SCALE` (a hang must still end);
* a :class:`TimeLimit` remembers which of these applied, so a timeout can
  say which limit it hit and why.

This module imports neither torch nor Textual; :func:`workload` is handed
torch by the process that runs it.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass

#: The environment variable a grader sets to fix the scale (a positive number).
ENV = "TUTOR_TIMEOUT_SCALE"
#: The largest scale the probe may give on its own (an explicit one may go further).
MAX_SCALE = 20.0
#: Seconds each piece of the probe takes on the reference machine: 2 cores (one
#: thread per side), nothing else running. Measured on the project's 2-core
#: machine as the CPU time of each of two single-threaded children probing at
#: once (CPU time is what a busy neighbour does not inflate): 0.068–0.073 s
#: and 0.059–0.064 s over 24 children, the shortest wall times the same.
REFERENCE_S = {"gemm_s": 0.070, "step_s": 0.062}
#: The probe's work: GEMM_REPEATS products of GEMM_N × GEMM_N matrices, STEP_REPEATS training steps.
GEMM_N, GEMM_REPEATS = 256, 200
STEP_REPEATS = 120
#: Seconds the worker waits for its probe before it gives up and uses no figure.
PROBE_TIMEOUT_S = 60.0


class ScaleError(ValueError):
    """A time-limit scale that is not a positive number; the message names the fix."""


def parse_scale(text: str | float, where: str = "--timeout-scale") -> float:
    """Read a time-limit scale: a positive number such as ``2`` or ``1.5``.

    Args:
        text: what was given.
        where: where it came from, named in the error (``--timeout-scale``,
            ``TUTOR_TIMEOUT_SCALE``).

    Raises:
        ScaleError: it is not a finite number above 0.
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ScaleError(f"{where} must be a number above 0 such as 2 or 1.5, not {str(text)[:40]!r}")
    return value


def environment_scale() -> float | None:
    """The scale ``TUTOR_TIMEOUT_SCALE`` sets, or None when it is unset or empty.

    Raises:
        ScaleError: it is set to something that is not a positive number.
    """
    text = os.environ.get(ENV, "").strip()
    return parse_scale(text, ENV) if text else None


# --- the probe -----------------------------------------------------------------

def workload(torch) -> dict:
    """Run the probe's fixed work once with torch's current threads; return its wall times.

    Meant for a forked child of the check worker: it runs tensor operations
    (which start torch's thread pool), so the worker itself never calls it.

    Args:
        torch: the imported torch module.

    Returns:
        ``{"gemm_s": seconds for GEMM_REPEATS (256, 256) @ (256, 256)
        products, "step_s": seconds for STEP_REPEATS AdamW steps of a
        32 → 128 → 16 MLP on a batch of 64, "gemm_cpu_s", "step_cpu_s":
        the CPU time the process spent on each (what a quiet machine's wall
        time would be with one thread), "threads": torch's threads}``.
    """
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(GEMM_N, GEMM_N, generator=generator)  # (N, N)
    b = torch.randn(GEMM_N, GEMM_N, generator=generator)  # (N, N)
    a @ b  # the first product allocates and picks its kernel; it is not timed
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(GEMM_REPEATS):
        a @ b
    gemm_s, gemm_cpu_s = time.perf_counter() - started, time.process_time() - cpu

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 16))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 32, generator=generator)             # (B, in)
    y = torch.randint(0, 16, (64,), generator=generator)     # (B,)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    step()  # the optimizer's first step creates its state; it is not timed
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(STEP_REPEATS):
        step()
    step_s, step_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return {"gemm_s": gemm_s, "step_s": step_s, "gemm_cpu_s": gemm_cpu_s, "step_cpu_s": step_cpu_s,
            "threads": torch.get_num_threads()}


@dataclass(frozen=True)
class Speed:
    """What the worker's probe measured when it started.

    Attributes:
        gemm_s: the slowest child's seconds for the matrix products.
        step_s: the slowest child's seconds for the training steps (the
            slowest child: the one whose two pieces took longest together).
        threads: torch threads in each child (a side's share of the cores).
        copies: children that ran the probe at once (the sides of a plain run).
        wall_s: wall time of the whole probe, seconds.
        cpu_s: the CPU time the slowest child's two pieces took together,
            seconds; with one thread, ``(gemm_s + step_s) / cpu_s`` is how
            much of the time others held the cores.
    """

    gemm_s: float
    step_s: float
    threads: int = 1
    copies: int = 2
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def factor(self) -> float:
        """How many times slower than the reference machine the probe's work ran (the slowest child's)."""
        return (self.gemm_s + self.step_s) / (REFERENCE_S["gemm_s"] + REFERENCE_S["step_s"])

    @classmethod
    def of(cls, runs: list[dict], wall_s: float = 0.0) -> "Speed":
        """The speed several children's :func:`workload` results show: the slowest child's."""
        slowest = max(runs, key=lambda r: r["gemm_s"] + r["step_s"])
        return cls(gemm_s=float(slowest["gemm_s"]), step_s=float(slowest["step_s"]),
                   threads=min(int(r.get("threads", 1)) for r in runs), copies=len(runs), wall_s=wall_s,
                   cpu_s=float(slowest.get("gemm_cpu_s", 0.0)) + float(slowest.get("step_cpu_s", 0.0)))

    def to_wire(self) -> dict:
        return {**asdict(self), "factor": round(self.factor, 3)}

    @classmethod
    def from_wire(cls, data: dict | None) -> "Speed | None":
        """The speed a hello carries, or None when it carries none (the probe failed, or an older worker)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(gemm_s=float(data["gemm_s"]), step_s=float(data["step_s"]),
                       threads=int(data.get("threads", 1)), copies=int(data.get("copies", 2)),
                       wall_s=float(data.get("wall_s", 0.0)), cpu_s=float(data.get("cpu_s", 0.0)))
        except (KeyError, TypeError, ValueError):
            return None


def probe_scale(factor: float) -> float:
    """The scale a probe's factor gives: rounded up to a tenth, kept within 1 … :data:`MAX_SCALE`."""
    return min(MAX_SCALE, max(1.0, math.ceil(round(factor, 6) * 10) / 10))


# --- the limit -------------------------------------------------------------------

#: Where a scale came from, as :class:`TimeLimit` names it.
SOURCES = ("retry", "flag", "environment", "probe", "reference")


@dataclass(frozen=True)
class TimeLimit:
    """The wall-clock limit one run gets, and why.

    Attributes:
        base_s: the exercise's limit on the reference machine
            (``Exercise.time_limit_s``), seconds.
        scale: what it is multiplied by.
        source: where the scale came from: ``retry`` (twice a limit that
            ran out), ``flag`` (``--timeout-scale``), ``environment``
            (``TUTOR_TIMEOUT_SCALE``), ``probe`` (the worker's speed probe)
            or ``reference`` (no probe figure: the limit as written).
        factor: the probe's slowdown factor, when it measured one.
    """

    base_s: float
    scale: float = 1.0
    source: str = "reference"
    factor: float | None = None

    @property
    def seconds(self) -> float:
        """The limit that applies, seconds."""
        return round(self.base_s * self.scale, 1)

    @property
    def retry_scale(self) -> float:
        """The scale of a retry: twice this limit."""
        return round(2 * self.scale, 2)

    @property
    def why(self) -> str:
        """Which limit applied and why, as a clause: ``this exercise's 30 s × 2.4, because …``."""
        base = f"this exercise's {self.base_s:g} s"
        if self.source == "retry":
            return f"{base} × {self.scale:g}, twice the limit of a run that ran out of time"
        if self.source == "flag":
            return f"{base} × {self.scale:g}, as --timeout-scale asked"
        if self.source == "environment":
            return f"{base} × {self.scale:g}, as {ENV} asked"
        if self.source == "probe" and self.factor is not None:
            if self.scale > 1:
                return (f"{base} × {self.scale:g}, because the speed probe at the worker's start ran "
                        f"{self.factor:.1f}× slower than on the quiet 2-core reference machine")
            return (f"{base} as written for the quiet 2-core reference machine, which the speed probe "
                    f"at the worker's start found this machine as fast as ({self.factor:.1f}×)")
        return f"{base} as written for the quiet 2-core reference machine (no speed probe figure)"

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "base_s": self.base_s, "scale": self.scale, "source": self.source,
                "factor": None if self.factor is None else round(self.factor, 3), "why": self.why,
                "retry_scale": self.retry_scale}


def time_limit(base_s: float, *, retry: float | None = None, flag: float | None = None,
               environment: float | None = None, speed: Speed | None = None) -> TimeLimit:
    """The limit a run gets: the first scale given, in the order of the arguments (module docstring).

    Args:
        base_s: the exercise's limit on the reference machine, seconds.
        retry: a retry's scale (twice the limit that ran out).
        flag: ``--timeout-scale``.
        environment: ``TUTOR_TIMEOUT_SCALE``.
        speed: the worker's probe, or None.
    """
    factor = speed.factor if speed is not None else None
    for source, scale in (("retry", retry), ("flag", flag), ("environment", environment)):
        if scale is not None:
            return TimeLimit(base_s, scale, source, factor)
    if factor is not None:
        return TimeLimit(base_s, probe_scale(factor), "probe", factor)
    return TimeLimit(base_s)


def pin_cpu_kernels(env: dict[str, str]) -> None:
    """Set ``ATEN_CPU_CAPABILITY=avx2`` in ``env`` (a worker's environment) where the CPU has AVX2.

    torch picks its CPU kernels by the instructions the CPU has, and AVX-512's kernels add in another
    order than AVX2's: lr-10x's first CAPABILITY loss read 3.14726 on an AVX-512 machine where an AVX2
    machine reads 3.14727, on one core or four. With AVX2's kernels on every CPU that has them, a check
    gives the same numbers on all of them (docs/determinism.md). A value the user set wins
    (scripts/determinism.py compares kernels that way); a CPU without AVX2 keeps torch's own choice.
    """
    if "ATEN_CPU_CAPABILITY" not in env and _cpu_has("avx2"):
        env["ATEN_CPU_CAPABILITY"] = "avx2"


def _cpu_has(flag: str) -> bool:
    """Whether /proc/cpuinfo lists ``flag`` among this CPU's flags (False where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return flag in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False
