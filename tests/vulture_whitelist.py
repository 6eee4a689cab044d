"""Names vulture cannot see used (pyproject.toml, [tool.vulture]), each with the reason it stays.

Textual's handlers (``on_*``, ``action_*``, ``compose``, ``BINDINGS``...) and
the views registered with ``singledispatchmethod`` are ignored by pattern in
pyproject.toml; what is here is named one by one.
"""

from tutor.app.session import Session
from tutor.cli import _imported_when_run
from tutor.cli.doctor import doctor
from tutor.instructor.grade import gradebook_csv, results_json
from tutor.instructor.saving import save_results
from tutor.cli.parser import _Parser
from tutor.model.attempts import MODES, ExerciseProgress
from tutor.model.verdict import evidence_reproduces
from tutor.sandbox import confine, landlock
from tutor.sandbox.protocol import SIDE_STATUSES
from tutor.sandbox.speed import SOURCES, Speed
from tutor.store.names import default_learner
from tutor.ui.screens.fix import EditScreen
from tutor.ui.app import TutorApp
from tutor.ui.keys import PageFooter
from tutor.ui.widgets.exercise_tree import ExerciseTree

Session.break_it  # the session's edit-mode API, driven by tests/test_fix_session.py (Break it, the hunt)
Session.hunt
ExerciseProgress.edits  # the edit-mode attempts of an exercise, beside .predictions (tests/test_edit.py)
MODES  # the attempt vocabulary's modes, as docs and the progress format name them
evidence_reproduces  # the verdict's rule for which evidence counts, alone (tests/test_edit.py); judge reads it once
SIDE_STATUSES  # the protocol's statuses of a side, stated once beside the messages that carry them
SOURCES  # where a time limit's scale comes from, as TimeLimit.source names it
Speed.cpu_s  # the probe's CPU seconds, kept in the worker's hello beside its wall time
default_learner  # the default learner name alone (tests/test_progress.py), beside default_learner_and_notice
EditScreen.save_to_verdict_s  # seconds from a save to its verdict on screen, read by tests/test_edit_tui.py
ExerciseTree.shown_ids  # the ids the filtered tree shows, read by tests/test_learner_ux.py
_Parser._negative_number_matcher  # argparse's own hook: a value like -1/4 is an answer, not an option
gradebook_csv  # grading's parts, driven one by one by tests/test_grade.py
results_json
save_results
_imported_when_run.__qualname__  # a command made when it runs keeps its own name in tracebacks
doctor  # 'tutor doctor', which tutor.cli.COMMANDS names as text and imports when it runs
ExerciseTree.get_label_width  # overrides Textual's Tree.get_label_width (measured from the text, not rendered)
landlock.FS_REMOVE_DIR  # Landlock's access rights, every one the kernel's ABI names: the handled set is their sum
landlock.FS_REMOVE_FILE
landlock.FS_MAKE_CHAR
landlock.FS_MAKE_DIR
landlock.FS_MAKE_REG
landlock.FS_MAKE_SOCK
landlock.FS_MAKE_FIFO
landlock.FS_MAKE_BLOCK
landlock.FS_MAKE_SYM
confine.Status.signals  # whether a side may signal outside its sandbox, reported in the worker's hello
confine.Status.user_namespace  # the layers the worker's hello names, one by one (docs/security.md)
confine.Status.capabilities
confine.Status.memory
confine.Status.file_cap_mb
__spec__.origin  # a dropped module's spec forgets its file (the child cannot reopen the subject's source)
__import__("tempfile").tempdir  # reset so the child's tempfile follows its own TMPDIR
TutorApp.get_default_screen  # Textual's hook: the screen at the bottom of the stack (the home screen)
PageFooter.bindings_changed  # Textual's footer hook, called through the screen's bindings signal
PageFooter._bindings_ready  # Textual's footer reactive: compose draws nothing until it is set
