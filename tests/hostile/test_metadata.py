"""chmod, chown, utime and xattrs fail on every file (Landlock has no right for them; seccomp refuses them),
and the notice says "refused" only where a layer really refuses."""

from tutor.sandbox import confine, landlock

ATTACK = """
import os
res = {}
for label, path in (('mate', CLASSMATE), ('out', OUTSIDE), ('own', 'exercises/snippets/losses.py')):
    for op, call in (('chmod', lambda: os.chmod(path, 0o4777)), ('chown', lambda: os.chown(path, 65534, 65534)),
                     ('utime', lambda: os.utime(path, (978307200, 978307200))),
                     ('xattr', lambda: os.setxattr(path, 'user.evil', b'1')),
                     ('rmxattr', lambda: os.removexattr(path, 'user.witness'))):
        try:
            call()
            res[label + op] = 'done'
        except OSError as exc:
            res[label + op] = exc.errno
report(res)
"""


def test_every_metadata_change_fails(outcome):
    done = outcome.reported  # errno per try, or 'done'
    assert len(done) == 15 and all(v == 1 for v in done.values()), done  # EPERM, from the seccomp filter


def test_the_notices_name_the_classmates_file_as_refused(outcome):
    said = " ".join(outcome.data.get("refused", {}).get("yours", [])) + outcome.text
    assert f"tried to chmod {outcome.witness.classmate}: refused" in said


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()


def test_without_the_filter_the_notice_claims_no_refusal(tmp_path):
    notes = []
    policy = landlock.Policy(tree=str(tmp_path), read=())
    confine.Attempts(policy, notes.append, seccomp=False)("os.chmod", ("/srv/class/ada.toml", 0o777))
    confine.Attempts(policy, notes.append, seccomp=True)("os.chmod", (str(tmp_path / "mine.py"), 0o777))
    confine.Attempts(policy, notes.append, landlock=False)("open", ("/srv/class/ada.toml", "w", 0))
    assert notes == ["tried to chmod /srv/class/ada.toml", f"tried to chmod {tmp_path / 'mine.py'}: refused",
                     "tried to write /srv/class/ada.toml"]
