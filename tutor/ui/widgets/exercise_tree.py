"""The catalog as a tree: sets (with solved/total) holding their exercises."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Span, Text
from textual.widgets import Tree

from tutor.model.attempts import WARMUP, ExerciseProgress, LearnerProgress
from tutor.model.catalog import Catalog, Exercise
from tutor.model.finding import matches, named
from tutor.render.progress import with_warm_ups

#: status mark per exercise: solved, attempted, warmed up (an ungraded warm-up's bet made), untried
MARKS = {"solved": ("✓", "green"), "attempted": ("✗", "red"), "warmed": ("○", "cyan"), "untried": ("·", "dim")}


SET_PREFIX = "set:"
#: A search for one of these lists only the exercises due for review (the ones marked ↻).
DUE_WORDS = frozenset({"due", "↻", "review"})


def set_id_of(data: str | None) -> str | None:
    """The set id when a node's data names a set, else None."""
    return data[len(SET_PREFIX):] if data and data.startswith(SET_PREFIX) else None


def status_of(progress: ExerciseProgress, graded: bool = True) -> str:
    """``solved``, ``attempted``, ``warmed`` or ``untried`` for one exercise's progress (since its last reset).

    ``warmed``: a warm-up (``graded`` false) with anything since its reset — a bet, or a Find and fix of its
    mystery — which counts for nothing, so it is never ``attempted`` (✗); so are only warm-up bets.
    """
    if progress.solved:
        return "solved"
    if progress.current and (not graded or all(a.mode == WARMUP for a in progress.current)):
        return "warmed"
    return "attempted" if progress.current else "untried"


class ExerciseTree(Tree[str]):
    """Every set in catalog order, each exercise marked ✓ solved, ✗ attempted, · untried.

    Set nodes carry ``"set:<set id>"`` as data (see :func:`set_id_of`);
    exercise nodes carry the exercise id (kebab-case, never holding a colon),
    so ``Tree.NodeSelected`` on a leaf tells the screen which exercise to open.
    Exercises due for review carry ``↻``; :meth:`show_only` keeps the
    exercises a search finds (:func:`tutor.model.finding.matches`).
    """

    DEFAULT_CSS = """
    ExerciseTree {
        height: 1fr;
        min-height: 3;
    }
    """

    def __init__(self, catalog: Catalog, progress: LearnerProgress, due: set[str] | None = None, **kwargs) -> None:
        """Args:
            catalog: the exercises to list.
            progress: the learner's progress, for the marks and counts.
            due: the ids due for review (marked ``↻``).
        """
        super().__init__("exercises", **kwargs)
        self.catalog = catalog
        self.show_root = False
        self.guide_depth = 3
        self.progress = progress
        self.due: set[str] = set(due or ())
        self.query_text = ""
        #: what each shown line was drawn from ({node data: key}), so a refresh redraws only what changed
        self._drawn: dict[str, tuple] = {}
        self._fill(progress)

    def refresh_progress(self, progress: LearnerProgress, due: set[str] | None = None) -> None:
        """Redraw the marks and counts that fresh progress (and the ids due for review) changed.

        The lines stay where they are (the cursor with them): only a label whose mark, ``↻``
        or count differs is replaced, so returning to the home screen costs a look-up per
        exercise, not a new tree.
        """
        self.progress = progress
        if due is not None:
            self.due = set(due)
        sets = {s.id: s for s in self.catalog.sets}
        for set_node in self.root.children:
            exercise_set = sets[set_id_of(set_node.data)]
            key, label = self._set_label(exercise_set, progress)
            if self._drawn.get(set_node.data) != key:
                self._drawn[set_node.data] = key
                set_node.set_label(label)
            for node in set_node.children:
                exercise_progress = progress.of(node.data)
                key = (status_of(exercise_progress, self.catalog.get(node.data).graded), node.data in self.due)
                if self._drawn.get(node.data) != key:
                    self._drawn[node.data] = key
                    node.set_label(self.exercise_label(self.catalog.get(node.data), exercise_progress, key[1]))

    def show_only(self, query: str, keep: str | None = None) -> int:
        """Keep the exercises ``query`` finds (all for an empty one); the cursor goes to ``keep``
        when it is shown, else to the first.

        Returns:
            how many exercises are shown.
        """
        self.query_text = query.strip()
        self.clear()
        shown = self._fill(self.progress)
        self.call_after_refresh(lambda: (keep and self.move_to(keep)) or self.move_to_first_exercise())
        return shown

    def move_to_first_exercise(self) -> None:
        """The cursor on the first exercise shown, preferring one the search names in its id, title or set."""
        leaves = list(self._leaves())
        sets = {s.id: s for s in self.catalog.sets}
        named_leaves = [leaf for leaf in leaves
                        if named(self.catalog.get(leaf.data), sets[self.catalog.get(leaf.data).set], self.query_text)]
        first = (named_leaves or leaves or [None])[0]
        if first is not None:
            self.move_to(first.data)

    def move_to(self, exercise_id: str) -> bool:
        """Put the cursor on this exercise's line, scrolled into view; False when it is not shown."""
        self._tree_lines  # noqa: B018 -- lays the lines out now, so every node knows its line
        for node in self._leaves():
            if node.data == exercise_id:
                before = self.cursor_line
                self.move_cursor(node)
                if self.cursor_line == before:
                    # the same line holds another exercise now (a new filter): say so as a move would,
                    # or what follows the highlight (the detail pane) stays on the one before
                    self.post_message(Tree.NodeHighlighted(node))
                return node.line >= 0
        return False

    def shown_ids(self) -> list[str]:
        """The exercises listed now, in order."""
        return [node.data for node in self._leaves()]

    def _leaves(self):
        for set_node in self.root.children:
            yield from set_node.children

    def _fill(self, progress: LearnerProgress) -> int:
        shown = 0
        self._drawn = {}
        for exercise_set in self.catalog.sets:
            exercises = [e for e in exercise_set.exercises if self._finds(e, exercise_set)]
            if not exercises:
                continue
            key, label = self._set_label(exercise_set, progress)
            node = self.root.add(label, data=SET_PREFIX + exercise_set.id, expand=True)
            self._drawn[node.data] = key
            for exercise in exercises:
                exercise_progress = progress.of(exercise.id)
                due = exercise.id in self.due
                node.add_leaf(self.exercise_label(exercise, exercise_progress, due), data=exercise.id)
                self._drawn[exercise.id] = (status_of(exercise_progress, exercise.graded), due)
                shown += 1
        return shown

    def _finds(self, exercise: Exercise, exercise_set) -> bool:
        """Whether the search keeps this exercise: ``due`` keeps the ones due for review, any other
        search what it finds (:func:`tutor.model.finding.matches`)."""
        if self.query_text.casefold() in DUE_WORDS:
            return exercise.id in self.due
        return matches(exercise, exercise_set, self.query_text)

    @staticmethod
    def _set_label(exercise_set, progress: LearnerProgress) -> tuple[tuple, Text]:
        """A set's line, ``Shapes  3/9``, with the counts it was drawn from; a warm-up is counted beside the
        graded exercises, never among them (``Capstone  0/3 + 1 warm-up``, as ``tutor progress`` says it)."""
        graded = [e for e in exercise_set.exercises if e.graded]
        solved = sum(progress.of(e.id).solved for e in graded)
        warm_ups = len(exercise_set.exercises) - len(graded)
        title, counts = exercise_set.title, f"  {solved}/{with_warm_ups(len(graded), warm_ups)}"
        label = Text(title + counts, spans=[Span(0, len(title), "bold"),
                                            Span(len(title), len(title) + len(counts), "cyan")])
        return (solved, len(graded), warm_ups), label

    def process_label(self, label) -> Text:
        """A label as it is given when it is one line of ``Text`` (every label of this tree): Textual's
        own copies each label's first line, twice per node added — the cost of a long catalog."""
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def get_label_width(self, node) -> int:
        """The label's width in cells, from its text (Textual's default renders every label to
        measure it, on every rebuild of the lines: the cost of a long catalog)."""
        icon = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""
        return node.label.cell_len + cell_len(icon)

    @staticmethod
    def exercise_label(exercise: Exercise, progress: ExerciseProgress, due: bool = False) -> Text:
        """``✓ head-split — title`` with the mark coloured by status; ``↻`` when it is due for review."""
        mark, style = MARKS[status_of(progress, exercise.graded)]
        review = "↻ " if due else ""
        start = len(mark) + 1 + len(review)  # one Text built whole, not assembled piece by piece (a long catalog)
        spans = [Span(0, len(mark), style), Span(start, start + len(exercise.id), "bold")]
        if due:
            spans.insert(1, Span(start - len(review), start, "bold yellow"))
        return Text(f"{mark} {review}{exercise.id} — {exercise.title}", spans=spans)
