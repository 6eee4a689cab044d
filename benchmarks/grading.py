"""Grading benchmarks: a class's answers, a generated 100,000-row class, a 10,000-file report, fix batches.

    python benchmarks/grading.py [--only rows100 rows100k report10k fixes save gradescope memory kill]
                                 [--rows N] [--mb MB]

Each section runs its command once as its own process (worker start and
torch import included) and prints the wall time with the machine's load
average beside it; run it on a quiet machine for the targets:

* ``rows100``   — ``tutor grade`` of 100 rows (10 learners × 10 exercises,
  half right, half wrong): each distinct check once, so 10 checks; ≤ 5 s.
* ``rows100k``  — ``tutor grade`` of a generated class of 100,000 prediction
  rows (10,000 learners × 10 exercises, with times and a few junk rows);
  ≤ 10 min.
* ``report10k`` — ``tutor report DIR --json`` over 10,000 progress files; ≤ 5 s.
* ``fixes``     — ``tutor grade --fixes DIR`` over 20 learners' repairs on
  one warm worker; ≤ 3 s per submission.
* ``save``      — ``rows100`` again with ``--save`` beside one without, in one
  run: the ratio of the two walls; ≤ 1.5×.
* ``memory``   — ``tutor grade`` of a generated export of ``--mb`` MB (default
  200: 2 KB notes, 500 learners, two cheap exercises, so two checks): the
  CLI's peak RSS (``VmHWM``, polled) and rows per second; ≤ 500 MB.
* ``kill``     — ``kill -9`` of a grading CLI mid-batch: how long until its
  worker and every process under it are gone; ≤ 1 s.
* ``gradescope``— one ``tutor gradescope`` submission (two predictions and a
  repair, judged at its hidden seeds) from a cold start; ≤ 5 s on a warm
  machine.

The right answers are measured first (one ungraded run per exercise), never
written down: the class's answers are what those checks observe, and a
changed wrong answer of the same kind.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.proctree import alive, descendants  # noqa: E402 -- the same count of what a killed grader leaves as its test

#: Ten quick exercises of different kinds.
EXERCISES = ("broadcast-loss", "squeeze-batch", "softmax-axis", "pairwise-index", "index-assign", "head-split",
             "head-merge", "cache-offset", "skip-zero-grad", "keepdim-sum")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def answers_of(ids=EXERCISES) -> dict:
    """{exercise: (right, wrong)}: right is what the check observes now, wrong another answer of its kind."""
    from tutor.model import answers
    from tutor.store.catalog_cache import load_catalog
    from tutor.sandbox.runner import Runner
    catalog = load_catalog()
    runner = Runner(catalog, device="cpu")
    out = {}
    try:
        for ex_id in ids:
            ex = catalog.get(ex_id)
            result = runner.run(ex, None)
            right = ex.kind.show_observation(result.observed)
            wrong = next((w for w in _wrong(ex, result.observed) if _reads(ex, w) and w != right), right)
            out[ex_id] = (right, wrong)
    finally:
        runner.close()
    return out


def _wrong(ex, observed):
    kind = getattr(ex.kind, "name", ex.kind)
    if kind == "bool":
        return ["no" if observed else "yes"]
    if kind == "choice":
        return [c for c in getattr(ex, "choices", {}) or []] + ["a", "b", "c", "d"]
    if kind == "shape":
        return ["(1,)", "(2, 2)"]
    if kind == "number":
        return ["12345", "-1"]
    if kind == "list":
        return ["[0]", "0"]
    return ["ValueError", "RuntimeError"]


def _reads(ex, text) -> bool:
    from tutor.model import answers
    try:
        ex.parse_answer(text)
        return True
    except answers.AnswerError:
        return False


def write_class(path: Path, learners: int, pairs: dict, junk_every: int = 0, seed: int = 0) -> int:
    rng = random.Random(seed)
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["learner", "exercise", "answer", "submitted_at"])
        for n in range(learners):
            for k, (ex_id, (right, wrong)) in enumerate(pairs.items()):
                rows += 1
                if junk_every and rows % junk_every == 0:
                    writer.writerow([f"learner{n:05d}@uni.edu", "not-an-exercise", "x", "yesterday"])
                    continue
                writer.writerow([f"learner{n:05d}@uni.edu", ex_id, right if rng.random() < 0.5 else wrong,
                                 f"2026-11-{1 + n % 28:02d}T{k:02d}:00:00Z"])
    return rows


CPU = {"s": 0.0}


def tutor(*args, timeout=1200):
    """Run tutor once; return (wall s, the process). ``CPU["s"]`` gets its user + system CPU seconds
    (its workers included), which a busy machine does not inflate the way it does the wall time."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, proc


def grade_section(name: str, learners: int, pairs: dict, junk_every: int = 0, target_s: float = 5.0) -> None:
    with tempfile.TemporaryDirectory() as d:
        answers = Path(d) / "class.csv"
        rows = write_class(answers, learners, pairs, junk_every)
        before = load()
        wall, proc = tutor("grade", "--answers", str(answers), "--out", str(Path(d) / "out"), "--device", "cpu",
                           "--exercises", ",".join(pairs), "--json")
        after = load()
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(f"{name}: did not run: {proc.stderr.strip()[-400:]}")
            return
        print(f"{name}: {rows} rows graded in {wall:.1f} s (target ≤ {target_s:g} s) — {data.get('counts')}, "
              f"{data.get('checks_run')} checks run; CPU {CPU['s']:.1f} s; before: {before}; after: {after}")


def make_class(folder: Path, learners: int, exercises, per_learner: int, attempts: int, *,
               name: str = "learner{n:05d}@uni.edu", notes: bool = False, seed: int = 0) -> None:
    """Write a class of ``learners`` progress files as tutor writes them (the current format), for
    ``tutor report`` to read: ``per_learner`` of ``exercises`` each, 1 to ``attempts`` prediction
    attempts each (half right, with confidences), and with ``notes`` an explain-back note per exercise.

    ``name`` spells the n-th learner's name (``"Learner {n:04d}"``).
    """
    import tomli_w

    from tutor.store.migration import FORMAT_VERSION
    from tutor.store.names import file_stem
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(learners):
        learner = name.format(n=n)
        data = {"format_version": FORMAT_VERSION, "learner": learner, "exercises": {}}
        for ex_id in rng.sample(list(exercises), per_learner):
            tries = []
            for k in range(rng.randint(1, attempts)):
                right = rng.random() < 0.5
                tries.append({"time": f"2026-11-29T10:{k:02d}:00+00:00", "prediction": rng.choice("abcd"),
                              "observed": "b", "correct": right, "status": "pass" if right else "fail",
                              "device": "cpu", "engine_hash": "abc123def456", "seed": 0, "mode": "predict",
                              "confidence": rng.choice([50, 60, 70, 80, 90, 100])})
            entry = {"attempts": tries}
            if notes:
                entry.update(note="the reshape mixes positions across heads", note_time="2026-11-29T10:00:00+00:00")
            data["exercises"][ex_id] = entry
        (folder / f"{file_stem(learner)}.toml").write_text(tomli_w.dumps(data), encoding="utf-8")


def report_section(files: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        make_class(folder, files, EXERCISES, per_learner=6, attempts=3, seed=1)
        before = load()
        wall, proc = tutor("report", str(folder), "--json")
        count = json.loads(proc.stdout).get("learner_count") if proc.stdout.strip() else None
        print(f"report10k: {count} learners reported in {wall:.2f} s (target ≤ 5 s), CPU {CPU['s']:.2f} s; before: {before}; "
              f"after: {load()}")


def fixes_section(learners: int = 20) -> None:
    from tutor.store.catalog_cache import load_catalog
    from exercises.faults import source_root
    catalog = load_catalog()
    ex = catalog.get("head-split")
    fault = catalog.fault_of(ex)
    clean = (source_root() / fault.file).read_text(encoding="utf-8")
    faulted = clean.replace(fault.before, fault.after, 1)
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / "fixes"
        for n in range(learners):
            mine = folder / f"learner{n:02d}@uni.edu"
            mine.mkdir(parents=True)
            (mine / f"{ex.id}.py").write_text(clean if n % 2 == 0 else faulted, encoding="utf-8")
        before = load()
        wall, proc = tutor("grade", "--fixes", str(folder), "--out", str(Path(d) / "out"), "--device", "cpu",
                           "--exercises", ex.id, "--json")
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(f"fixes: did not run: {proc.stderr.strip()[-400:]}")
            return
        print(f"fixes: {learners} submissions in {wall:.1f} s, {wall / learners:.2f} s per submission "
              f"(target ≤ 3 s), CPU {CPU['s']:.1f} s — {data.get('counts')}; before: {before}; after: {load()}")


def save_section(pairs: dict, learners: int = 10) -> None:
    walls = {}
    with tempfile.TemporaryDirectory() as d:
        answers = Path(d) / "class.csv"
        rows = write_class(answers, learners, pairs)
        before = load()
        for label, extra in (("no save", ()), ("--save", ("--save", "--progress-dir", str(Path(d) / "progress")))):
            wall, proc = tutor("grade", "--answers", str(answers), "--out", str(Path(d) / label.strip("-")),
                               "--device", "cpu", "--exercises", ",".join(pairs), "--json", *extra)
            if proc.returncode not in (0,):
                print(f"save: {label} did not run ({proc.returncode}): {proc.stderr.strip()[-300:]}")
                return
            walls[label] = wall
    print(f"save: {rows} rows in {walls['no save']:.1f} s without --save, {walls['--save']:.1f} s with "
          f"({walls['--save'] / walls['no save']:.2f}×, target ≤ 1.5×); before: {before}; after: {load()}")


def gradescope_section() -> None:
    from tutor.store.catalog_cache import load_catalog
    from exercises.faults import source_root
    catalog = load_catalog()
    fault = catalog.fault_of(catalog.get("head-split"))
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "autograder"
        (root / "submission").mkdir(parents=True)
        (root / "source").mkdir()
        (root / "submission" / "answers.toml").write_text('broadcast-loss = "(3, 3)"\ncache-offset = "no"\n')
        (root / "submission" / "head-split.py").write_text((source_root() / fault.file).read_text(encoding="utf-8"))
        (root / "source" / "assignment.toml").write_text('exercises = ["head-split", "broadcast-loss", "cache-offset"]\n')
        (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "ada@uni.edu"}]}))
        before = load()
        wall, proc = tutor("gradescope", "--root", str(root), "--device", "cpu", "--json")
        try:
            result = json.loads(proc.stdout)["result"]
        except (json.JSONDecodeError, KeyError):
            print(f"gradescope: did not run: {proc.stderr.strip()[-400:]}")
            return
        print(f"gradescope: one submission (2 predictions, 1 repair at 2 hidden seeds) in {wall:.1f} s, worker start "
              f"included (target ≤ 5 s warm), CPU {CPU['s']:.1f} s, score {result.get('score')}, in-tutor execution "
              f"{result.get('execution_time')} s; before: {before}; after: {load()}")


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory_section(mb: int = 200) -> None:
    note = "why " * 500
    with tempfile.TemporaryDirectory() as d:
        answers = Path(d) / "big.csv"
        rows = 0
        with open(answers, "w", encoding="utf-8") as fh:
            fh.write("learner,exercise,answer,note\n")
            while fh.tell() < mb * 2**20:
                ex, answer = ("head-split", "ab"[rows % 2]) if rows % 3 else ("broadcast-loss", "(3, 3)")
                fh.write(f"learner{rows % 500},{ex},\"{answer}\",{note}\n")
                rows += 1
        before = load()
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--out",
                                 str(Path(d) / "out"), "--device", "cpu", "--exercises", "head-split,broadcast-loss",
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        peak = 0
        import threading
        out: dict = {}
        reader = threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"), proc.communicate())))
        reader.start()
        while proc.poll() is None:
            peak = max(peak, _status_kib(proc.pid, "VmHWM"))
            time.sleep(0.1)
        reader.join()
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            print(f"memory: did not run ({proc.returncode}): {out['stderr'].decode()[-400:]}")
            return
        lines = [x for x in out["stderr"].decode().splitlines() if x.startswith("graded ")]
        print(f"memory: {rows} rows ({mb} MB) graded in {wall:.1f} s ({rows / wall:.0f} rows/s); peak RSS of the CLI "
              f"{peak / 1024:.0f} MB (target ≤ 500 MB); {len(lines)} progress lines, last {lines[-1] if lines else '-'!r};"
              f" before: {before}; after: {load()}")


def kill_section() -> None:
    with tempfile.TemporaryDirectory() as d:
        answers = Path(d) / "a.csv"
        answers.write_text("learner,exercise,answer,seed\n" + "".join(f"ada,head-split,b,{s}\n" for s in range(1, 200)))
        before = load()
        proc = subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--answers", str(answers), "--out",
                                 str(Path(d) / "o"), "--device", "cpu", "--exercises", "head-split"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        graded = Path(d) / "o" / "rows.jsonl"
        while proc.poll() is None and not (graded.is_file() and graded.read_bytes().count(b"\n") >= 2):
            time.sleep(0.05)
        below = descendants(proc.pid)
        sent = time.perf_counter()
        proc.kill()
        proc.wait()
        while any(alive(p) for p in below) and time.perf_counter() - sent < 30:
            time.sleep(0.005)
        took = time.perf_counter() - sent
        print(f"kill: kill -9 of the grader mid-batch; its {len(below)} processes (worker, sides) gone in {took:.3f} s "
              f"(target ≤ 1 s), {sum(alive(p) for p in below)} left; before: {before}; after: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=["rows100", "rows100k", "report10k", "fixes", "save",
                                                      "gradescope", "memory", "kill"])
    parser.add_argument("--mb", type=int, default=200, help="size of the export of the memory section (default 200)")
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the large class (default 100,000)")
    args = parser.parse_args()
    sections = args.only or ["rows100", "rows100k", "report10k", "fixes", "save", "gradescope", "memory", "kill"]
    pairs = answers_of() if {"rows100", "rows100k", "save"} & set(sections) else {}
    if "rows100" in sections:
        grade_section("rows100", 10, pairs, target_s=5.0)
    if "rows100k" in sections:
        grade_section("rows100k", max(1, args.rows // len(pairs)), pairs, junk_every=997, target_s=600.0)
    if "report10k" in sections:
        report_section()
    if "fixes" in sections:
        fixes_section()
    if "save" in sections:
        save_section(pairs)
    if "gradescope" in sections:
        gradescope_section()
    if "memory" in sections:
        memory_section(args.mb)
    if "kill" in sections:
        kill_section()


if __name__ == "__main__":
    main()
