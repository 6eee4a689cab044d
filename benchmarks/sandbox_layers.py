"""What the sandbox's layers cost: worker start and Run→verdict, this checkout against another, in one run.

    python benchmarks/sandbox_layers.py [--against DIR] [--rounds N] [--ids ID ...]

Each round starts one fresh process per checkout (this one, and ``DIR``'s
when given: an older tree to compare with), alternated so the machine's load
falls on both alike. In that process a runner starts its worker (timed:
the learner's first run pays it) and runs each exercise twice with the warm
worker (the second run is timed: Run→verdict). Prints the median of the
rounds per figure and checkout, the load average beside it, and the targets:
Run→verdict ≤ 1 s on the shapes, storage and modules exercises, the worker's
start within 1.5× of the other checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_IDS = ("broadcast-loss", "softmax-axis", "keepdim-sum", "view-vs-reshape", "clone-detach",
               "numpy-sharing", "plain-list", "unregistered-tensor")

PROBE = r"""
import json, sys, time
from tutor.store.catalog_cache import load_catalog
from tutor.sandbox.runner import Runner
catalog = load_catalog()
runner = Runner(catalog, device="cpu")
t = time.perf_counter()
hello = runner.warm_up()
figures = {"worker start": time.perf_counter() - t}
for ident in sys.argv[1:]:
    exercise = catalog.get(ident)
    runner.run(exercise)
    t = time.perf_counter()
    result = runner.run(exercise)
    figures[ident] = time.perf_counter() - t
    if result.status not in ("ok", "pass", "fail"):
        figures[ident + " status"] = result.status
runner.close()
print(json.dumps({"figures": figures, "confinement": hello.get("confinement")}))
"""


def one_round(root: str, ids: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", PROBE, *ids], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the probe failed in {root}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="another checkout of the tutor to compare with (before)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ids", nargs="*", default=list(DEFAULT_IDS))
    args = parser.parse_args()
    roots = {"this": HERE} | ({"against": os.path.abspath(args.against)} if args.against else {})
    seen: dict[str, dict[str, list[float]]] = {name: {} for name in roots}
    layers = {}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for number in range(args.rounds):
        for name, root in (roots.items() if number % 2 == 0 else reversed(list(roots.items()))):
            answer = one_round(root, args.ids)
            layers[name] = answer["confinement"]
            for key, value in answer["figures"].items():
                if isinstance(value, float):
                    seen[name].setdefault(key, []).append(value)
                else:
                    print(f"  {name}: {key} = {value}")
        print(f"  round {number + 1} of {args.rounds} done", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in roots:
        print(f"{name} ({roots[name]}): {json.dumps(layers.get(name))}")
    names = list(roots)
    print(f"{'figure (median s)':<28}" + "".join(f"{n:>10}" for n in names))
    for key in seen["this"]:
        row = [statistics.median(seen[n][key]) if seen[n].get(key) else float("nan") for n in names]
        print(f"{key:<28}" + "".join(f"{v:10.3f}" for v in row))
    worst = max(statistics.median(v) for k, v in seen["this"].items() if k != "worker start")
    print(f"Run→verdict, slowest median here: {worst:.3f} s (target ≤ 1 s): {'pass' if worst <= 1 else 'falls short'}")
    if "against" in seen:
        ratio = statistics.median(seen["this"]["worker start"]) / statistics.median(seen["against"]["worker start"])
        print(f"worker start, here / against: {ratio:.2f}× (target ≤ 1.5×): {'pass' if ratio <= 1.5 else 'falls short'}")


if __name__ == "__main__":
    main()
