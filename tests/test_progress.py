"""The progress store: round trip, damaged files kept aside, locks, atomic writes."""

import getpass
import os
import signal
import subprocess
import sys
import time

import pytest

from tutor.progress import (FALLBACK_LEARNER, MAX_FILE_BYTES, Attempt, DamagedProgressError, ProgressError,
                            ProgressStore, default_folder, default_learner, default_learner_and_notice,
                            engine_hash, now, validate_learner)


def attempt(prediction="b", correct=True):
    return Attempt(time=now(), prediction=prediction, observed="b", correct=correct,
                   status="pass" if correct else "fail", device="cpu", engine_hash="abc")


def test_round_trip(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "head-split", attempt("a", False))
    store.record_attempt("ada", "head-split", attempt("b", True))
    store.save_note("ada", "head-split", "the reshape cuts time into blocks")
    p = store.load("ada")
    ex = p.of("head-split")
    assert [a.prediction for a in ex.attempts] == ["a", "b"]
    assert ex.solved and ex.note == "the reshape cuts time into blocks" and ex.note_time
    assert p.of("never-tried").attempts == []
    text = (tmp_path / "ada.toml").read_text()
    assert "format_version = 1" in text


def test_an_attempts_seed_is_kept_and_older_files_without_it_read_as_seed_zero(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "audit", Attempt(time=now(), prediction="none", observed="gradients",
                                                 correct=False, status="fail", device="cpu",
                                                 engine_hash="abc", seed=4))
    assert store.load("ada").of("audit").attempts[0].seed == 4
    old = (tmp_path / "ada.toml").read_text().replace("seed = 4\n", "")
    (tmp_path / "ada.toml").write_text(old)
    assert store.load("ada").of("audit").attempts[0].seed == 0
    (tmp_path / "ada.toml").write_text(old.replace('device = "cpu"', 'device = "cpu"\nseed = "four"'))
    with pytest.raises(DamagedProgressError, match="wrongly typed 'seed'"):
        store.load("ada", move_aside=False)


@pytest.mark.parametrize("name", ["../x", "a/b", "", "a\x00b", ".", "..", "-rf", "x" * 65, "a b"])
def test_unsafe_learner_names_are_refused(tmp_path, name):
    with pytest.raises(ProgressError, match="not allowed"):
        ProgressStore(tmp_path).path(name)


def test_safe_names_pass():
    assert validate_learner("ada.lovelace_1-2") == "ada.lovelace_1-2"


#: Damaged progress files and the reason each is refused, as the learner is told it.
DAMAGED = [
    ("this is = = not toml", "it is not valid TOML"),
    ("format_version = 0\n", "its format_version is 0, not 1"),
    ('format_version = 1\nexercises = "oops"\n', "its exercises entry is not a table"),
]


@pytest.mark.parametrize("content, why", DAMAGED + [
    ('format_version = 1\n[exercises.x]\nattempts = [{time = 1}]\n', "wrongly typed"),
])
def test_a_damaged_file_is_kept_aside_and_never_overwritten(tmp_path, content, why):
    path = tmp_path / "ada.toml"
    path.write_text(content)
    store = ProgressStore(tmp_path)
    p = store.load("ada")
    assert p.exercises == {}
    assert why in p.warnings[0] and "kept as" in p.warnings[0]
    kept = [f for f in tmp_path.iterdir() if ".corrupt-" in f.name]
    assert len(kept) == 1 and kept[0].read_text() == content
    store.record_attempt("ada", "x", attempt())
    assert kept[0].read_text() == content
    assert len(store.load("ada").of("x").attempts) == 1


def test_a_huge_file_is_kept_aside(tmp_path):
    path = tmp_path / "ada.toml"
    with open(path, "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    p = ProgressStore(tmp_path).load("ada")
    assert "larger than" in p.warnings[0]


def test_a_newer_format_is_read_only(tmp_path):
    path = tmp_path / "ada.toml"
    path.write_text("format_version = 99\n")
    store = ProgressStore(tmp_path)
    p = store.load("ada")
    assert p.read_only and "newer tutor" in p.warnings[0]
    with pytest.raises(ProgressError, match="newer tutor"):
        store.record_attempt("ada", "x", attempt())
    assert path.read_text() == "format_version = 99\n"


def test_an_unwritable_folder_is_one_sentence(tmp_path):
    if os.geteuid() == 0:
        folder = "/proc/tutor-cannot-write-here"
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
    with pytest.raises(ProgressError, match="--progress-dir"):
        ProgressStore(folder).record_attempt("ada", "x", attempt())


def test_folder_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTOR_PROGRESS_DIR", str(tmp_path / "env"))
    assert default_folder(tmp_path / "flag") == tmp_path / "flag"
    assert default_folder() == tmp_path / "env"


def test_engine_hash_is_stable():
    assert engine_hash() == engine_hash() and len(engine_hash()) == 12


def test_engine_hash_follows_the_engine_source(tmp_path, monkeypatch):
    import re
    import shutil

    import exercises.faults
    original = engine_hash()
    assert re.fullmatch(r"[0-9a-f]{12}", original)
    copy = tmp_path / "src"
    shutil.copytree(exercises.faults.source_root() / "engine", copy / "engine",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(exercises.faults, "source_root", lambda: copy)
    assert engine_hash() == original  # the same files give the same hash
    model = copy / "engine" / "model.py"
    model.write_text(model.read_text() + "\n# one more line\n")
    assert engine_hash() != original


SAVER = """
import sys
from tutor.progress import Attempt, ProgressStore, now
store = ProgressStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    store.record_attempt("ada", "ex", Attempt(time=now(), prediction=f"{sys.argv[2]}-{i}", observed="o",
                                                correct=True, status="pass", device="cpu", engine_hash="h"))
"""


def test_two_processes_saving_concurrently_lose_nothing(tmp_path):
    n = 100
    procs = [subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path), tag, str(n)]) for tag in ("p", "q")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    attempts = ProgressStore(tmp_path).load("ada").of("ex").attempts
    assert len(attempts) == 2 * n
    assert {a.prediction for a in attempts} == {f"{t}-{i}" for t in "pq" for i in range(n)}


@pytest.mark.slow
def test_sigkill_while_saving_never_leaves_a_partial_file(tmp_path):
    """Kill a saving process at random moments; the file always parses."""
    import random
    store = ProgressStore(tmp_path)
    survived = killed_mid_run = 0
    for round_ in range(200):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path), f"r{round_}", "50"])
        time.sleep(random.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        killed_mid_run += proc.wait() == -signal.SIGKILL  # it was still saving when killed
        p = store.load("ada")
        assert not p.warnings, p.warnings
        survived += 1
    assert survived == 200
    assert killed_mid_run > 0 and len(store.load("ada").of("ex").attempts) > 0  # kills landed while it ran
    print(f"kills survived: {survived}, attempts on disk: {len(store.load('ada').of('ex').attempts)}")


def test_fuzz_found_a_newer_file_with_odd_contents_is_still_read_only(tmp_path):
    (tmp_path / "ada.toml").write_text("format_version = 2\nexercises = 0\n")
    p = ProgressStore(tmp_path).load("ada")
    assert p.read_only and p.exercises == {}


@pytest.mark.parametrize("content, why", DAMAGED)
def test_a_review_leaves_a_damaged_file_where_it_is(tmp_path, content, why):
    path = tmp_path / "ada.toml"
    path.write_text(content)
    with pytest.raises(DamagedProgressError) as caught:
        ProgressStore(tmp_path).load("ada", move_aside=False)
    message = str(caught.value)
    assert message.startswith(f"{path} cannot be read because {why}")
    assert "fix it by hand" in message and "ada.toml.corrupt-<time>" in message and "\n" not in message
    assert caught.value.path == path and isinstance(caught.value, ProgressError)
    assert [f.name for f in tmp_path.iterdir()] == ["ada.toml"] and path.read_text() == content


def test_a_review_still_shows_a_newer_file_read_only(tmp_path):
    (tmp_path / "ada.toml").write_text("format_version = 2\n")
    p = ProgressStore(tmp_path).load("ada", move_aside=False)
    assert p.read_only and "newer tutor" in p.warnings[0]


def test_the_default_learner_is_the_login_name_when_it_is_safe(monkeypatch):
    monkeypatch.delenv("TUTOR_LEARNER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "kim")
    assert default_learner_and_notice() == ("kim", None)
    assert default_learner() == "kim"


@pytest.mark.parametrize("login, why", [
    ("kim lee", "your login name 'kim lee' is not a valid learner name"),
    ("", "no login name was found"),
])
def test_an_unusable_login_name_falls_back_with_a_notice(monkeypatch, login, why):
    monkeypatch.delenv("TUTOR_LEARNER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: login)
    name, notice = default_learner_and_notice()
    assert name == FALLBACK_LEARNER == "learner"
    assert notice == (f"{why}, so the learner name 'learner' is used; "
                      "choose one with --learner NAME or TUTOR_LEARNER=NAME")


def test_tutor_learner_wins_over_the_login_name_without_a_notice(monkeypatch):
    monkeypatch.setenv("TUTOR_LEARNER", "ada")
    monkeypatch.setattr(getpass, "getuser", lambda: "kim lee")
    assert default_learner_and_notice() == ("ada", None)


def test_an_attempt_of_a_run_saves_the_answer_as_read_and_the_seed():
    from tutor.runner import RunResult
    result = RunResult(id="lr-10x", status="pass", device="cpu", torch="t", fault="lr-times-ten", kind="choice",
                       prediction="6", prediction_text="capability", observed="capability", correct=True, seed=3)
    attempt = Attempt.of(result)
    assert (attempt.prediction, attempt.observed, attempt.correct, attempt.seed) == ("capability", "capability", True, 3)
    assert attempt.engine_hash == engine_hash() and attempt.status == "pass"
