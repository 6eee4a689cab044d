"""A whole hostile class in one batch: every hand-in the hostile tests run, beside three honest learners, through
one ``tutor grade --fixes`` as a fresh process with the real sandbox, the way an instructor grades.

The hostile hand-ins are each module's attack (``ATTACK`` of the ``tutor fix`` tests, the side floods, the
universal self-repair, a forgery of seed 0's clean output signed with the side's own key) and the hand-ins
the grading tests write (a file too deep for the compiler, two folders of one learner, a folder and a file
that are links to a classmate's, a second hard link to the instructor's solution, names holding terminal
escapes, a folder name that is not UTF-8). The hostile tests whose hand-in needs a stand-in runner (a worker
killed from outside, a grader that fails on a marker, evidence mis-shaped by the runner, forged outputs at
learned seeds) are not here: no file alone does what they do.

The honest learners: ada's repair is right, bob's is wrong (``squeeze(0)``, which drops nothing), cy hands
in the faulted file untouched. After the batch their rows say exactly that and their files are as they
were; every hostile learner has rows of its own, none passing; results.json is written; the exit status
is 0 or 1; and nothing else changed (``attack.Outcome.assert_not_fixed_and_no_damage``'s checks).

The class is 32 learner folders (29 hostile); it grades in about 25 s on two busy cores, so it runs in the
default tier.
"""

from __future__ import annotations

import json
import os
import re
import secrets

import pytest

import test_capabilities
import test_cgroup_names
import test_deep_tree
import test_each_side_alone
import test_environ
import test_environ_names
import test_harness_patch
import test_hunt_mystery
import test_immutable_and_size
import test_log
import test_metadata
import test_mknod
import test_proc_recon
import test_side_floods
import test_socket_families
import test_syscalls
import test_unix_socket
from attack import CLEAN, SECRET, SQUEEZE, _Scene, attack_file, unix_listeners
from test_grading_escapes import ACTING, ERASE, TITLE
from test_grading_identity import FUTURE
from test_grading_one_row import DEEP as TOO_DEEP_TO_COMPILE
from test_grading_submissions import digest
from tutor.app.session import Session
from tutor.instructor import gradebook

EXERCISE = "broadcast-loss"
FILE = f"{EXERCISE}.py"
#: The three honest learners' files: a right repair, a wrong one, the faulted file untouched.
HONEST = {
    "ada": CLEAN,
    "bob": CLEAN.replace(SQUEEZE, SQUEEZE.replace("squeeze(-1)", "squeeze(0)")),
    "cy": CLEAN.replace(SQUEEZE, ""),
}
#: What some attacks' rows must say: the cap or the check that stopped them, named.
ATTACKS_SAY = {"long-line": "64 KiB", "progress-flood": "8 MiB", "deep-measurement": "tampered",
               "forger": "not fixed at a hidden seed", "self-repair": "SAW<"}
#: An abstract UNIX socket's name the unix-socket attack tries; bound by the test, so a connection would show.
ABSTRACT = "\0tutor-class-" + secrets.token_hex(6)


def attacks(sockets: tuple[str, str], forged: tuple) -> dict[str, str]:
    """learner -> the attack code of every hostile ``tutor fix`` test (``attack.attack_file`` wraps it)."""
    observed, evidence, records = forged
    hunt = test_hunt_mystery.ATTACK.replace("REVERSED", repr(["nothing-to-find"])).replace("SEED", "0")
    return {
        "capabilities": test_capabilities.ATTACK,
        "cgroup-names": test_cgroup_names.ATTACK,
        "deep-tree": test_deep_tree.ATTACK,
        "self-repair": test_each_side_alone.ATTACK,
        "environ": test_environ.ATTACK,
        "environ-names": test_environ_names.ATTACK,
        "forger": test_harness_patch.ATTACK.replace("OBSERVED", repr(observed)).replace(
            "EVIDENCE", repr(evidence)).replace("RECORDS", repr(records)),
        "hunter": hunt,
        "immutable": test_immutable_and_size.ATTACK,
        "log": test_log.ATTACK,
        "metadata": test_metadata.ATTACK,
        "mknod": test_mknod.ATTACK,
        "proc-recon": test_proc_recon.ATTACK,
        "long-line": test_side_floods.LONG_LINE,
        "progress-flood": test_side_floods.PROGRESS_FLOOD,
        "notices": test_side_floods.NOTICES,
        "deep-measurement": test_side_floods.DEEP,
        "socket-families": test_socket_families.ATTACK,
        "syscalls": test_syscalls.ATTACK,
        "unix-socket": test_unix_socket.ATTACK.replace("PATHNAME", repr(sockets[0])).replace(
            "ABSTRACT", repr(sockets[1])),
        "shouter": f"raise RuntimeError({TITLE + ERASE!r})",
    }


class Class:
    """One batch of the class: what ran, the rows, and the files as they were."""

    def __init__(self, root, sockets, forged) -> None:
        self.root, self.fixes = root, root / "fixes"
        self.attacks = attacks(sockets, forged)
        first = next(iter(self.attacks))
        self.scene = _Scene(root, self.attacks[first], None, self._path(first))
        for who, code in list(self.attacks.items())[1:]:
            self._path(who).write_text(attack_file(self._placed(code)), encoding="utf-8")
        for who, text in HONEST.items():
            self._path(who).write_text(text, encoding="utf-8")
        self.solution = root / "solution" / FILE  # the instructor's, outside the submissions folder
        self.solution.parent.mkdir()
        self.solution.write_text(CLEAN, encoding="utf-8")
        self.other_hostile = self._grading_hand_ins()
        self.honest = {who: digest(self.fixes / who / FILE) for who in HONEST}

    def _path(self, who: str):
        (self.fixes / who).mkdir(parents=True, exist_ok=True)
        return self.fixes / who / FILE

    def _placed(self, code: str) -> str:
        witness = self.scene.witness
        return code.replace("CLASSMATE", repr(str(witness.classmate))).replace("OUTSIDE", repr(str(witness.outside)))

    def _grading_hand_ins(self) -> dict[str, str]:
        """The grading tests' hostile hand-ins; learner -> what its row must say."""
        self._path("deep-expression").write_text(TOO_DEEP_TO_COMPILE, encoding="utf-8")
        (self.fixes / "mirror").symlink_to(self.fixes / "ada")  # a whole folder that is a classmate's
        (self.fixes / "odd-name").mkdir()
        os.mkdir(os.fsencode(self.fixes / "odd-name") + b"\xff")
        with open(os.fsencode(self.fixes / "odd-name") + b"\xff/" + FILE.encode(), "w", encoding="utf-8") as fh:
            fh.write(CLEAN)
        (self.fixes / "odd-name").rmdir()
        (self.fixes / f"{TITLE}x").mkdir()
        (self.fixes / f"{TITLE}x" / FILE).write_text("x = 1\n", encoding="utf-8")
        (self.fixes / "shouter" / f"{ERASE}.py").write_text("x = 1\n", encoding="utf-8")
        self._path("sym-file").symlink_to("../ada/" + FILE)  # a file that is a classmate's
        (self.fixes / "hard-link").mkdir()
        os.link(self.solution, self.fixes / "hard-link" / FILE)  # a second name for the instructor's solution
        self._path("eve").write_text(CLEAN, encoding="utf-8")  # two folders of one learner, one dated 2030
        taker = self._path("EVE")
        taker.write_text("raise SystemExit('not a repair')\n", encoding="utf-8")
        os.utime(taker, (FUTURE, FUTURE))
        return {"deep-expression": "too deeply", "mirror": "is a symbolic link", "odd-name\\xff": "not UTF-8",
                "sym-file": "is a symbolic link", "hard-link": "has 2 hard links", "eve": "'EVE'", "EVE": "'eve'",
                "shouter": "there is no exercise"}

    def grade(self):
        self.outcome = self.scene.run(["grade", "--fixes", str(self.fixes), "--out", str(self.root / "graded"),
                                       "--exercises", EXERCISE, "--json"])
        self.rows = gradebook.read_rows(self.root / "graded")
        return self


@pytest.fixture(scope="module")
def sockets(tmp_path_factory):
    """A pathname and an abstract UNIX socket listening outside every sandbox: no side may reach either."""
    with unix_listeners(tmp_path_factory.mktemp("agent"), ABSTRACT) as (path, listening):
        yield (path, ABSTRACT), listening


@pytest.fixture(scope="module")
def forged(runner, catalog):
    """Seed 0's clean observation and evidence (what every learner is shown) and the records of the snippet's
    calls there (which the forger's own code could compute), for the forger to sign."""
    ex = catalog.get(EXERCISE)
    session = Session(catalog, runner)
    clean = session.fix(ex, session.edit_task(ex, "fix").clean, hidden_seeds=0).result
    return tuple(json.loads(json.dumps(part)) for part in
                 (clean.observations["clean"], clean.evidence["clean"], clean.records["clean"]))


def test_every_hostile_hand_in_in_one_batch_leaves_the_honest_learners_graded_right(tmp_path, sockets, forged):
    batch = Class(tmp_path, sockets[0], forged).grade()
    listening = sockets[1]
    outcome = batch.outcome
    assert outcome.returncode in (0, 1), outcome.text[-3000:]
    by = {}
    for row in batch.rows:
        by.setdefault(row["learner"], []).append(row)
    # the honest three: each one row, its own verdict, its file as it was
    assert [r["status"] for r in by["ada"]] == ["pass"] and by["ada"][0]["score"] == 1, by["ada"]
    for who in ("bob", "cy"):
        assert [r["status"] for r in by[who]] == ["fail"] and by[who][0]["score"] == 0, by[who]
        assert by[who][0]["verdict"] == "not fixed", by[who]
    for who, before in batch.honest.items():
        assert digest(batch.fixes / who / FILE) == before, who
        assert by[who][0]["confined"] is True, by[who]
    # every hostile learner: rows of its own, none passing, none the machine's
    for who in batch.attacks:
        assert by.get(who), (who, sorted(by))
        for row in by[who]:
            assert row["status"] != "pass" and row["score"] == 0, row
            assert row.get("verdict") != gradebook.COULD_NOT_RUN, row
    for who, said in [*ATTACKS_SAY.items(), *batch.other_hostile.items()]:
        assert by.get(who) and all(r["status"] != "pass" for r in by[who]), (who, by.get(who))
        assert any(said in (r.get("reason") or "") for r in by[who]), (who, by[who])
    # results.json: every honest learner scored as their row; the files readable and escaped
    results = json.loads((batch.root / "graded" / "results.json").read_text(encoding="utf-8"))
    scores = {e["extra_data"]["learner"]: e["score"] for e in results["learners"]}
    assert (scores["ada"], scores["bob"], scores["cy"]) == (1, 0, 0), scores
    assert all(scores[who] == 0 for who in batch.attacks), scores
    for name in ("rows.jsonl", "gradebook.csv", "results.json"):
        text = (batch.root / "graded" / name).read_bytes().decode("utf-8")
        assert not ACTING.search(text), (name, ACTING.search(text))
        assert SECRET not in text
    assert not ACTING.search(re.sub(r"[\r\n\t]", "", outcome.text)), ACTING.search(outcome.text)
    # no side reached the UNIX sockets outside
    for s in listening:
        with pytest.raises(BlockingIOError):
            s.accept()
    outcome.data = {"fixed": False, "confined": True}  # per row above; here the damage the batch did
    outcome.assert_not_fixed_and_no_damage()

