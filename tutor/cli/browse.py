"""The catalog, read: ``tutor list`` and ``tutor show`` (an exercise, or a set with its primer). Nothing runs.

Like every command module, each returns data (:mod:`tutor.cli.replies`) and prints nothing.
"""

from __future__ import annotations

import difflib

from exercises.faults import diff
from tutor.cli.common import catalog, exercise, find_set
from tutor.cli.replies import Events, ListReply, ShowReply, ShowSetReply, UsageError
from tutor.model.finding import suggestions


def list_(args, events: Events) -> ListReply:
    cat = catalog()
    sets = (find_set(cat, args.set_id),) if args.set_id else cat.sets
    return ListReply({"sets": [{"id": s.id, "title": s.title, "summary": s.summary,
                                "exercises": [e.to_dict() for e in s.exercises]} for s in sets],
                      "count": sum(len(s.exercises) for s in sets)}, sets=sets)


def show(args, events: Events) -> ShowReply | ShowSetReply:
    """``tutor show ID``: an exercise by its id, else a set by its id or title.

    Raises:
        UsageError: neither an exercise nor a set is named so; the sentence offers close ids.
    """
    cat = catalog()
    try:
        ex = exercise(cat, args.id)
    except UsageError:
        try:
            exercise_set = find_set(cat, args.id)
        except UsageError:
            raise UsageError(_neither(cat, args.id)) from None
        return ShowSetReply({"set": {"id": exercise_set.id, "title": exercise_set.title, "order": exercise_set.order,
                                     "summary": exercise_set.summary, "primer": exercise_set.primer,
                                     "exercises": [{"id": e.id, "title": e.title} for e in exercise_set.exercises]}},
                            exercise_set=exercise_set)
    fault = cat.fault_of(ex)
    patch = diff(fault) if fault else ""
    data = ex.to_dict()
    data.update(prompt=ex.prompt, explain=ex.explain, hints=list(ex.hints), diff=patch,
                fault_summary=fault.summary if fault else None)
    return ShowReply(data, exercise=ex, fault=fault, patch=patch)


def _neither(cat, text: str) -> str:
    """The sentence for a name that is neither an exercise id nor a set's id or title, with close ids."""
    wanted = text.strip()
    close = suggestions(cat, wanted) + difflib.get_close_matches(wanted.casefold(), [s.id for s in cat.sets], n=2)
    hint = f"did you mean {', '.join(close)}?" if close else "'tutor list' shows every set and exercise id."
    return f"there is no exercise or set {wanted!r}; {hint}"
