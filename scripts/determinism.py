"""Does every check give the same numbers on any core count? Run the catalog, record, compare.

    python scripts/determinism.py record OUT.json [ID ...] [--set SET]
    python scripts/determinism.py compare A.json B.json [C.json ...]

``record`` runs each exercise's check on both sides (as ``tutor check``
does) and writes, per exercise, its status, the clean and faulted
observations and every evidence cell. Run it several times under each
configuration to compare, for example::

    TUTOR_WORKER_CORES=1 taskset -c 0 python scripts/determinism.py record c1-a.json
    TUTOR_WORKER_CORES=4 python scripts/determinism.py record c4-a.json

``compare`` reads any number of records and reports, for every exercise:

* whether the status and both observations are the same in every record
  (the graded facts: they must be);
* the evidence cells that differ. A cell that differs between two records
  *of the same configuration* is a reading that does not reproduce run to
  run (a timing): it is listed apart and not counted against the check.
  A cell that is the same within every configuration but differs between
  configurations is a determinism failure.

The configuration of a record is its ``TUTOR_WORKER_CORES``, its
``ATEN_CPU_CAPABILITY`` (the CPU kernels) and CPU affinity, written into
the record. ``compare`` exits 1 when any graded fact
or any configuration-stable cell differs. See ``docs/determinism.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict


def record(out: str, ids: list[str], set_id: str | None) -> int:
    from tutor.app.session import Session
    from tutor.cli.common import catalog, make_runner

    cat = catalog()
    exercises = [cat.get(i) for i in ids] if ids else list(cat.exercises)
    if set_id:
        exercises = [e for e in exercises if e.set == set_id]
    runner = make_runner(cat, "cpu")
    session = Session(cat, runner)
    rows = {}
    started = time.perf_counter()
    try:
        for ex in exercises:
            result = session.check(ex)
            rows[ex.id] = {"status": result.status, "clean": result.clean, "faulted": result.faulted,
                           "cells": _cells(result.evidence)}
            print(f"{ex.id:32} {result.status:8} {result.duration_s:7.2f} s", file=sys.stderr, flush=True)
    finally:
        runner.close()
    # ATEN_CPU_CAPABILITY: the CPU kernels the worker runs ("" is the runner's choice, avx2 where the CPU has it)
    config = {"TUTOR_WORKER_CORES": os.environ.get("TUTOR_WORKER_CORES", ""),
              "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
              "affinity": sorted(os.sched_getaffinity(0))}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"config": config, "wall_s": round(time.perf_counter() - started, 1), "exercises": rows}, fh,
                  indent=1, default=str)
    return 0


def _cells(evidence: dict) -> dict[str, str]:
    """Every evidence cell as ``side/item/row/column -> text``, notes included."""
    cells = {}
    for side, items in (evidence or {}).items():
        for n, item in enumerate(items or []):
            where = f"{side}/{n}:{item.get('title', item.get('type'))}"
            if item.get("type") == "table":
                for r, row in enumerate(item.get("rows", [])):
                    for c, cell in enumerate(row):
                        cells[f"{where}/{r}/{c}"] = str(cell)
            else:
                cells[where] = json.dumps({k: v for k, v in item.items() if k != "type"}, sort_keys=True,
                                          default=str)
    return cells


def compare(paths: list[str]) -> int:
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            records.append(json.load(fh))
    configs = [json.dumps(r["config"], sort_keys=True) for r in records]
    print(f"{len(records)} records, {len(set(configs))} configurations: "
          + "; ".join(sorted(set(configs))))
    ids = sorted(set().union(*(r["exercises"] for r in records)))
    graded_bad, cells_bad, unstable, missing = [], [], defaultdict(list), []
    cells_total = 0
    for ex_id in ids:
        runs = [(cfg, r["exercises"].get(ex_id)) for cfg, r in zip(configs, records)]
        if any(run is None for _, run in runs):
            missing.append(ex_id)
            continue
        facts = {json.dumps([run["status"], run["clean"], run["faulted"]], sort_keys=True, default=str)
                 for _, run in runs}
        if len(facts) > 1 or any(run["status"] != "ok" for _, run in runs):
            graded_bad.append((ex_id, sorted(facts)))
        keys = set().union(*(run["cells"] for _, run in runs))
        cells_total += len(keys)
        for key in sorted(keys):
            by_config = defaultdict(set)
            for cfg, run in runs:
                by_config[cfg].add(run["cells"].get(key))
            if all(len(values) == 1 for values in by_config.values()):
                if len(set().union(*by_config.values())) > 1:
                    cells_bad.append((ex_id, key, {c: sorted(map(str, v)) for c, v in by_config.items()}))
            else:
                unstable[ex_id].append(key)
    print(f"{len(ids)} exercises, {cells_total} evidence cells")
    print(f"graded facts (status, clean, faulted) the same in every record and ok: {len(ids) - len(graded_bad) - len(missing)}")
    for ex_id, facts in graded_bad:
        print(f"  DIFFERS or not ok: {ex_id}: {facts}")
    for ex_id in missing:
        print(f"  MISSING from some record: {ex_id}")
    print(f"evidence cells that differ between configurations but not within one: {len(cells_bad)}")
    for ex_id, key, values in cells_bad:
        print(f"  {ex_id}: {key}: {values}")
    n_unstable = sum(len(v) for v in unstable.values())
    print(f"evidence cells that differ run to run within a configuration (readings such as timings; not graded): "
          f"{n_unstable} in {len(unstable)} exercises")
    for ex_id, keys in sorted(unstable.items()):
        titles = sorted({k.split('/')[1] for k in keys})
        print(f"  {ex_id}: {len(keys)} cells in {', '.join(titles)}")
    return 1 if graded_bad or cells_bad or missing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("ids", nargs="*")
    rec.add_argument("--set", dest="set_id")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("records", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out, args.ids, args.set_id)
    return compare(args.records)


if __name__ == "__main__":
    sys.exit(main())
