"""Layers point one way: the domain never loads Textual, and nothing on the
first-screen path loads torch (DESIGN.md, principle 4)."""

import os
import subprocess
import sys

import pytest

DOMAIN = ["tutor.model.answers", "tutor.model.catalog", "tutor.model.attempts", "tutor.model.calibration", "tutor.model.review",
          "tutor.store.progress", "tutor.store.files", "tutor.sandbox.runner", "tutor.app.session", "tutor.app.run",
          "tutor.instructor.grade", "tutor.instructor.report", "tutor.render", "tutor.cli",
          "exercises.faults", "exercises.outcome", "exercises.context", "exercises.mysteries"]


@pytest.mark.parametrize("module", DOMAIN)
def test_domain_module_imports_neither_torch_nor_textual(module):
    code = (f"import sys, {module}; "
            "bad = [m for m in ('torch', 'textual') if m in sys.modules]; "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"{module} loaded {proc.stdout.strip()} {proc.stderr[-300:]}"


def test_tutor_list_does_not_import_torch():
    code = ("import sys, io, contextlib\n"
            "from tutor.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['list', '--json'])\n"
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_tutor_progress_does_not_import_torch(tmp_path):
    code = ("import sys, io, contextlib\n"
            "from tutor.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['progress', '--json', '--progress-dir', {str(tmp_path)!r}, '--learner', 'ada'])\n"
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_tutor_list_imports_no_runner_and_the_parser_offers_the_runners_devices():
    from tutor.cli import parser
    from tutor.sandbox import runner
    assert parser.DEVICES == runner.DEVICES
    code = ("import sys, io, contextlib\n"
            "from tutor.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['list'])\n"
            "bad = [m for m in ('torch', 'textual', 'tutor.sandbox.runner', 'rich.table') if m in sys.modules]\n"
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    # no COLUMNS (pytest sets one): stdout is no terminal, so tutor list draws as into a pipe, its usual reader
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"tutor list loaded {proc.stdout.strip()} {proc.stderr[-300:]}"


def test_the_first_screen_loads_no_run_machinery_lock_or_text_editor():
    """The home screen needs none of a run's machinery, the folder lock or Textual's text editor;
    the footers still find the editor where Textual keeps it, once an exercise page loads it."""
    from textual.widgets import TextArea

    from tutor.ui import keys
    assert TextArea.__module__ == keys.TEXT_AREA_MODULE
    code = ("import sys\n"
            "from tutor.store.catalog_cache import load_catalog\n"
            "from tutor.store.progress import ProgressStore\n"
            "from tutor.ui.app import build_app\n"
            f"bad = [m for m in ('tutor.app.run', 'tutor.sandbox.runner', 'filelock', {keys.TEXT_AREA_MODULE!r}) "
            "if m in sys.modules]\n"
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"the first screen loaded {proc.stdout.strip()} {proc.stderr[-300:]}"
