"""The catalog as a tree: sets (with solved/total) holding their exercises."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree

from tutor.catalog import Catalog, Exercise
from tutor.progress import ExerciseProgress, LearnerProgress

#: status mark per exercise: solved, attempted, untried
MARKS = {"solved": ("✓", "green"), "attempted": ("✗", "red"), "untried": ("·", "dim")}


SET_PREFIX = "set:"


def set_id_of(data: str | None) -> str | None:
    """The set id when a node's data names a set, else None."""
    return data[len(SET_PREFIX):] if data and data.startswith(SET_PREFIX) else None


def status_of(progress: ExerciseProgress) -> str:
    """``solved``, ``attempted`` or ``untried`` for one exercise's progress."""
    if progress.solved:
        return "solved"
    return "attempted" if progress.attempts else "untried"


class ExerciseTree(Tree[str]):
    """Every set in catalog order, each exercise marked ✓ solved, ✗ attempted, · untried.

    Set nodes carry ``"set:<set id>"`` as data (see :func:`set_id_of`);
    exercise nodes carry the exercise id (kebab-case, never holding a colon),
    so ``Tree.NodeSelected`` on a leaf tells the screen which exercise to open.
    """

    DEFAULT_CSS = """
    ExerciseTree {
        height: 1fr;
        min-height: 3;
    }
    """

    def __init__(self, catalog: Catalog, progress: LearnerProgress, **kwargs) -> None:
        """Args:
            catalog: the exercises to list.
            progress: the learner's progress, for the marks and counts.
        """
        super().__init__("exercises", **kwargs)
        self.catalog = catalog
        self.show_root = False
        self.guide_depth = 3
        self._fill(progress)

    def refresh_progress(self, progress: LearnerProgress) -> None:
        """Redraw every mark and count from fresh progress, keeping the cursor."""
        line = self.cursor_line
        self.clear()
        self._fill(progress)
        if line >= 0:
            self.call_after_refresh(self._restore_cursor, line)

    def _restore_cursor(self, line: int) -> None:
        self.cursor_line = min(line, max(0, self.last_line))

    def _fill(self, progress: LearnerProgress) -> None:
        for exercise_set in self.catalog.sets:
            solved = sum(progress.of(e.id).solved for e in exercise_set.exercises)
            label = Text.assemble((exercise_set.title, "bold"),
                                  (f"  {solved}/{len(exercise_set.exercises)}", "cyan"))
            node = self.root.add(label, data=SET_PREFIX + exercise_set.id, expand=True)
            for exercise in exercise_set.exercises:
                node.add_leaf(self.exercise_label(exercise, progress.of(exercise.id)), data=exercise.id)

    @staticmethod
    def exercise_label(exercise: Exercise, progress: ExerciseProgress) -> Text:
        """``✓ head-split — title`` with the mark coloured by status."""
        mark, style = MARKS[status_of(progress)]
        return Text.assemble((mark, style), " ", (exercise.id, "bold"), f" — {exercise.title}")
