"""No immutable file, no file past the size cap: a 256 MiB chattr +i file once outlived the side and the batch."""

from tutor.sandbox import confine

ATTACK = """
import array, fcntl, os
res = {}
try:
    with open('tmp/big', 'wb') as fh:
        chunk = b'0' * (1 << 20)
        for _ in range(FILE_CAP_MB + 8):
            fh.write(chunk)
    res['big'] = 'written'
except OSError as exc:
    res['big'] = exc.errno
res['size_mb'] = os.path.getsize('tmp/big') >> 20
fd = os.open('exercises/snippets/losses.py', os.O_RDONLY)
for name, request in (('setflags', 0x40086602), ('fssetxattr', 0x401C5820)):
    try:
        fcntl.ioctl(fd, request, array.array('l', [0x10, 0, 0, 0]))
        res[name] = 'done'
    except OSError as exc:
        res[name] = exc.errno
report(res)
""".replace("FILE_CAP_MB", str(confine.FILE_CAP_MB))


def test_the_file_stops_at_the_cap_and_chattr_is_refused(outcome):
    res = outcome.reported
    assert res["big"] == 27 and res["size_mb"] == confine.FILE_CAP_MB, res  # EFBIG at RLIMIT_FSIZE
    assert res["setflags"] == res["fssetxattr"] == 1, res  # EPERM, from the seccomp filter


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
