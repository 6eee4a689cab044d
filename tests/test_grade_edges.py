"""The rough edges an instructor hit, each pinned: the umask, files kept aside, saved_to,
encodings, missing folders and learners, negative answers, one JSON schema, --version, learner names."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from test_grade import FakeRunner
from tutor.cli.parser import ArgumentsError, build_parser
from tutor.model.attempts import Attempt, ProgressError
from tutor.store.names import MAX_STEM_BYTES, file_stem, learner_key, name_of_stem, validate_learner
from tutor.store.progress import ProgressStore
from tutor.app.session import Session


def tutor(*args, env=None, timeout=120, encoding="utf-8"):
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, encoding=encoding,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=dict(os.environ, COLUMNS="160", **(env or {})))


def an_attempt(correct=True, prediction="(3, 3)", time="2026-11-29T10:00:00+00:00"):
    return Attempt(time=time, prediction=prediction, observed="(3, 3)", correct=correct,
                   status="pass" if correct else "fail", device="cpu", engine_hash="abc")


# --- the umask ---------------------------------------------------------------------------------

@pytest.fixture()
def umask():
    old = os.umask(0o022)
    os.umask(old)

    def set_(mask):
        os.umask(mask)
    yield set_
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_new_progress_file_gets_the_mode_the_umask_asks_for(tmp_path, umask, mask, mode):
    umask(mask)
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    assert stat.S_IMODE(os.stat(tmp_path / "ada.toml").st_mode) == mode


def test_a_rewritten_progress_file_keeps_its_own_mode(tmp_path, umask):
    umask(0o077)
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    os.chmod(tmp_path / "ada.toml", 0o640)  # an instructor made it group-readable
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    assert stat.S_IMODE(os.stat(tmp_path / "ada.toml").st_mode) == 0o640


# --- files kept aside are counted and named ------------------------------------------------------

def test_progress_all_counts_and_names_a_file_kept_aside(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    (tmp_path / "bob.toml").write_text("format_version = 1\n[exercises.x\n")
    store.record_attempt("bob", "broadcast-loss", an_attempt())  # moves the damaged file aside, starts afresh
    [kept] = store.kept_aside()
    proc = tutor("progress", "--all", "--progress-dir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kept_aside"] == [str(kept)] and [r["learner"] for r in data["learners"]] == ["ada", "bob"]
    plain = tutor("progress", "--all", "--progress-dir", str(tmp_path))
    assert "1 damaged file was moved aside and kept (not counted above):" in plain.stdout
    assert str(kept) in plain.stdout
    single = json.loads(tutor("progress", "--learner", "bob", "--progress-dir", str(tmp_path), "--json").stdout)
    assert single["kept_aside"] == [str(kept)]


# --- saved_to says what happened ------------------------------------------------------------------

def test_an_attempt_saved_without_its_note_says_saved_and_why_the_note_was_not(tmp_path, catalog):
    session = Session(catalog, FakeRunner(catalog), ProgressStore(tmp_path), "ada")
    session.load()
    outcome = session.attempt(catalog.get("broadcast-loss"), "(3, 3)", note="x" * 20_001)
    assert outcome.saved_to == tmp_path / "ada.toml" and not outcome.note_saved
    assert outcome.save_error == ("the attempt was saved but its note was not: the note is 20001 characters long; "
                                  "keep it under 20000")
    assert len(ProgressStore(tmp_path).load("ada").of("broadcast-loss").attempts) == 1


def test_run_refuses_a_note_too_long_to_keep_before_any_work(tmp_path):
    proc = tutor("run", "broadcast-loss", "--predict", "(3, 3)", "--explain", "x" * 20_001, "--learner", "ada",
                 "--progress-dir", str(tmp_path / "p"), "--json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    data = json.loads(proc.stdout)
    assert data["error"] == ("the --explain note is 20001 characters long; keep it under 20000 "
                             "(nothing was run or saved)")
    assert (data["id"], data["learner"], data["prediction"]) == ("broadcast-loss", "ada", "(3, 3)")
    assert not (tmp_path / "p").exists()


# --- an encoding that cannot show a character degrades; the exit status stays -------------------------

def test_a_latin1_terminal_gets_replacement_characters_and_the_true_exit_status(tmp_path):
    proc = tutor("run", "cache-offset", "--predict", "no", "--device", "cpu", "--learner", "ada",
                 "--progress-dir", str(tmp_path), env={"PYTHONIOENCODING": "latin-1"}, timeout=300, encoding="latin-1")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeEncodeError" not in proc.stderr
    assert proc.stdout.startswith("? your prediction matched the observation")  # the ✓ could not be shown
    assert ProgressStore(tmp_path).load("ada").of("cache-offset").attempts[0].correct is True


def test_an_ascii_terminal_shows_an_exercise_with_replacements():
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", "show", "head-split"], capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL, env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert proc.returncode == 0, proc.stderr
    assert b"head-split ? Splitting heads" in proc.stdout  # the title's "·" could not be shown
    assert max(proc.stdout) < 128


# --- a missing folder or an unknown learner is an error ---------------------------------------------

def test_progress_all_of_a_missing_folder_is_exit_2_in_one_sentence(tmp_path):
    proc = tutor("progress", "--all", "--progress-dir", str(tmp_path / "typo"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"tutor: there is no progress folder {tmp_path / 'typo'}; check the path given to "
                           "--progress-dir (or TUTOR_PROGRESS_DIR)\n")
    assert tutor("progress", "--learner", "ada", "--progress-dir", str(tmp_path / "typo")).returncode == 2


def test_an_unknown_learner_is_exit_2_naming_who_is_there(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    proc = tutor("progress", "--learner", "ghost", "--progress-dir", str(tmp_path), "--json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    data = json.loads(proc.stdout)
    assert data["error"] == (f"there is no progress for learner 'ghost' in {tmp_path}; the learners there are ada "
                             "('tutor progress --all' lists them)")
    assert data["learner"] == "ghost"


def test_the_default_learner_without_a_file_yet_is_empty_progress_not_an_error(tmp_path):
    proc = tutor("progress", env={"TUTOR_PROGRESS_DIR": str(tmp_path), "TUTOR_LEARNER": "ada"})
    assert proc.returncode == 0 and "No attempts saved yet for ada" in proc.stdout


# --- negative numbers are answers ------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["-1/4", "-1e-3", "-.5", "-3", "-0.25"])
def test_a_negative_number_is_read_as_the_answer(answer):
    args = build_parser().parse_args(["run", "skip-zero-grad", "--predict", answer, "--no-save"])
    assert args.predict == answer


def test_a_missing_answer_is_still_a_missing_answer():
    with pytest.raises(ArgumentsError, match="--predict needs a value after it"):
        build_parser().parse_args(["run", "skip-zero-grad", "--predict", "--json"])


# --- one JSON schema ---------------------------------------------------------------------------------

def envelope_of(proc, code):
    """The JSON object of a command, checked for the keys and types every object has."""
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and list(data)[0] == "schema_version"
    assert data["exit_code"] == code and isinstance(data["exit_code"], int)
    assert data["learner"] is None or isinstance(data["learner"], str)
    assert data["error"] is None or isinstance(data["error"], str)
    if code not in (0, 1):
        assert data["error"]
    return data


def test_every_command_prints_the_same_envelope(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("Ada Lovelace", "broadcast-loss", an_attempt(correct=False, prediction="(3,)"))
    assert envelope_of(tutor("list", "--json"), 0)["learner"] is None
    envelope_of(tutor("show", "head-split", "--json"), 0)
    mine = envelope_of(tutor("progress", "--learner", "ada lovelace", "--progress-dir", str(tmp_path), "--json"), 0)
    assert mine["learner"] == "Ada Lovelace"
    everyone = envelope_of(tutor("progress", "--all", "--progress-dir", str(tmp_path), "--json"), 0)
    assert isinstance(everyone["exercise_count"], int) and isinstance(everyone["learners"], list)
    envelope_of(tutor("report", str(tmp_path), "--json"), 0)
    bad = envelope_of(tutor("list", "--set", "nope", "--json"), 2)
    assert bad["status"] == "usage_error"
    (tmp_path / "cyd.toml").write_text("[exercises.x\n")
    damaged = envelope_of(tutor("progress", "--all", "--progress-dir", str(tmp_path), "--json"), 2)
    assert damaged["error"].startswith("1 progress file cannot be read (cyd.toml)")


def test_progress_gives_observed_the_run_commands_type_and_note_is_always_text(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "broadcast-loss", an_attempt())
    store.record_attempt("ada", "ghost-exercise", an_attempt())
    data = envelope_of(tutor("progress", "--learner", "ada", "--progress-dir", str(tmp_path), "--json"), 0)
    [a] = data["exercises"]["broadcast-loss"]["attempts"]
    assert (a["observed"], a["observed_text"], a["prediction_text"]) == ([3, 3], "(3, 3)", "(3, 3)")
    assert data["exercises"]["ghost-exercise"]["attempts"][0]["observed"] is None  # no exercise to read it by
    assert data["exercises"]["broadcast-loss"]["note"] == ""


def test_an_unreadable_answer_names_the_exercise_learner_and_prediction():
    data = envelope_of(tutor("run", "cache-offset", "--predict", "maybe", "--learner", "Zoë", "--json"), 2)
    assert (data["id"], data["learner"], data["prediction"]) == ("cache-offset", "Zoë", "maybe")
    assert data["error"] == "cannot read 'maybe' as yes/no; expected yes or no (exercise cache-offset)"


def test_a_run_has_the_envelope_and_note_is_text(tmp_path):
    data = envelope_of(tutor("run", "broadcast-loss", "--predict", "(3,)", "--device", "cpu", "--learner", "ADA",
                             "--progress-dir", str(tmp_path), "--json", timeout=300), 1)
    assert data["learner"] == "ADA" and data["note"] == "" and data["note_saved"] is False
    assert data["observed"] == [3, 3] and data["error"] is None
    review = envelope_of(tutor("progress", "--learner", "ada", "--progress-dir", str(tmp_path), "--json"), 0)
    assert review["exercises"]["broadcast-loss"]["attempts"][0]["observed"] == data["observed"]


def test_version():
    proc = tutor("--version")
    assert proc.returncode == 0 and proc.stdout == "tutor 0.1.0 (JSON schema 1, progress format 2)\n"


# --- learner names of any script, one learner whatever the case ------------------------------------------

@pytest.mark.parametrize("name, stem", [("Zoë", "zo%C3%AB"), ("Ada Lovelace", "ada%20lovelace"), ("ada", "ada"),
                                        ("  ADA   Lovelace ", "ada%20lovelace"), ("李雷", "%E6%9D%8E%E9%9B%B7"),
                                        ("O'Brien", "o%27brien"), ("con", "%63on"), ("Straße", "strasse")])
def test_names_of_any_script_get_a_safe_file_name(tmp_path, name, stem):
    assert file_stem(name) == stem
    assert ProgressStore(tmp_path).path(name) == tmp_path / f"{stem}.toml"


def test_names_that_differ_only_by_case_are_one_learner_everywhere(tmp_path, catalog):
    store = ProgressStore(tmp_path)
    for name in ("ADA", "ada", "Ada"):
        session = Session(catalog, FakeRunner(catalog), store, validate_learner(name))
        session.load()
        session.attempt(catalog.get("broadcast-loss"), "(3, 3)")
    assert [p.name for p in tmp_path.glob("*.toml")] == ["ada.toml"]
    assert store.learners() == ["ada"] and len(store.load("aDa").of("broadcast-loss").attempts) == 3
    assert store.load("ada").learner == "ADA"  # the name the file was first written with


def test_a_file_an_earlier_tutor_named_as_typed_is_still_found(tmp_path):
    (tmp_path / "Kim.toml").write_text('format_version = 1\nlearner = "Kim"\n')
    store = ProgressStore(tmp_path)
    assert store.path("kim") == store.path("KIM") == tmp_path / "Kim.toml"
    assert store.learners() == ["Kim"]
    store.record_attempt("kim", "broadcast-loss", an_attempt())
    assert [p.name for p in tmp_path.glob("*.toml")] == ["Kim.toml"]


def test_the_learners_in_a_folder_read_back_from_their_file_names(tmp_path):
    for name in ("Zoë", "Ada Lovelace", "bob"):
        ProgressStore(tmp_path).record_attempt(name, "broadcast-loss", an_attempt())
    (tmp_path / "bad name.toml").write_text("")  # not a name file_stem writes
    (tmp_path / "%ZZ.toml").write_text("")
    assert ProgressStore(tmp_path).learners() == ["ada lovelace", "bob", "zoë"]


@pytest.mark.parametrize("name", ["a\tb", "a\nb", "a/b", "a\\b", "a:b", "-x", "", " ", "a" * 65, "\u200bx", "x\u200b"])
def test_names_with_separators_controls_or_other_punctuation_are_refused(name):
    with pytest.raises(ProgressError, match="not allowed"):
        validate_learner(name)


_NAME_CHARS = st.characters(whitelist_categories=("Lu", "Ll", "Lt", "Lo", "Nd"), max_codepoint=0x2FFFF)


@settings(max_examples=300, deadline=None)
@given(st.text(_NAME_CHARS, min_size=1, max_size=6), st.lists(st.sampled_from([" ", ".", "-", "_", "'"]), max_size=3),
       st.text(_NAME_CHARS, min_size=0, max_size=6))
def test_every_name_has_one_safe_stem_that_reads_back_as_its_key(head, middle, tail):
    name = head + "".join(middle) + tail
    try:
        tidy = validate_learner(name)
    except ProgressError as exc:
        assert "too long for a file name" in str(exc) or not unicodedata.normalize("NFC", name)[:1].isalnum()
        return
    stem = file_stem(tidy)
    assert stem.isascii() and "/" not in stem and "\\" not in stem and not stem.startswith(".")
    assert len(stem.encode()) <= MAX_STEM_BYTES
    assert stem == stem.lower() or "%" in stem  # only the %XX hex digits are upper case
    assert name_of_stem(stem) == learner_key(tidy)
    try:
        shouted = validate_learner(tidy.upper())
    except ProgressError:
        return  # upper case made it another kind of text (rare ligatures): nothing to compare
    if learner_key(shouted) == learner_key(tidy):
        assert file_stem(shouted) == stem  # the same learner, the same file, whatever the case


def test_a_failed_tutor_run_names_its_learner_and_list_names_none(tmp_path, capsys):
    from tutor.cli import main
    code = main(["run", "broadcast-loss", "--predict", "not a shape", "--learner", "ada",
                 "--progress-dir", str(tmp_path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["exit_code"] == 2 and data["status"] == "usage_error"
    assert data["learner"] == "ada"  # the README: every object carries the learner, a failed run included
    assert main(["list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["learner"] is None  # a command about no learner
