"""An assignment: which exercises are graded, for how many points, and what learners see when.

Written by the instructor as TOML (``tutor grade --assignment week1.toml``)::

    name = "Week 1: shapes"
    due = 2026-12-05T23:59:00Z          # optional; a TOML date-time or ISO text
    observations = "after_due_date"     # optional: "visible" (default) or "after_due_date"
    visibility = "visible"              # Gradescope test visibility: visible, hidden,
                                        # after_due_date or after_published

    [[exercises]]
    id = "head-split"
    points = 2                          # default 1

    [[exercises]]
    id = "broadcast-loss"
    hidden_seeds = [7, 11]              # fix mode: the seeds a repair is also checked at

``exercises = ["head-split", "broadcast-loss"]`` is the short form (one point
each); ``tutor grade --exercises head-split,broadcast-loss`` is the same
without a file. With neither, the assignment is inferred: every catalog
exercise that some readable row names — and the output says so.

``max_score`` is the sum of the points. Rows for exercises outside the
assignment are reported in the gradebook and never scored. A warm-up (an
exercise whose ``graded`` is false, the capstone's blind bet) is practice
whatever the assignment says: 0 points, and a file that gives it more is refused.

Pure except :func:`load`, which reads the one file.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from tutor.model.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

#: Gradescope's values for a test's or a result's visibility.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
#: When a test's output may show what the check observed.
OBSERVATIONS = ("visible", "after_due_date")


@dataclass(frozen=True)
class Assigned:
    """One exercise of an assignment.

    Attributes:
        id: the exercise id (in the catalog).
        points: its score when the answer matches (0 for practice: graded and reported, never scored).
        hidden_seeds: seeds a fix is also checked at, never shown to learners.
        visibility: the Gradescope visibility of its test.
    """

    id: str
    points: float = 1.0
    hidden_seeds: tuple[int, ...] = ()
    visibility: str = "visible"


@dataclass(frozen=True)
class Assignment:
    """The graded exercises, in order, and when their observations may be shown.

    Attributes:
        exercises: the exercises, in the file's order (inferred: the catalog's).
        name: the assignment's name, or "".
        due: the due time (UTC), or None.
        observations: ``visible`` or ``after_due_date`` (see module docstring).
        inferred: True when no assignment was given and the rows named these exercises.
        source: the file it was read from, or None.
    """

    exercises: tuple[Assigned, ...]
    name: str = ""
    due: dt.datetime | None = None
    observations: str = "visible"
    inferred: bool = False
    source: str | None = None

    @property
    def ids(self) -> list[str]:
        return [a.id for a in self.exercises]

    @property
    def max_score(self) -> float:
        return float(sum(a.points for a in self.exercises))

    def get(self, ex_id: str) -> Assigned | None:
        return next((a for a in self.exercises if a.id == ex_id), None)

    def shows_observations(self, now: dt.datetime) -> bool:
        """Whether a test's output may say what was observed at ``now`` (UTC)."""
        return self.observations == "visible" or (self.due is not None and now >= self.due)

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "inferred": self.inferred,
                "due": self.due.isoformat(timespec="seconds") if self.due else None,
                "observations": self.observations, "max_score": self.max_score,
                "exercises": [{"id": a.id, "points": a.points, "hidden_seeds": len(a.hidden_seeds),
                               "visibility": a.visibility} for a in self.exercises]}


def from_ids(text: str, catalog) -> Assignment:
    """``--exercises ID,ID,...``: one point each.

    Raises:
        UsageError: an id is not in the catalog, or none is given.
    """
    ids = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not ids:
        raise UsageError("--exercises needs exercise ids separated by commas, such as head-split,broadcast-loss")
    return Assignment(tuple(Assigned(_known(i, catalog, "--exercises"), _points(i, catalog))
                            for i in _unique(ids, "--exercises")))


def inferred(catalog, named: set) -> Assignment:
    """The assignment when none was given: every catalog exercise in ``named``, in the catalog's order."""
    return Assignment(tuple(Assigned(e.id, _points(e.id, catalog)) for e in catalog.exercises if e.id in named),
                      inferred=True)


def load(path: str | Path, catalog) -> Assignment:
    """Read an assignment file (module docstring).

    Raises:
        UsageError: the file is missing, not TOML, or a field is wrong (one sentence naming it).
    """
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise UsageError(f"there is no assignment file {where}; check the path given to --assignment") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the assignment file {where} ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"the assignment file {where} is not valid TOML ({str(exc).splitlines()[0]})") from None
    return parse(data, catalog, where)


def parse(data: dict, catalog, where: str = "the assignment") -> Assignment:
    """An assignment from its TOML document (see :func:`load`)."""
    known = {"name", "due", "observations", "visibility", "exercises"}
    extra = sorted(set(data) - known)
    if extra:
        raise UsageError(f"{where} has the unknown key {extra[0]!r}; its keys are {', '.join(sorted(known))}")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise UsageError(f"the name in {where} must be text")
    visibility = data.get("visibility", "visible")
    if visibility not in VISIBILITIES:
        raise UsageError(f"the visibility {visibility!r} in {where} is not one of {', '.join(VISIBILITIES)}")
    observations = data.get("observations", "visible")
    if observations not in OBSERVATIONS:
        raise UsageError(f"observations = {observations!r} in {where} is not one of {', '.join(OBSERVATIONS)}")
    due = _due(data.get("due"), where)
    if observations == "after_due_date" and due is None:
        raise UsageError(f"{where} hides observations until the due date but sets no due; add due = 2026-12-05T23:59:00Z")
    items = data.get("exercises")
    if not isinstance(items, list) or not items:
        raise UsageError(f"{where} lists no exercises; add [[exercises]] tables with an id each, "
                         "or exercises = [\"head-split\", ...]")
    out = []
    for n, item in enumerate(items, 1):
        if isinstance(item, str):
            item = {"id": item}
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise UsageError(f"exercise {n} of {where} has no id; write id = \"head-split\"")
        extra = sorted(set(item) - {"id", "points", "hidden_seeds", "visibility"})
        if extra:
            raise UsageError(f"exercise {item['id']!r} of {where} has the unknown key {extra[0]!r}; its keys are "
                             "id, points, hidden_seeds, visibility")
        points = item.get("points", 1)
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not points >= 0:
            raise UsageError(f"the points of {item['id']!r} in {where} must be a number, 0 (practice) or more")
        seeds = item.get("hidden_seeds", [])
        if not isinstance(seeds, list) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
            raise UsageError(f"the hidden_seeds of {item['id']!r} in {where} must be a list of whole numbers 0 or more")
        vis = item.get("visibility", visibility)
        if vis not in VISIBILITIES:
            raise UsageError(f"the visibility {vis!r} of {item['id']!r} in {where} is not one of "
                             f"{', '.join(VISIBILITIES)}")
        ex_id = _known(item["id"].strip().lower(), catalog, where)
        if points and not _points(ex_id, catalog):
            raise UsageError(f"{ex_id!r} in {where} is an ungraded warm-up, so it can score nothing; "
                             "give it points = 0 (practice) or leave it out")
        out.append(Assigned(ex_id, float(points), tuple(seeds), vis))
    _unique([a.id for a in out], where)
    return Assignment(tuple(out), name=name, due=due, observations=observations, source=where)


def _due(value, where: str) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"the due {value!r} in {where} is not a date and time such as "
                             "2026-12-05T23:59:00Z") from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time(23, 59, 59))
    if not isinstance(value, dt.datetime):
        raise UsageError(f"the due in {where} is not a date and time such as 2026-12-05T23:59:00Z")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)


def _known(ex_id: str, catalog, where: str) -> str:
    try:
        return catalog.get(ex_id).id
    except KeyError as exc:
        raise UsageError(f"{where} names {ex_id!r}, which is not an exercise ({exc.args[0]})") from None


def _points(ex_id: str, catalog) -> float:
    """An exercise's default points: 1, or 0 for a warm-up (``Exercise.graded`` false), which never scores."""
    return 1.0 if catalog.get(ex_id).graded else 0.0


def _unique(ids: list[str], where: str) -> list[str]:
    seen = set()
    for i in ids:
        if i in seen:
            raise UsageError(f"{where} names {i!r} twice; name each exercise once")
        seen.add(i)
    return ids
