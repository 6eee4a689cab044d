"""The catalog: every exercise, read from ``exercises/*.toml`` and validated.

Each set lives in one TOML file with a ``[set]`` table and ``[[exercise]]``
tables (DESIGN.md, "An exercise"). Loading turns them into frozen dataclasses
and rejects, with one sentence naming the file, the exercise and the key:
unknown keys, missing fields, wrong types, duplicate ids, unknown faults or
faults that no longer apply, and checks that do not exist. TOML is data only;
nothing in it is executed, and this module imports neither torch nor Textual
(a check's existence is verified by reading its module as text).

Loading is :func:`tutor.store.catalog_cache.load_catalog`'s: the store keeps
the validated catalog across processes; :func:`build_catalog` here reads and
validates, no cache involved.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property, lru_cache
from pathlib import Path

from exercises.faults import Fault, FaultError, add_faults
from tutor.model import answers
from tutor.model.answers import AnswerKind

FORMAT_VERSION = 1
EXERCISES_DIR = Path(__file__).resolve().parents[2] / "exercises"
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_CATALOG_BYTES = 2_000_000


class CatalogError(ValueError):
    """A catalog file that cannot be used; the message names file and key."""


#: The book chapters the exercises come from (``../shared/seeds/``), by number.
CHAPTERS = {"000": "Shapes, storage, gradients and state",
            "001": "The training loop",
            "004": "A language model you can interrogate"}


def _key(toml_type, *, listed: bool = True, **default):
    """A dataclass field that a set file's table spells as a key of ``toml_type``.

    The field's name is the key; a field without a default is a required key.
    ``listed=False`` keeps a long text field out of the short ``to_dict``
    (the one ``tutor list --json`` prints for every exercise).
    """
    return field(metadata={"toml": toml_type, "listed": listed}, **default)


def _spec(cls) -> dict:
    """``{key: (TOML type, required)}`` for the ``_key`` fields of ``cls``, in field order."""
    return {f.name: (f.metadata["toml"], f.default is MISSING and f.default_factory is MISSING)
            for f in fields(cls) if "toml" in f.metadata}


@dataclass(frozen=True)
class Exercise:
    """One exercise, as data. See DESIGN.md, "An exercise".

    Each field is a key of an ``[[exercise]]`` table, with the TOML type given
    to ``_key``; the loader's key check and ``to_dict`` both read this list.
    ``kind`` is read as the kind's name and held as its
    :class:`~tutor.model.answers.AnswerKind`, configured with the exercise's
    ``choices``, ``answer_length``, ``answer_items`` and ``tolerance`` (built
    again from them whenever the exercise is, so ``dataclasses.replace``
    keeps the two in step).
    """

    id: str = _key(str)
    set: str = _key(str)
    title: str = _key(str)
    source: str = _key(str)
    prompt: str = _key(str, listed=False)
    kind: AnswerKind = _key(str)
    check: str = _key(str)
    explain: str = _key(str, listed=False)
    hints: tuple[str, ...] = _key(list, listed=False)
    budget_s: float = _key((int, float))
    fault: str | None = _key(str, default=None)
    choices: tuple[tuple[str, str], ...] = _key(list, default=())
    tolerance: float = _key((int, float), default=0.0)
    observe: str = _key(str, default="faulted")
    timeout_s: float = _key((int, float), default=0.0)
    answer_length: int | None = _key(int, default=None)
    answer_items: str | tuple[str, ...] | None = _key((str, list), default=None)
    seed_per_attempt: bool = _key(bool, default=False)
    #: False for a warm-up: its prediction is run, shown and saved (as mode ``warmup``), but never
    #: counts towards solving, calibration, review, a class's score or the report
    graded: bool = _key(bool, default=True)

    def __post_init__(self) -> None:
        name = self.kind if isinstance(self.kind, str) else self.kind.name
        object.__setattr__(self, "kind", answers.make(name, choices=self.choices, length=self.answer_length,
                                                      items=self.answer_items, tolerance=self.tolerance))

    @property
    def answer_format(self) -> str:
        """How to type an answer to this exercise, in one phrase (its kind's :meth:`~AnswerKind.format_hint`)."""
        return self.kind.format_hint()

    def parse_answer(self, text: str):
        """Read a learner's answer for this exercise (kind, choices, list length).

        Raises:
            tutor.model.answers.AnswerError: one sentence naming the expected format.
        """
        return self.kind.parse(text)

    @property
    def source_label(self) -> str:
        """Where the idea comes from, for a reader who has not seen the seeds.

        ``"000 · 1. Shape is part of the algorithm"`` reads ``"From chapter
        000, Shapes, storage, gradients and state: 1. Shape is part of the
        algorithm"``; a source in another form is returned as it is.
        """
        number, sep, section = self.source.partition(" · ")
        if not sep or number not in CHAPTERS:
            return self.source
        return f"From chapter {number}, {CHAPTERS[number]}: {section}"

    def seed_for(self, earlier_attempts: int) -> int:
        """The check's seed for a learner's next attempt.

        An exercise with ``seed_per_attempt`` (the capstone) gives attempt
        n + 1 the seed n, so each attempt meets a new, reproducible mystery;
        every other exercise keeps seed 0, the seed its values are pinned at.
        """
        return earlier_attempts if self.seed_per_attempt else 0

    @property
    def time_limit_s(self) -> float:
        """Wall-clock limit for one run: explicit, else generous over budget."""
        return self.timeout_s or max(30.0, 6.0 * self.budget_s)

    def to_dict(self) -> dict:
        """The exercise as plain data (lists, not tuples), without its long texts.

        Choices become ``{"id", "text"}`` tables as in the set file; the
        derived ``source_label`` and ``answer_format`` are added.
        """
        data = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.metadata["listed"]}
        data["choices"] = [{"id": c, "text": t} for c, t in self.choices]
        data.update(source_label=self.source_label, answer_format=self.answer_format)
        return data


def _plain(value):
    """Tuples (nested too) as lists, and an answer kind as its name: the form JSON and TOML write."""
    if isinstance(value, AnswerKind):
        return value.name
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class ExerciseSet:
    """One set file's ``[set]`` table, with the set's exercises in file order.

    ``order`` places the set on the learner's path (the sets are taught in
    ascending order, each relying on those before it); ``summary`` is one
    line for the list; ``primer`` is the short text a learner reads before
    the set's first exercise: the idea, the seed section it comes from, and
    what the exercises will ask them to predict.
    """

    id: str = _key(str)
    title: str = _key(str)
    order: int = _key(int)
    summary: str = _key(str)
    primer: str = _key(str, default="")
    exercises: tuple[Exercise, ...] = field(default=())


@dataclass(frozen=True)
class Catalog:
    sets: tuple[ExerciseSet, ...]
    faults: dict

    @property
    def exercises(self) -> list[Exercise]:
        return [ex for s in self.sets for ex in s.exercises]

    @cached_property
    def _by_id(self) -> dict[str, Exercise]:
        """Every exercise by id, built on first use (a screen looks up each of its rows)."""
        return {ex.id: ex for ex in self.exercises}

    def get(self, exercise_id: str) -> Exercise:
        """The exercise with this id.

        Raises:
            KeyError: with a sentence listing close matches.
        """
        found = self._by_id.get(exercise_id)
        if found is not None:
            return found
        close = difflib.get_close_matches(exercise_id, [e.id for e in self.exercises], n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "run 'tutor list' to see every id."
        raise KeyError(f"there is no exercise {exercise_id!r}; {hint}")

    def get_set(self, set_id: str) -> ExerciseSet:
        for s in self.sets:
            if s.id == set_id:
                return s
        raise KeyError(f"there is no set {set_id!r}; the sets are {', '.join(s.id for s in self.sets)}.")

    def fault_of(self, exercise: Exercise) -> Fault | None:
        return self.faults[exercise.fault] if exercise.fault else None


#: {key: (TOML type, required)} of a [set] table and an [[exercise]] table, read off the dataclasses.
_SET_KEYS = _spec(ExerciseSet)
_EX_KEYS = _spec(Exercise)


def catalog_dir() -> Path:
    """The folder of set files: ``exercises/``, or ``$TUTOR_CATALOG_DIR`` (benchmarks and tests only).

    Another folder's checks are looked up in its own folder, and its faults'
    files under its parent, as for any folder passed to :func:`tutor.store.catalog_cache.load_catalog`.
    """
    chosen = os.environ.get("TUTOR_CATALOG_DIR")
    return Path(chosen).resolve() if chosen else EXERCISES_DIR


def text_digest(text: str) -> str:
    """The BLAKE2b digest (hex) of a file's text, as the build read it (the cache compares files by it)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def build_catalog(directory: Path, root: Path, listing: list[Path], reads: dict | None = None) -> Catalog:
    """Parse and validate the set files ``listing`` (of ``directory``), no cache involved.

    Args:
        reads: filled with ``{path: text digest}`` of every file read (the set files, each
            check's module, each fault's target), for the cache's key.

    Raises:
        CatalogError: one sentence naming the file, the exercise and the key.
    """
    reads = {} if reads is None else reads
    _functions_in.cache_clear()  # each build reads the check modules as they are now
    sets, seen, faults, uses = [], {}, {}, []
    for path in listing:
        sets.append(_load_set(path, faults, seen, uses, root, reads))
    for where, fault_id in uses:
        if fault_id not in faults:
            raise CatalogError(f"{where}: key 'fault' names {fault_id!r}, which no [[fault]] table defines")
    sets.sort(key=lambda s: (s.order, s.id))
    for s in sets:  # 'tutor show NAME' takes either, so a name must say which
        if s.id in seen:
            raise CatalogError(f"{seen[s.id]}: exercise {s.id!r}: its id is also a set's id; rename one of them")
    for ex in (ex for s in sets for ex in s.exercises):
        module = root / "exercises" / f"{ex.check.partition('.')[0]}.py"
        reads.setdefault(module, _functions_in(module)[1])  # the text validation read, from the memo
    return Catalog(sets=tuple(sets), faults=faults)


def _load_set(path: Path, faults: dict, seen: dict, uses: list, root: Path, reads: dict) -> ExerciseSet:
    try:  # imported here: a cached catalog is loaded without parsing any TOML
        # deferred: the validated cache usually spares reading any TOML
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        # deferred: the validated cache usually spares reading any TOML
        import tomli as tomllib

    name = path.name
    try:
        if path.stat().st_size > MAX_CATALOG_BYTES:
            raise CatalogError(f"{name}: the file is larger than {MAX_CATALOG_BYTES} bytes; split it")
        text = path.read_text(encoding="utf-8")
        reads[path] = text_digest(text)
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{name}: cannot read the file ({exc.__class__.__name__}); check it is UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{name}: the TOML does not parse ({exc}); fix the syntax") from None
    unknown = set(data) - {"format_version", "set", "exercise", "fault"}
    if unknown:
        raise CatalogError(f"{name}: unknown top-level key {sorted(unknown)[0]!r}; "
                           "allowed: format_version, [set], [[exercise]], [[fault]]")
    if data.get("format_version") != FORMAT_VERSION:
        raise CatalogError(f"{name}: format_version must be {FORMAT_VERSION}, found {data.get('format_version')!r}")
    meta = data.get("set")
    if not isinstance(meta, dict):
        raise CatalogError(f"{name}: missing the [set] table (id, title, order, summary)")
    _check_keys(meta, _SET_KEYS, f"{name}: [set]")
    try:
        for fault, source in add_faults(data, name, root, faults):
            reads[root / fault.file] = text_digest(source)
    except FaultError as exc:
        raise CatalogError(str(exc)) from None
    exercises = []
    entries = data.get("exercise", [])
    if not isinstance(entries, list):
        raise CatalogError(f"{name}: 'exercise' must be an array of tables ([[exercise]])")
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise CatalogError(f"{name}: exercise #{n} must be a table")
        where = f"{name}: exercise {entry.get('id', f'#{n}')!r}"
        _check_keys(entry, _EX_KEYS, where)
        exercises.append(_exercise(entry, meta["id"], uses, seen, where, root / "exercises"))
        seen[entry["id"]] = name
    return ExerciseSet(id=meta["id"], title=meta["title"], order=meta["order"], summary=meta["summary"],
                       primer=meta.get("primer", "").strip(), exercises=tuple(exercises))


def _check_keys(table: dict, spec: dict, where: str) -> None:
    unknown = set(table) - set(spec)
    if unknown:
        raise CatalogError(f"{where}: unknown key {sorted(unknown)[0]!r}; allowed keys are {', '.join(spec)}")
    for key, (kind, required) in spec.items():
        if key not in table:
            if required:
                raise CatalogError(f"{where}: missing key {key!r}")
            continue
        value = table[key]
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            expected = kind.__name__ if isinstance(kind, type) else "number"
            article = "an" if expected == "int" else "a"
            raise CatalogError(f"{where}: key {key!r} must be {article} {expected}, found {type(value).__name__}")


def _exercise(e: dict, set_id: str, uses: list, seen: dict, where: str, directory: Path) -> Exercise:
    if not _ID.match(e["id"]):
        raise CatalogError(f"{where}: key 'id' must be kebab-case (a-z, 0-9, single hyphens)")
    if e["id"] in seen:
        raise CatalogError(f"{where}: duplicate id, already defined in {seen[e['id']]}")
    if e["set"] != set_id:
        raise CatalogError(f"{where}: key 'set' is {e['set']!r} but the file's [set] id is {set_id!r}")
    choices = []
    for c in e.get("choices", []):
        if not (isinstance(c, dict) and set(c) == {"id", "text"} and all(isinstance(v, str) and v for v in c.values())):
            raise CatalogError(f"{where}: key 'choices' must hold tables with exactly id and text strings")
        choices.append((c["id"], c["text"]))
    try:
        answers.validate(e)
    except answers.KindError as exc:
        raise CatalogError(f"{where}: {exc}") from None
    if len({c for c, _ in choices}) != len(choices):
        raise CatalogError(f"{where}: key 'choices' has a duplicate choice id")
    if not (len(e["hints"]) >= 2 and all(isinstance(h, str) and h.strip() for h in e["hints"])):
        raise CatalogError(f"{where}: key 'hints' must hold at least two non-empty strings (a nudge, then the mechanism)")
    fault = e.get("fault")
    if fault in ("", "none"):
        fault = None
    if fault is not None:
        uses.append((where, fault))
    observe = e.get("observe", "faulted" if fault else "clean")
    if observe not in ("faulted", "clean", "both"):
        raise CatalogError(f"{where}: key 'observe' must be faulted, clean or both")
    if observe != "clean" and fault is None:
        raise CatalogError(f"{where}: key 'observe' is {observe!r} but the exercise has no fault")
    _check_exists(e["check"], where, directory)
    if e["budget_s"] <= 0:
        raise CatalogError(f"{where}: key 'budget_s' must be positive")
    items = e.get("answer_items")
    # the table as read (its keys are Exercise's fields), with values in the dataclass's types
    return Exercise(**{**e, "hints": tuple(e["hints"]), "budget_s": float(e["budget_s"]), "fault": fault,
                       "choices": tuple(choices), "tolerance": float(e.get("tolerance", 0.0)),
                       "observe": observe, "timeout_s": float(e.get("timeout_s", 0.0)),
                       "answer_items": tuple(items) if isinstance(items, list) else items})


@lru_cache(maxsize=None)
def _functions_in(path: Path) -> tuple[frozenset[str], str]:
    """Names of the top-level functions a check module defines (read as text, never imported;
    once per module and build), and the digest of the text read."""
    text = path.read_text(encoding="utf-8")
    return frozenset(re.findall(r"^def ([A-Za-z_][A-Za-z0-9_]*)\(", text, re.M)), text_digest(text)


def _check_exists(check: str, where: str, directory: Path) -> None:
    module, _, function = check.partition(".")
    path = directory / f"{module}.py"
    if not (module.isidentifier() and function.isidentifier()):
        raise CatalogError(f"{where}: key 'check' must look like set.function, found {check!r}")
    if not path.is_file():
        raise CatalogError(f"{where}: key 'check' names module {module!r}, but exercises/{module}.py does not exist")
    try:
        functions = _functions_in(path)[0]
    except (OSError, UnicodeDecodeError):
        raise CatalogError(f"{where}: exercises/{module}.py cannot be read as UTF-8 text") from None
    if function not in functions:
        raise CatalogError(f"{where}: key 'check' names {check!r}, but exercises/{module}.py defines no function {function!r}")
