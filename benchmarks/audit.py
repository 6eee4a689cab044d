"""How long a full ``tutor audit`` takes, model by model, as a user runs it.

    python benchmarks/audit.py [--repeat N] [--zoo] [--only NAME ...]

Each model is audited by the command line, ``tutor audit FILE.py:FACTORY
--json``, in a process of its own: every link, the speed probe, the
confinement and CAPABILITY's overfit run included, which is what a user
waits for. The models are the clean ones of the audit's tests that nobody
here wrote — the standalone code bases vendored in
``tests/audit_models/third_party`` — beside two of our own (nanoGPT-style and
Llama-style); ``--zoo`` adds the Hugging Face architectures of the zoo tier
(``tests/zoo/hf_styles.py``; needs ``pip install -e '.[zoo]'``), each built
from a random-weight config by a factory file written here for the run.

Prints each model's median wall time over ``--repeat`` runs, its exit code
(0: every link held), the median over all models against the target (a full
audit of a small GPT in 10 s or less on a quiet 2-core machine), and the
load average before and after, since a busy machine's figures are not a
quiet one's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "audit_models"
TARGET_S = 10.0

#: The clean models audited by default: name -> FILE.py:FACTORY.
STANDALONE = {
    "nanoGPT-style (ours)": f"{MODELS / 'clean_nano.py'}:build",
    "Llama-style (ours)": f"{MODELS / 'clean_llama.py'}:build",
    **{name: f"{MODELS / 'third_party' / name / 'factory.py'}:build"
       for name in ("llama2c", "palm", "gptfast", "lit_llama", "nanogpt_mup", "modded_nanogpt", "pytorch_llama")},
}

#: A factory file for one Hugging Face style of the zoo (tests/zoo/hf_styles.py), written per run.
ZOO_FACTORY = """\
import sys
sys.path.insert(0, {zoo!r})
from hf_styles import STYLES


def build():
    return STYLES[{name!r}]()
"""


def zoo_models(folder: Path) -> dict[str, str]:
    """Each Hugging Face style of the zoo tier as FILE.py:FACTORY, the files written into ``folder``."""
    sys.path.insert(0, str(ROOT / "tests" / "zoo"))
    from hf_styles import STYLES  # only with --zoo: it needs transformers

    models = {}
    for name in STYLES:
        path = folder / f"zoo_{name}.py"
        path.write_text(ZOO_FACTORY.format(zoo=str(ROOT / "tests" / "zoo"), name=name), encoding="utf-8")
        models[f"hf {name}"] = f"{path}:build"
    return models


def audit_once(target: str, allow_read: list[str]) -> tuple[float, int, str]:
    """One ``tutor audit TARGET --json`` by the ``tutor`` beside this Python: (wall seconds, exit code, the
    first failing link, or the last line it wrote when it printed no report)."""
    command = [str(Path(sys.executable).parent / "tutor"), "audit", target, "--json"]
    for path in allow_read:
        command += ["--allow-read", path]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    try:
        first = json.loads(done.stdout).get("first_failure") or ""
    except ValueError:
        first = (done.stderr.strip().splitlines() or ["?"])[-1][:80]
    return wall, done.returncode, first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per model (default 3); the median is kept")
    parser.add_argument("--zoo", action="store_true", help="also the Hugging Face styles (needs the zoo extras)")
    parser.add_argument("--only", nargs="*", default=None, help="only the models whose name contains one of these")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tutor-audit-bench-") as scratch:
        models = dict(STANDALONE)
        allow = {name: [] for name in models}
        if args.zoo:
            zoo = zoo_models(Path(scratch))
            models.update(zoo)
            # the zoo's factory reads hf_styles.py and transformers' own files from site-packages
            allow.update({name: [str(ROOT / "tests" / "zoo")] for name in zoo})
        if args.only:
            models = {n: t for n, t in models.items() if any(o in n for o in args.only)}
        print(f"load average before: {os.getloadavg()[0]:.2f}  ({os.cpu_count()} cores)")
        medians = []
        for name, target in models.items():
            runs = [audit_once(target, allow.get(name, [])) for _ in range(args.repeat)]
            walls = [wall for wall, _, _ in runs]
            codes = sorted({code for _, code, _ in runs})
            firsts = sorted({first for _, _, first in runs if first})
            median = statistics.median(walls)
            medians.append(median)
            said = f"  first failure: {', '.join(firsts)}" if firsts else ""
            print(f"{name:28s} median {median:6.2f} s  (min {min(walls):.2f}, max {max(walls):.2f})  "
                  f"exit {codes}{said}", flush=True)
        if not medians:
            print("no model matched --only")
            return 2
        overall = statistics.median(medians)
        verdict = "pass" if overall <= TARGET_S else "falls short"
        print(f"median over {len(medians)} models: {overall:.2f} s  (target <= {TARGET_S:.0f} s on a quiet "
              f"2-core machine: {verdict})")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
