"""A learner's progress as Rich shows it: totals per set and calibration."""

from __future__ import annotations

from rich.text import Text

from tutor.model.attempts import ANSWER_MODES, PREDICT, WARMUP, counting, show_time, verdict_of
from tutor.model.calibration import is_guess
from tutor.render.result import VERDICT_STYLE, VERDICT_TEXT
from tutor.render.tables import WordTable


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.0f} %"


def _counted(n: int, what: str) -> str:
    """``1 warm-up``, ``2 warm-ups``."""
    return f"{n} {what}{'s' if n != 1 else ''}"


def with_warm_ups(graded: int, warm_ups: int) -> str:
    """How many exercises there are as a learner reads a list: the graded ones, and the warm-ups beside them
    (``3``, ``3 + 1 warm-up``, ``3 + 2 warm-ups``), the same in every count the tutor shows: ``tutor
    progress`` (its totals, and ``--all``), the home screen's list."""
    return f"{graded} + {_counted(warm_ups, 'warm-up')}" if warm_ups else str(graded)


def exercises_count(graded: int, warm_ups: int) -> str:
    """:func:`with_warm_ups` in a sentence: ``186 graded exercises + 1 warm-up`` (``12 exercises`` with none)."""
    if not warm_ups:
        return _counted(graded, "exercise")
    return f"{_counted(graded, 'graded exercise')} + {_counted(warm_ups, 'warm-up')}"


def set_totals(catalog, progress, per_set: dict | None = None) -> WordTable:
    """Per set: solved, tried, of how many, and (with calibration) the Brier score of its rated predictions.
    A warm-up (an ungraded exercise) is none of these: it is never solved, so it is counted beside the
    exercises (``3 + 1 warm-up``), never among them."""
    columns = ["set", "solved", "tried", "exercises"] + (["rated", "Brier"] if per_set is not None else [])
    table = WordTable(columns, styles=["bold"] + [""] * (len(columns) - 1))
    totals = [0, 0, 0, 0]
    for exercise_set in catalog.sets:
        entries = [progress.of(e.id) for e in exercise_set.exercises if e.graded]
        warm_ups = sum(not e.graded for e in exercise_set.exercises)
        row = [sum(e.solved for e in entries), sum(bool(e.current) for e in entries), len(entries), warm_ups]
        totals = [a + b for a, b in zip(totals, row)]
        extra = []
        if per_set is not None:
            c = per_set.get(exercise_set.id)
            extra = [str(c.count) if c else "0", f"{c.brier:.3f}" if c and c.brier is not None else "-"]
        table.add_row(exercise_set.title, str(row[0]), str(row[1]), with_warm_ups(row[2], row[3]), *extra)
    extra = [""] * 2 if per_set is not None else []
    table.add_row(Text("all", style="bold"), *[Text(str(v), style="bold") for v in totals[:2]],
                  Text(with_warm_ups(totals[2], totals[3]), style="bold"), *extra)
    return table


def sure_bets(progress) -> int:
    """How many warm-up bets in ``progress`` carry a confidence: said, and never rated."""
    return sum(a.mode == WARMUP and a.confidence is not None for e in progress.exercises.values() for a in e.attempts)


def calibration_renderables(overall, bets: int = 0) -> list:
    """How often the learner was right at each confidence, and the Brier score; a sentence when nothing is rated.
    ``bets``: the warm-up bets that carry a confidence (:func:`sure_bets`), which no calibration rates; the
    sentences say so, so a confidence given with a bet is never said to be missing."""
    left = f"your {bets} warm-up bet(s) with a confidence are never rated" if bets else ""
    if not overall.count:
        said = f"No graded prediction carries a confidence yet ({left})" if bets else \
            "No prediction carries a confidence yet"
        return [Text(f"{said}: give one with each prediction (the digits and g in the TUI, --confidence with "
                     "tutor run) to see how well you judge your own answers.", style="dim")]
    table = WordTable(["you said", "predictions", "right", "right %", "reads as"])
    for bucket in overall.buckets:
        if bucket.count:
            style = {"about right": "green", "over-confident": "red", "under-confident": "yellow"}.get(
                bucket.verdict, "dim")
            table.add_row(f"{bucket.confidence} %", str(bucket.count), str(bucket.right), _percent(bucket.rate),
                          Text(bucket.verdict, style=style))
    unrated = f"; {overall.unrated} without a confidence are left out" if overall.unrated else ""
    unrated += f"; {left}" if bets else ""
    return [table, Text.assemble(("Brier score ", "bold"), (f"{overall.brier:.3f}", "bold cyan"),
                                 f" over {overall.count} rated prediction(s) (0 is perfect, always saying 50 % "
                                 f"scores 0.250){unrated}")]


# --- attempts by mode (the progress screen, `tutor progress`) ----------------------------

#: How each attempt mode is named in a progress table.
MODE_WORDS = {PREDICT: "predict", WARMUP: "warm-up", "fix": "fix", "break": "break", "hunt": "hunt"}
_SHORT_STYLE = {"fixed": "green", "not fixed": "red", "changed": "cyan", "unchanged": "yellow"}


def attempt_result(attempt, exercise=None) -> Text:
    """What one attempt came to, in a word or two: a prediction's yes / no, an edit's verdict.

    A fix or hunt says ``fixed`` / ``not fixed``; a break says what the
    learner's fault did (``changed`` / ``unchanged``) and whether its
    prediction matched (``free text`` when it does not read as ``exercise``'s
    kind, so it was not graded).
    """
    if attempt.mode in ANSWER_MODES:
        if attempt.status == "timeout":
            return Text("timed out", style="yellow")
        if attempt.mode == WARMUP:  # a bet that counts for nothing: said as it came out, in no colour of a score
            return Text(("matched" if attempt.correct else "missed") + " · ungraded", style="cyan")
        return Text("yes", style="green") if attempt.correct else Text("no", style="red")
    verdict = attempt.verdict or attempt.status
    text = Text(verdict, style=_SHORT_STYLE.get(verdict, ""))
    if attempt.mode == "break":
        graded = "right" if attempt.correct else "wrong" if _graded(attempt, exercise) else "free text"
        text.append(f" · prediction {graded}", style={"right": "green", "wrong": "red"}.get(graded, "dim"))
    return text


def _graded(attempt, exercise) -> bool:
    """Whether a break's saved prediction reads as the exercise's kind (so it was graded), where the exercise is known."""
    if exercise is None or not attempt.prediction:
        return False
    from tutor.model import answers  # deferred: only a break's saved prediction is read again
    try:
        exercise.parse_answer(attempt.prediction)
    except answers.AnswerError:
        return False
    return True


def hinted(attempt) -> str:
    """What follows a prediction made after revealing hints: `` (after 2 hints)``; "" without one."""
    hints = attempt.hints if attempt is not None else 0
    return f" (after {hints} hint{'s' if hints != 1 else ''})" if hints else ""


def sure_cell(attempt, exercise=None) -> str:
    """How sure the learner said they were: ``70 %``, ``25 % guess`` at the question's chance (a guess,
    ``g`` or ``--confidence guess``; known with ``exercise``), ``-`` for none."""
    if attempt.confidence is None:
        return "-"
    guess = exercise is not None and is_guess(attempt, exercise.kind.chance)
    return f"{attempt.confidence} %" + (" guess" if guess else "")


def guessed(attempt, exercise=None) -> str:
    """What follows a prediction recorded as a guess (``g``, ``--confidence guess``): `` (a guess)``; ""
    for any other, and without ``exercise`` (its chance is not known)."""
    guess = attempt is not None and exercise is not None and is_guess(attempt, exercise.kind.chance)
    return " (a guess)" if guess else ""


def attempt_row(attempt, exercise=None) -> list:
    """Mode, prediction (with the hints revealed before it), observed and result cells of one attempt
    (``-`` where a mode has none)."""
    return [MODE_WORDS.get(attempt.mode, attempt.mode), Text((attempt.prediction or "-") + hinted(attempt)),
            Text(attempt.observed or "-"), attempt_result(attempt, exercise)]


def edits_summary(progress, exercise=None) -> Text:
    """One exercise's edit-mode attempts by mode, with the last verdict of each: ``fix 2, last fixed``."""
    parts = []
    for mode in ("fix", "break", "hunt"):
        edits = progress.edits(mode)
        if edits:
            last = edits[-1]
            parts.append(Text.assemble(f"{mode} {len(edits)}, last ", attempt_result(last, exercise)))
    return Text(" · ").join(parts) if parts else Text("-", style="dim")


def progress_table(progress, catalog, seeded: set, preview) -> WordTable:
    """``tutor progress``: one row per exercise tried, predictions and edit attempts apart.

    The last answer is the prediction that counts (the latest), never an
    edit, with the hints revealed before it was made; the ``edits`` column (fix, break, hunt: each with its last
    verdict) is there only when some exercise has one.

    Args:
        progress: a :class:`tutor.model.attempts.LearnerProgress`.
        catalog: the catalog, or None (then a break's prediction is not read again).
        seeded: the ids of the exercises whose seed is a mystery (their rows name it).
        preview: the note as the row shows it (``tutor.cli.output.note_preview``).
    """
    edited = any(p.edits() for p in progress.exercises.values())
    table = WordTable(["exercise", "predictions", "last answer", "observed", "ever solved"] +
                      (["edits"] if edited else []) + ["note"])  # every column wraps at words
    known = {e.id: e for e in catalog.exercises} if catalog is not None else {}
    for ex_id, p in sorted(progress.exercises.items()):
        last = counting(p.predictions, lambda a: a.time)
        observed = (last.observed or "-") if last else "-"
        if last and ex_id in seeded:
            observed += f" (seed {last.seed})"  # which mystery the last attempt met
        reset = " (reset)" if p.reset_time and not p.current else ""
        table.add_row(ex_id, f"{len(p.predictions)}{reset}",
                      Text((last.prediction if last else "-") + hinted(last) + guessed(last, known.get(ex_id))),
                      Text(observed), "ungraded" if ex_id in known and not known[ex_id].graded else
                      "yes" if p.solved else "no",
                      *([edits_summary(p, known.get(ex_id))] if edited else []), Text(preview(p.note)))
    return table


def last_said(attempt) -> Text:
    """``you said X, the check observed Y`` (or ``…, the check ran out of time``) for a saved prediction;
    a warm-up's bet is said as one (:func:`warm_up_said`)."""
    if attempt.mode == WARMUP:
        return warm_up_said(attempt)
    seen = (", the check ran out of time",) if attempt.status == "timeout" else \
        (", the check observed ", (attempt.observed, "bold"))
    return Text.assemble("you said ", (attempt.prediction, "bold"), *seen)


def warm_up_said(attempt, sure: str = "", named: bool = True) -> Text:
    """A warm-up's saved bet as what it is, never a graded prediction:
    ``warm-up: you bet X; the mystery's first failing link was Y`` (or ``…; the check ran out of time``);
    ``sure`` follows the bet (`` (90 % sure)``); ``named`` false leaves out ``warm-up:`` where the line says it."""
    if attempt.status == "timeout":
        seen: tuple = ("; the check ran out of time",)
    elif attempt.observed == "none":  # the answer that names no link: every link of the mystery held
        seen = ("; every link of the mystery held (", ("none", "bold"), ")")
    else:
        seen = ("; the mystery's first failing link was ", (attempt.observed, "bold"))
    return Text.assemble("warm-up: " if named else "", "you bet ", (attempt.prediction, "bold"), sure, *seen)


def answers_count(attempts, graded: bool = True) -> str:
    """How many answers ``attempts`` (an exercise's, since its reset) hold, edits apart: ``2 prediction(s)``;
    warm-up bets are counted as what they are (``1 warm-up bet(s), ungraded``), never as predictions, and so
    is a warm-up (``graded`` false) with none yet (``0 warm-up bet(s), ungraded · 1 edit(s)``)."""
    said = sum(a.mode == PREDICT for a in attempts)
    bets = sum(a.mode == WARMUP for a in attempts)
    edits = sum(a.mode not in ANSWER_MODES for a in attempts)
    parts = [f"{said} prediction(s)"] if said or (graded and not bets) else []
    parts += [f"{bets} warm-up bet(s), ungraded"] if bets or not graded else []
    parts += [f"{edits} edit(s)"] if edits else []
    return " · ".join(parts)


def warm_up_state(attempts) -> str:
    """What a warm-up's attempts since its reset came to, for a line about the exercise: its bet made, or
    no bet yet (only a Find and fix of its mystery); both count for nothing."""
    if any(a.mode == WARMUP for a in attempts):
        return "warm-up bet made (ungraded)"
    return "no warm-up bet yet (ungraded)"


def exercise_history(progress, graded: bool = True) -> Text:
    """An exercise page's line about its attempts since the last reset:
    ``✓ solved · 2 prediction(s); last: you said X, the check observed Y · 1 edit attempt(s)``.
    A warm-up (``graded`` false, or only warm-up bets) is never "not solved": ``○ warm-up: ungraded``,
    and with only a Find and fix of its mystery, ``· no bet yet``."""
    current = progress.current
    said = [a for a in current if a.mode in ANSWER_MODES]  # fix, break and hunt attempts are no answers
    verdict = ("✓ solved", "green") if progress.solved else ("✗ not solved yet", "red")
    if (said or not graded) and all(a.mode == WARMUP for a in said):
        verdict = ("○ warm-up: ungraded", "cyan")
    edits = len(current) - len(said)
    edited = f" · {edits} edit attempt(s) (p shows them)" if edits else ""
    if not said:
        return Text.assemble(verdict, " · no prediction yet" if graded else " · no bet yet", edited)
    if all(a.mode == WARMUP for a in said):
        return Text.assemble(verdict, f" · {len(said)} bet(s); last: ", warm_up_said(said[-1], named=False), edited)
    return Text.assemble(verdict, f" · {answers_count(said)}; last: ", last_said(said[-1]), edited)


def saved_attempt(attempt) -> Text:
    """A saved prediction as an exercise page shows it after a relaunch (its evidence was not kept).
    A warm-up's bet is shown as one: no pass or fail, since it was never graded."""
    if attempt.mode == WARMUP:
        sure = f" ({attempt.confidence} % sure)" if attempt.confidence is not None else ""
        return Text.assemble(("○ ", "bold cyan"), warm_up_said(attempt, sure),
                             ("\nsaved, never graded: it counts towards no score", "cyan"),
                             (f"\n{show_time(attempt.time)} · {attempt.device} · mystery seed {attempt.seed} · "
                              "r bets again, on a new mystery", "dim"))
    word = verdict_of(attempt)  # a saved timeout is shown as one, never as a wrong prediction
    verdict = (VERDICT_TEXT.get(word, word), VERDICT_STYLE.get(word, "bold"))
    sure = f" ({attempt.confidence} % sure)" if attempt.confidence is not None else ""
    seen = ("; the check ran out of time",) if attempt.status == "timeout" else \
        ("; the check observed ", (attempt.observed, "bold"))
    return Text.assemble(verdict, "\nyou said ", (attempt.prediction, "bold"), sure, *seen,
                         (f"\n{show_time(attempt.time)} · {attempt.device} · "
                          "r runs it again to see the evidence", "dim"))
