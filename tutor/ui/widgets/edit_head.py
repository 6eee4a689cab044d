"""The head of the edit-mode screen: which mode, which file, what to do, and the keys."""

from __future__ import annotations

from rich.text import Text

#: Each edit mode as the learner reads it.
MODE_TITLES = {"fix": "Fix it", "break": "Break it", "hunt": "Find and fix"}


def edit_head(task, ex, has_editor: bool) -> Text:
    """The head for ``task`` (a :class:`tutor.app.tasks.Task`) of exercise ``ex``; Ctrl+O is named where
    ``has_editor`` ($VISUAL or $EDITOR is set)."""
    title = Text.assemble((MODE_TITLES[task.mode], "bold"), f" · {ex.id} · ", (task.path, "bold"), "\n")
    if task.mode == "fix":
        title.append(f"Your copy of {task.path} with the fault {task.fault.id} applied. Repair it: the tutor "
                     "runs the check on your file and compares it with the clean code.", style="dim")
    elif task.mode == "hunt":
        title.append(f"This {task.path} carries the hidden fault of mystery {task.seed}. Edit it until every "
                     "audit link holds; the fault's diff stays hidden.", style="dim")
    else:
        yours = "your engine" if task.engine else "your code"  # a snippet exercise's file is no engine
        title.append(f"The clean {task.path}. First predict above what a fault of your own will do, then "
                     f"write it here and run: the tutor shows what {yours} does and where it first "
                     "diverges from clean.", style="dim")
    keys = ("Ctrl+S save and run · Tab indents · Ctrl+T result · Ctrl+F find · Ctrl+G line · "
            "Esc back (your text is kept) · Ctrl+N fresh copy")
    if has_editor:
        keys += " · Ctrl+O open in your editor"
    title.append("\n" + keys, style="dim italic")
    return title
