"""The author's command: ``tutor check`` runs exercises on both sides and says whether each fault shows."""

from __future__ import annotations

import os
import queue
import threading
import time

from tutor.cli.common import catalog, exercise, find_set, make_runner, retry_notice
from tutor.cli.replies import EXIT_CHECK, CheckReply, CouldNotRun, Events, UsageError


def check(args, events: Events) -> CheckReply:
    """``tutor check``: run every chosen exercise on both sides; does each fault show?

    With ``-j N`` the exercises are shared among N workers (each with its
    share of the cores); the lines still come in catalog order, each as soon
    as it and every one before it are done. The reply says the wall time.
    """

    # deferred: 'tutor list' loads this module but no runner or session
    from tutor.sandbox.runner import DeviceError, WorkerError
    cat = catalog()
    exercises = [exercise(cat, i) for i in args.ids] if args.ids else cat.exercises
    if args.set_ids:  # every --set given: the exercises of any of them
        wanted = {find_set(cat, name).id for name in args.set_ids}
        exercises = [e for e in exercises if e.set in wanted]
    asked = getattr(args, "jobs", None)
    jobs = max(1, min(asked or 1, len(exercises) or 1))
    scale = getattr(args, "timeout_scale", None)
    cores = None if jobs == 1 else max(1, (os.cpu_count() or 1) // jobs)
    runners = [make_runner(cat, args.device, scale, cores) for _ in range(jobs)]
    rows, graded = [], []
    started = time.perf_counter()
    results = _checked_in_order(cat, runners, exercises)
    try:
        try:
            runners[0].device  # resolve the device once: a missing CUDA is a usage error, not a traceback
        except DeviceError as exc:
            raise UsageError(str(exc)) from None
        for ex, result in results:
            ok = fault_shows(ex, result)
            rows.append({"id": ex.id, "set": ex.set, "fault": ex.fault, "status": result.status,
                         "clean": result.clean, "faulted": result.faulted, "differs": result.differs,
                         "ok": ok, "duration_s": result.duration_s, "device": result.device, "error": result.error,
                         "time_limit_s": (result.time_limit or {}).get("seconds")})
            events.checked(ex, result, ok)
            graded.append((ex, result.observed))
            if result.status == "timeout":
                events.notice(retry_notice(ex, result))
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        results.close()  # no worker takes another exercise
        for runner in runners:
            runner.close()
    wall_s = round(time.perf_counter() - started, 2)
    passed = sum(r["ok"] for r in rows)
    # An exercise without a fault (the capstone) can only show that it ran; it
    # is counted apart, never as a fault that showed.
    faulted = [r for r in rows if r["fault"]]
    shown = sum(r["ok"] for r in faulted)
    timeouts = sum(r["status"] == "timeout" for r in rows)
    rates = base_rates(graded)
    data = {"results": rows, "passed": passed, "total": len(rows), "faults_shown": shown, "faults": len(faulted),
            "timeouts": timeouts, "wall_s": wall_s, "jobs": jobs, "base_rates": rates}
    if rates["bools"] or rates["lettered"] or rates["list_items"]:
        events.notice(base_rates_sentence(rates, whole=len(exercises) == len(cat.exercises)))
    if passed != len(rows):
        data["error"] = (f"{len(rows) - passed} of {len(rows)} checks did not run or their fault changed nothing; "
                         "see the rows marked FAIL")
    return CheckReply(data,
                      0 if passed == len(rows) else EXIT_CHECK,
                      faults=len(faulted), shown=shown, unfaulted=len(rows) - len(faulted), ran=passed - shown,
                      wall_s=wall_s, jobs=jobs, timeouts=timeouts, show_wall=asked is not None)


def _checked_in_order(cat, runners, exercises):
    """Yield ``(exercise, result)`` in the order given, running them on all ``runners`` at once.

    Each runner gets a thread that takes the next exercise not yet taken; the
    results are handed back on the calling thread, in order, each as soon as
    it and those before it are done.

    Raises:
        WorkerError: a worker could not be started (the first such error).
    """

    # deferred: 'tutor list' loads this module but no runner or session
    from tutor.app.session import Session
    if len(runners) == 1:  # one worker: no threads at all
        session = Session(cat, runners[0])
        for ex in exercises:
            yield ex, session.check(ex)
        return
    todo = queue.SimpleQueue()
    for index, ex in enumerate(exercises):
        todo.put((index, ex))
    done = queue.SimpleQueue()
    stopping = threading.Event()

    def work(session) -> None:
        while not stopping.is_set():
            try:
                index, ex = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((index, session.check(ex), None))
            except Exception as exc:  # handed to the calling thread, which raises it
                done.put((index, None, exc))
                return

    threads = [threading.Thread(target=work, args=(Session(cat, runner),), daemon=True, name=f"check-{n}")
               for n, runner in enumerate(runners)]
    for thread in threads:
        thread.start()
    finished: dict[int, object] = {}
    try:
        for index in range(len(exercises)):
            while index not in finished:
                got, result, error = done.get()
                if error is not None:
                    raise error
                finished[got] = result
            yield exercises[index], finished.pop(index)
    finally:
        stopping.set()


def fault_shows(ex, result) -> bool:
    """Whether ``tutor check`` counts this run as good: it ran, and a fault (if any) changed the observation."""
    return result.status == "ok" and (result.differs is not False)


#: The band the catalog keeps its graded answers in: a learner who always says "no" (or always
#: picks one letter) must not score well without reasoning.
YES_BAND = (0.35, 0.65)
#: The largest share of lettered exercises any one letter may be right in.
MOST_PER_LETTER = 0.35


def base_rates(graded) -> dict:
    """How the measured graded answers spread, from ``(exercise, observed)`` pairs.

    ``yes``: the share of yes among ``bool`` exercises' graded observations;
    ``letters``: for choice exercises lettered a, b, c, …, the share of each
    correct letter; ``list_yes``: the share of yes among the yes/no items of
    ``list`` answers. Each comes with its count (``bools``, ``lettered``,
    ``list_items``). Only measured observations count: an exercise whose check
    did not run is left out, and so is a warm-up (``graded`` false), which grades nothing.
    """
    yes, letters, items = [], {}, []
    for ex, observed in graded:
        if observed is None or not ex.graded:
            continue
        name = ex.kind.name
        if name == "bool":
            yes.extend(observed if isinstance(observed, list) else [observed])
        elif name == "choice" and all(len(c) == 1 for c, _ in ex.choices):
            letters[observed] = letters.get(observed, 0) + 1
        elif name == "list":
            items.extend(v for v in observed if isinstance(v, bool))
    lettered = sum(letters.values())
    return {"yes": sum(yes) / len(yes) if yes else None, "bools": len(yes),
            "letters": {c: letters[c] / lettered for c in sorted(letters)}, "lettered": lettered,
            "list_yes": sum(items) / len(items) if items else None, "list_items": len(items)}


def base_rates_sentence(rates: dict, whole: bool = True) -> str:
    """The base rates in one line for the author's view.

    The bands are the catalog's: they are judged only when ``whole`` (every
    exercise was checked). A set or a few ids hold too few answers for a
    share of them to say anything, so their line says the shares and that.
    """
    def share(x):
        return f"{100 * x:.0f} %"
    parts = [f"yes in {share(rates['yes'])} of {rates['bools']} yes/no answers" if rates["bools"]
             else "no yes/no answers",
             f"correct letters ({rates['lettered']}): " + ", ".join(f"{c} {share(s)}" for c, s in rates["letters"].items())
             if rates["lettered"] else "no lettered choices",
             f"yes in {share(rates['list_yes'])} of {rates['list_items']} yes/no list items" if rates["list_items"]
             else "no yes/no list items"]
    line = "base rates: " + "; ".join(parts)
    if not whole:
        return line + " (the bands are judged over the whole catalog only: check every exercise to judge them)"
    low, high = YES_BAND
    outside = [f"yes/no answers should be yes {share(low)} to {share(high)} of the time"
               for x in [rates["yes"]] if x is not None and not low <= x <= high]
    outside += [f"no letter should be right in more than {share(MOST_PER_LETTER)} of lettered exercises"
                for x in [max(rates["letters"].values(), default=0.0)] if x > MOST_PER_LETTER]
    return line + (f" — out of band: {'; '.join(outside)}" if outside else "")
