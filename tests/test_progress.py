"""The progress store: round trip, damaged files kept aside, locks, atomic writes."""

import getpass
import os
import signal
import subprocess
import sys
import time

import pytest

from tutor.model.attempts import Attempt, ProgressError, engine_hash, now, show_time
from tutor.store.migration import MAX_FILE_BYTES, Reading, classify
from tutor.store.names import FALLBACK_LEARNER, default_learner, default_learner_and_notice, validate_learner
from tutor.store.progress import DamagedProgressError, ProgressStore, default_folder


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
    assert "format_version = 2" in text


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


# "a b" was refused here: names may now hold spaces (and letters of any script); a tab may not.
@pytest.mark.parametrize("name", ["../x", "a/b", "", "a\x00b", ".", "..", "-rf", "x" * 65, "a\tb"])
def test_unsafe_learner_names_are_refused(tmp_path, name):
    with pytest.raises(ProgressError, match="not allowed"):
        ProgressStore(tmp_path).path(name)


def test_safe_names_pass():
    assert validate_learner("ada.lovelace_1-2") == "ada.lovelace_1-2"


#: Damaged progress files and the reason each is refused, as the learner is told it.
DAMAGED = [
    ("this is = = not toml", "it is not valid TOML"),
    ("format_version = 0\n", "its format_version is 0, not 2"),
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


def test_engine_hash_is_the_sha256_of_each_python_file_path_then_its_bytes(tmp_path, monkeypatch):
    """Pinned with ``printf 'a.pyx = 1\\nsub/b.pyy = 2\\n' | sha256sum``: the relative paths (posix, sorted)
    each followed by the file's bytes; files other than .py do not count."""
    import exercises.faults
    engine = tmp_path / "engine"
    (engine / "sub").mkdir(parents=True)
    (engine / "a.py").write_text("x = 1\n")
    (engine / "sub" / "b.py").write_text("y = 2\n")
    (engine / "notes.txt").write_text("not source")
    monkeypatch.setattr(exercises.faults, "source_root", lambda: tmp_path)
    assert engine_hash() == "060c5c4bab56"
    (engine / "a.py").write_text("x = 2\n")
    assert engine_hash() == "48bf519c3eb1"


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
from tutor.model.attempts import Attempt, now
from tutor.store.progress import ProgressStore
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
    killed_mid_run = saved = 0
    for round_ in range(200):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path), f"r{round_}", "50"])
        time.sleep(random.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        killed_mid_run += proc.wait() == -signal.SIGKILL  # it was still saving when killed
        p = store.load("ada")
        assert not p.warnings, p.warnings
        now_saved = len(p.of("ex").attempts)
        assert now_saved >= saved, "a kill lost attempts that were already saved"
        saved = now_saved
    assert killed_mid_run > 0 and saved > 0  # kills landed while it ran, and it saved between them
    print(f"kills while saving: {killed_mid_run} of 200, attempts on disk: {saved}")


def test_fuzz_found_a_newer_file_with_odd_contents_is_still_read_only(tmp_path):
    (tmp_path / "ada.toml").write_text("format_version = 3\nexercises = 0\n")
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
    (tmp_path / "ada.toml").write_text("format_version = 3\n")
    p = ProgressStore(tmp_path).load("ada", move_aside=False)
    assert p.read_only and "newer tutor" in p.warnings[0]


def test_the_default_learner_is_the_login_name_when_it_is_safe(monkeypatch):
    monkeypatch.delenv("TUTOR_LEARNER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "kim")
    assert default_learner_and_notice() == ("kim", None)
    assert default_learner() == "kim"


@pytest.mark.parametrize("login, why", [
    ("kim/lee", "your login name 'kim/lee' is not a valid learner name"),  # 'kim lee' is a name
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
    from tutor.sandbox.runner import RunResult
    result = RunResult(id="lr-10x", status="pass", device="cpu", torch="t", fault="lr-times-ten", kind="choice",
                       prediction="6", prediction_text="capability", observed="capability", correct=True, seed=3)
    attempt = Attempt.of(result)
    assert (attempt.prediction, attempt.observed, attempt.correct, attempt.seed) == ("capability", "capability", True, 3)
    assert attempt.engine_hash == engine_hash() and attempt.status == "pass"


#: A save whose write fails halfway: the file size limit lets the child write 10,000 bytes of any file,
#: and the new progress file would be over 20,000 (a 20,000-character prediction).
INTERRUPTED_SAVER = """
import resource, sys
from tutor.model.attempts import Attempt, ProgressError, now
from tutor.store.progress import ProgressStore
store = ProgressStore(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))
try:
    store.record_attempt("ada", "ex", Attempt(time=now(), prediction="p" * 20_000, observed="o", correct=True,
                                              status="pass", device="cpu", engine_hash="h"))
except ProgressError as exc:
    print(exc)
    sys.exit(3)
"""


def test_a_save_interrupted_mid_write_leaves_the_old_file_byte_identical(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "ex", attempt())
    path = tmp_path / "ada.toml"
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_SAVER, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"cannot write progress to {path} (File too large)")
    assert path.read_bytes() == before
    assert not [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")]  # the half-written copy is gone
    assert [a.prediction for a in store.load("ada").of("ex").attempts] == ["b"]


def test_an_attempt_is_saved_under_the_keys_the_file_format_names():
    saved = attempt().to_dict()
    assert list(saved) == ["time", "prediction", "observed", "correct", "status", "device", "engine_hash", "seed", "mode"]
    assert (saved["observed"], saved["correct"], saved["seed"]) == ("b", True, 0)


def test_reading_classifies_bytes_without_touching_a_file():
    assert classify(None) == Reading()
    assert classify(b'format_version = 1\nlearner = "ada"\n') == Reading(data={"format_version": 2, "learner": "ada"})
    # line ends as a text-mode read takes them: CRLF and a lone CR are newlines
    assert classify(b'format_version = 1\r\nlearner = "ada"\r').data == {"format_version": 2, "learner": "ada"}
    assert classify(b"format_version = 3\n") == Reading(data={"format_version": 3}, newer=3)
    assert classify(b"format_version = 3\nexercises = 1\n") == Reading(data=None, newer=3)
    assert classify(b"format_version = true\n").problem == "its format_version is True, not 2"  # true == 1 in Python
    assert classify(b"format_version = 1.0\n").problem == "its format_version is 1.0, not 2"
    assert classify(b"\xff").problem.startswith("it is not valid TOML (")
    assert classify(b"#" * MAX_FILE_BYTES).problem == "its format_version is None, not 2"  # one comment, not too large
    assert classify(b"#" * (MAX_FILE_BYTES + 1)) == Reading(problem="it is larger than 8 MiB")


@pytest.mark.parametrize("attempt_toml, why", [
    ('{time = "t"}', "an attempt of 'x' has a missing or wrongly typed 'prediction'"),
    ('{time = "t", prediction = "a", observed = "a", correct = 1, status = "pass", device = "cpu", '
     'engine_hash = "h"}', "an attempt of 'x' has a missing or wrongly typed 'correct'"),
    ('{time = "t", prediction = "a", observed = "a", correct = true, status = "pass", device = "cpu", '
     'engine_hash = "h", seed = true}', "an attempt of 'x' has a wrongly typed 'seed'"),
    ('"text"', "an attempt of 'x' is not a table"),
])
def test_a_malformed_attempt_names_its_first_bad_key(attempt_toml, why):
    reading = classify(f"format_version = 1\n[exercises.x]\nattempts = [{attempt_toml}]\n".encode())
    assert reading == Reading(problem=why)


@pytest.mark.parametrize("entry, why", [
    ("[exercises]\nx = 1\n", "the entry for 'x' is not a table"),
    ("[exercises.x]\nnote = 1\n", "the note of 'x' is not text"),
    ("[exercises.x]\nnote_time = 1\n", "the note_time of 'x' is not text"),
    ("[exercises.x]\nattempts = 1\n", "the attempts of 'x' are not a list"),
])
def test_a_malformed_exercise_entry_is_named(entry, why):
    assert classify(f"format_version = 1\n{entry}".encode()) == Reading(problem=why)


def test_a_damaged_file_that_cannot_be_moved_aside_is_one_sentence_and_stays(tmp_path, monkeypatch):
    path = tmp_path / "ada.toml"
    path.write_text("format_version = 0\n")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ProgressError) as caught:
        ProgressStore(tmp_path).load("ada")
    assert str(caught.value) == (f"{path} cannot be used because its format_version is 0, not 2, and it could not "
                                 "be moved aside (Permission denied); move it yourself")
    assert path.read_text() == "format_version = 0\n"


def test_a_file_that_cannot_be_read_is_one_sentence(tmp_path):
    (tmp_path / "ada.toml").mkdir()  # a folder where the file should be
    with pytest.raises(ProgressError, match=r"^cannot read .*ada\.toml \(Is a directory\); check its permissions"):
        ProgressStore(tmp_path).load("ada")


def test_saving_keeps_what_the_file_held_and_marks_its_format_and_learner(tmp_path):
    store = ProgressStore(tmp_path)
    store.save_note("ada", "x", "first note")
    store.record_attempt("ada", "y", attempt("c", False))
    p = store.save_note("ada", "x", "second\x00 note")
    assert p.of("x").note == "second note" and p.of("y").attempts[0].prediction == "c" and not p.of("y").solved
    text = (tmp_path / "ada.toml").read_text()
    assert text.startswith('format_version = 2\nlearner = "ada"\n')


def test_a_note_over_the_limit_is_refused_before_anything_is_written(tmp_path):
    from tutor.store.progress import MAX_NOTE_CHARS
    assert MAX_NOTE_CHARS == 20_000
    ProgressStore(tmp_path).save_note("ada", "x", "n" * 20_000)
    with pytest.raises(ProgressError, match="the note is 20001 characters long; keep it under 20000"):
        ProgressStore(tmp_path).save_note("ada", "x", "n" * 20_001)
    assert ProgressStore(tmp_path).load("ada").of("x").note == "n" * 20_000


# --- known values for the store's smaller promises ------------------------------
# Each pins a behaviour that a mutation (scripts/mutation.sh) could change unseen.

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


def test_times_are_utc_to_the_second_and_shown_with_a_z():
    import re
    assert re.fullmatch(STAMP, now())
    assert show_time("2026-11-29T10:01:00+00:00") == "2026-11-29 10:01:00Z"


def test_a_learners_progress_as_data(tmp_path):
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", "b-ex", Attempt(time="2026-11-29T10:01:00+00:00", prediction="a", observed="b",
                                                correct=False, status="fail", device="cpu", engine_hash="abc"))
    p = store.save_note("ada", "a-ex", "why")
    data = p.to_dict()
    assert list(data) == ["learner", "exercises"] and data["learner"] == "ada"
    assert list(data["exercises"]) == ["a-ex", "b-ex"]  # sorted by id
    assert data["exercises"]["b-ex"] == {
        "attempts": [{"time": "2026-11-29T10:01:00+00:00", "prediction": "a", "observed": "b", "correct": False,
                      "status": "fail", "device": "cpu", "engine_hash": "abc", "seed": 0, "mode": "predict"}],
        "note": "", "note_time": "", "solved": False}
    a_ex = data["exercises"]["a-ex"]
    assert (a_ex["attempts"], a_ex["note"], a_ex["solved"]) == ([], "why", False)


def test_the_learners_are_the_safe_names_of_the_toml_files(tmp_path):
    assert ProgressStore(tmp_path / "missing").learners() == []
    for name in ("bob.toml", "ada.toml", "ada.toml.corrupt-20260101", "bad name.toml", "notes.txt"):
        (tmp_path / name).write_text("")
    assert ProgressStore(tmp_path).learners() == ["ada", "bob"]


def test_ensure_writable_makes_the_folder_tries_a_file_there_and_leaves_nothing_behind(tmp_path, monkeypatch):
    import tempfile
    folder = tmp_path / "a" / "b"
    probes = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(**kwargs):
        probes.append(kwargs["dir"])
        return real_mkstemp(**kwargs)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    ProgressStore(folder).ensure_writable()
    ProgressStore(folder).ensure_writable()  # an existing folder is fine
    assert probes == [folder, folder]  # the probe file is written in the folder itself
    assert folder.is_dir() and list(folder.iterdir()) == []
    monkeypatch.undo()
    (tmp_path / "file").write_text("")
    with pytest.raises(ProgressError) as caught:
        ProgressStore(tmp_path / "file" / "sub").ensure_writable()
    assert str(caught.value) == (f"cannot write progress to {tmp_path / 'file' / 'sub'} (Not a directory); "
                                 "choose a writable folder with --progress-dir, or pass --no-save")


def test_saving_makes_missing_parent_folders(tmp_path):
    p = ProgressStore(tmp_path / "a" / "b").record_attempt("ada", "x", attempt())
    assert p.learner == "ada" and p.warnings == [] and len(p.of("x").attempts) == 1
    assert (tmp_path / "a" / "b" / "ada.toml").is_file()


def test_a_save_into_a_file_path_is_one_sentence(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ProgressError) as caught:
        ProgressStore(tmp_path / "file").record_attempt("ada", "x", attempt())
    assert str(caught.value) == (f"cannot write progress to {tmp_path / 'file' / 'ada.toml'} (File exists); "
                                 "choose a writable folder with --progress-dir")


def test_a_save_locks_the_file_beside_it_for_up_to_30_s_and_writes_a_temporary_file_beside_it(tmp_path, monkeypatch):
    import filelock
    locks, renames = [], []
    real_lock, real_replace = filelock.FileLock, os.replace

    def lock(path, timeout):
        locks.append((path, timeout))
        return real_lock(path, timeout=timeout)

    def replace(src, dst):
        renames.append((os.fspath(src), os.fspath(dst)))
        real_replace(src, dst)
    monkeypatch.setattr(filelock, "FileLock", lock)
    monkeypatch.setattr(os, "replace", replace)
    ProgressStore(tmp_path).record_attempt("ada", "x", attempt())
    assert locks == [(str(tmp_path / ".tutor.lock"), 30)]  # one lock for the folder, none beside each file
    [(src, dst)] = renames
    # beside the target, on the same file system, so the rename is atomic
    assert dst == str(tmp_path / "ada.toml") and os.path.dirname(src) == str(tmp_path)
    assert os.path.basename(src).startswith(".ada.toml.") and src.endswith(".tmp")


def test_a_lock_held_too_long_is_one_sentence(tmp_path, monkeypatch):
    import filelock
    from filelock import Timeout

    class Held:
        def __init__(self, path, timeout):
            self.path = path

        def __enter__(self):
            raise Timeout(self.path)

        def __exit__(self, *exc):
            return False
    monkeypatch.setattr(filelock, "FileLock", Held)
    with pytest.raises(ProgressError) as caught:
        ProgressStore(tmp_path).record_attempt("ada", "x", attempt())
    assert str(caught.value) == (f"another tutor holds the lock on {tmp_path / 'ada.toml'} for over 30 s; "
                                 f"close it or delete {tmp_path / '.tutor.lock'}")


def test_saving_over_a_newer_file_names_it_and_both_formats(tmp_path):
    (tmp_path / "ada.toml").write_text("format_version = 7\n")
    message = (f"{tmp_path / 'ada.toml'} was written by a newer tutor (format 7, this one knows 2); it is shown "
               "read-only and will not be changed — upgrade tutor to record new attempts")
    with pytest.raises(ProgressError) as caught:
        ProgressStore(tmp_path).record_attempt("ada", "x", attempt())
    assert str(caught.value) == message
    p = ProgressStore(tmp_path).load("ada")
    assert p.warnings == [message] and p.learner == "ada"


def test_a_damaged_file_is_renamed_with_the_time_and_a_save_says_so(tmp_path):
    import re
    (tmp_path / "ada.toml").write_text("format_version = 0\n")
    p = ProgressStore(tmp_path).record_attempt("ada", "x", attempt())
    [kept] = [f for f in tmp_path.iterdir() if ".corrupt-" in f.name]
    assert re.fullmatch(r"ada\.toml\.corrupt-\d{8}-\d{6}-\d{6}", kept.name)
    assert p.warnings == [f"ada.toml could not be used because its format_version is 0, not 2; it was kept as {kept} "
                          "and a fresh progress file was started"]
    assert p.learner == "ada" and len(p.of("x").attempts) == 1


def test_a_review_of_a_damaged_file_says_what_the_next_save_will_do(tmp_path):
    (tmp_path / "ada.toml").write_text("format_version = 0\n")
    with pytest.raises(DamagedProgressError) as caught:
        ProgressStore(tmp_path).load("ada", move_aside=False)
    assert str(caught.value).endswith("; it was left as it is: fix it by hand, or the next saved attempt will move it "
                                      "aside as ada.toml.corrupt-<time> and start a fresh file")
    assert caught.value.problem == "its format_version is 0, not 2"


def test_an_exercise_without_a_note_reads_with_empty_note_and_time(tmp_path):
    (tmp_path / "ada.toml").write_text('format_version = 1\n[exercises.x]\nattempts = []\n')
    p = ProgressStore(tmp_path).load("ada")
    assert (p.of("x").note, p.of("x").note_time, p.learner) == ("", "", "ada")


def test_a_crlf_inside_a_multiline_string_reads_as_one_newline():
    reading = classify(b'format_version = 1\r\nlearner = """a\r\nb"""\r\n')
    assert reading.data["learner"] == "a\nb"


def test_a_toml_error_names_where_the_file_breaks():
    assert "line 2" in classify(b"format_version = 1\nx = = 2\n").problem


def test_an_unsafe_learner_name_is_named_up_to_40_characters():
    with pytest.raises(ProgressError) as caught:
        validate_learner("a/b" + "c" * 60)
    assert str(caught.value) == (f"the learner name {repr('a/b' + 'c' * 60)[:40]} is not allowed; use 1-64 letters "
                                 "of any script, digits, spaces, dots, dashes, underscores, apostrophes or @ , ( ) +, "
                                 "starting with a letter or digit")


def test_no_login_name_at_all_falls_back_with_a_notice(monkeypatch):
    def no_login():
        raise OSError("no such user")
    monkeypatch.delenv("TUTOR_LEARNER", raising=False)
    monkeypatch.setattr(getpass, "getuser", no_login)
    name, notice = default_learner_and_notice()
    assert name == "learner" and notice.startswith("no login name was found, so")


def test_a_long_unusable_login_name_is_named_up_to_40_characters(monkeypatch):
    login = "a/b" + "c" * 60
    monkeypatch.delenv("TUTOR_LEARNER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: login)
    assert default_learner_and_notice()[1].startswith(f"your login name {login[:40]!r} is not a valid learner name,")


def test_progress_lives_in_the_checkouts_progress_folder_when_there_is_one(tmp_path, monkeypatch):
    import tutor.store.progress
    monkeypatch.delenv("TUTOR_PROGRESS_DIR", raising=False)
    (tmp_path / "checkout" / "tutor" / "store").mkdir(parents=True)
    (tmp_path / "checkout" / "progress").mkdir()
    (tmp_path / "checkout" / "pyproject.toml").write_text("")
    monkeypatch.setattr(tutor.store.progress, "__file__",
                        str(tmp_path / "checkout" / "tutor" / "store" / "progress.py"))
    assert default_folder() == tmp_path / "checkout" / "progress"


@pytest.mark.parametrize("has_pyproject", [False, True])
def test_outside_a_checkout_with_progress_it_lives_in_the_user_data_folder(tmp_path, monkeypatch, has_pyproject):
    import tutor.store.progress
    monkeypatch.delenv("TUTOR_PROGRESS_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    installed = tmp_path / "site" / "tutor" / "store" / "progress.py"
    installed.parent.mkdir(parents=True)
    if has_pyproject:  # a checkout without a progress/ folder
        (tmp_path / "site" / "pyproject.toml").write_text("")
    monkeypatch.setattr(tutor.store.progress, "__file__", str(installed))
    assert default_folder() == tmp_path / "data" / "tutor" / "progress"


def test_an_attempt_of_a_run_without_a_prediction_shows_the_observation_in_its_kind():
    import re

    from tutor.sandbox.runner import RunResult
    result = RunResult(id="x", status="pass", device="cuda", torch="t", fault=None, kind="bool",
                       prediction=None, prediction_text=None, observed=True, correct=None)
    saved = Attempt.of(result)
    assert (saved.prediction, saved.observed, saved.correct, saved.device, saved.seed) == ("", "yes", False, "cuda", 0)
    assert re.fullmatch(STAMP, saved.time)


def test_the_store_lists_the_mode_folders_that_hold_a_learners_working_copies(tmp_path):
    store = ProgressStore(tmp_path)
    assert store.working_copy_keys("ada", "audit") == []  # nothing saved yet: no folder at all
    for key in ("hunt-3", "fix", "hunt-12"):
        store.save_working_copy("ada", "audit", key, "engine/model.py", "x = 1\n")
    store.save_working_copy("ada", "head-split", "break", "engine/model.py", "x = 2\n")
    store.save_working_copy("bob", "audit", "hunt-7", "engine/model.py", "x = 3\n")
    assert store.working_copy_keys("ada", "audit") == ["fix", "hunt-12", "hunt-3"]
    assert store.working_copy_keys("ADA", "audit") == ["fix", "hunt-12", "hunt-3"]  # one learner, any case
    with pytest.raises(ProgressError, match="cannot name a working copy folder"):
        store.working_copy_keys("ada", "../audit")


def test_a_diff_is_written_as_a_multi_line_string_and_reads_back_the_same(tmp_path):
    from dataclasses import replace
    store = ProgressStore(tmp_path)
    diff = "--- a/engine/model.py\n+++ b/engine/model.py\n@@ -1 +1 @@\n-    a = 1\n+    a = 2 \\\\ \"\"\"\n"
    edit = replace(attempt(), mode="fix", diff=diff, verdict="fixed")
    store.record_attempt("ada", "head-split", edit)
    text = (tmp_path / "ada.toml").read_text()
    assert 'diff = """\n--- a/engine/model.py\n+++ b/engine/model.py\n' in text  # one line of the file a line
    assert store.load("ada").of("head-split").attempts[0].diff == diff
    # a carriage return would not come back from a multi-line string: such a file keeps one-line strings
    store.save_note("ada", "head-split", "line one\r\nline two")
    assert store.load("ada").of("head-split").note == "line one\r\nline two"
    assert store.load("ada").of("head-split").attempts[0].diff == diff


def test_the_hints_revealed_are_kept_until_the_exercise_is_reset(tmp_path):
    from tutor.store.progress import ProgressStore
    store = ProgressStore(tmp_path)
    store.save_hints("ada", "head-split", 2)
    assert ProgressStore(tmp_path).load("ada").of("head-split").hints == 2
    store.record_attempt("ada", "head-split", Attempt(time=now(), prediction="c", observed="b", correct=False,
                                                      status="fail", device="cpu", engine_hash="x", hints=2))
    store.reset("ada", "head-split")
    assert ProgressStore(tmp_path).load("ada").of("head-split").hints == 0
