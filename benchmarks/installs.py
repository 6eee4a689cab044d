"""The same run, from each place the tutor can be installed: a first worker start and Run→verdict, side by side.

    python benchmarks/installs.py [--repeats N] [--ids ID ...] [--markdown]
                                  [--python LABEL=PYTHON[:ROOT] ...]

Each *install* is an interpreter that imports the tutor from somewhere: this
checkout through ``.venv`` (``checkout``), and any other given with
``--python``: a venv holding a regular (non-editable) install of a wheel
(``wheel=/path/venv/bin/python``), or an older checkout imported through
``PYTHONPATH`` (``before=.venv/bin/python:/path/worktree``). For each, a
fresh process starts a check worker (python, torch, the preloads, the speed
probe, bubblewrap) and times it, then runs each exercise ``--repeats``
times on that warm worker and takes the median. The installs take turns,
round by round, so a load that comes and goes falls on all of them alike;
each figure is the median over rounds.

What a regular install changes is where the tutor's packages lie
(``site-packages``) and so what a side may read (:mod:`tutor.sandbox.confine`):
the figures say whether that costs anything. Timings belong here, never in
the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The code each install's process runs: start a worker, then time each exercise on it (JSON on stdout).
PROBE = r"""
import json, statistics, sys, time
from tutor.sandbox.runner import Runner
from tutor.store.catalog_cache import load_catalog
ids, repeats = sys.argv[1].split(","), int(sys.argv[2])
catalog = load_catalog()
runner = Runner(catalog, device="cpu")
t = time.perf_counter()
hello = runner.warm_up()
start = time.perf_counter() - t
out = {"start_s": start, "confined": hello["confinement"]["confined"], "runs": {}, "status": {}}
import tutor
out["where"] = tutor.__file__
for exercise_id in ids:
    exercise = catalog.get(exercise_id)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        result = runner.run(exercise)
        times.append(time.perf_counter() - t)
    out["runs"][exercise_id] = statistics.median(times)
    out["status"][exercise_id] = result.status
runner.close()
print(json.dumps(out))
"""


def measure(python: str, root: str | None, ids: list[str], repeats: int) -> dict:
    """One fresh process of ``python`` (importing the tutor from ``root`` when given): its figures."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if root:
        env["PYTHONPATH"] = root
    cwd = root or "/"  # an installed tutor is run from anywhere; a checkout from its root
    done = subprocess.run([python, "-c", PROBE, ",".join(ids), str(repeats)], capture_output=True, text=True,
                          env=env, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python} could not run the probe: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=[], metavar="LABEL=PYTHON[:ROOT]",
                        help="another install to time beside this checkout")
    parser.add_argument("--ids", nargs="+", default=["broadcast-loss", "head-split", "train-step-gpt"])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each exercise per round (median)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh workers per install, taken in turns")
    parser.add_argument("--markdown", action="store_true", help="end with the figures as a Markdown table")
    args = parser.parse_args(argv)
    installs = {"checkout": (str(ROOT / ".venv" / "bin" / "python"), str(ROOT))}
    for spec in args.python:
        label, _, rest = spec.partition("=")
        python, _, root = rest.partition(":")
        if not label or not python:
            parser.error(f"--python {spec!r}: write LABEL=PYTHON or LABEL=PYTHON:ROOT")
        installs[label] = (python, root or None)
    rounds: dict[str, list[dict]] = {label: [] for label in installs}
    for number in range(args.rounds):
        for label, (python, root) in installs.items():
            figures = measure(python, root, args.ids, args.repeats)
            rounds[label].append(figures)
            print(f"round {number + 1} {label:<10} worker start {figures['start_s']:.2f} s  " + "  ".join(
                f"{i} {figures['runs'][i] * 1000:.0f} ms ({figures['status'][i]})" for i in args.ids), flush=True)
    rows = []
    for label, figures in rounds.items():
        start = statistics.median(f["start_s"] for f in figures)
        runs = {i: statistics.median(f["runs"][i] for f in figures) for i in args.ids}
        rows.append((label, figures[0]["where"], figures[0]["confined"], start, runs))
    load = os.getloadavg()[0]
    print(f"\nmedians over {args.rounds} rounds; load average {load:.2f} at the end")
    for label, where, confined, start, runs in rows:
        print(f"  {label:<10} worker start {start:.2f} s  " + "  ".join(f"{i} {runs[i] * 1000:.0f} ms" for i in args.ids)
              + f"  (confined: {confined}; tutor from {where})")
    if args.markdown:
        print("\n| install | tutor imported from | worker start | " + " | ".join(args.ids) + " |")
        print("|---|---|---|" + "---|" * len(args.ids))
        for label, where, _, start, runs in rows:
            print(f"| {label} | `{where}` | {start:.2f} s | " + " | ".join(f"{runs[i] * 1000:.0f} ms" for i in args.ids)
                  + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
