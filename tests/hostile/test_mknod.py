"""No device node, FIFO, socket or symlink in a side's tree: a block device there once read a whole disk raw."""


ATTACK = """
import os, stat
res = {}
for name, mode, dev in (('blk', stat.S_IFBLK, os.makedev(7, 0)), ('chr', stat.S_IFCHR, os.makedev(1, 3)),
                        ('fifo', stat.S_IFIFO, 0), ('sock', stat.S_IFSOCK, 0)):
    try:
        os.mknod(name, mode | 0o600, dev)
        res[name] = 'made'
    except OSError as exc:
        res[name] = exc.errno
for name, make in (('mkfifo', lambda: os.mkfifo('f2')), ('symlink', lambda: os.symlink('/etc/passwd', 'ln')),
                   ('outside', lambda: os.mknod(OUTSIDE + '.blk', stat.S_IFBLK | 0o600, os.makedev(7, 0)))):
    try:
        make()
        res[name] = 'made'
    except OSError as exc:
        res[name] = exc.errno
report(res)
"""


def test_no_node_of_any_kind_is_made(outcome):
    made = outcome.reported  # errno per try, or 'made'
    assert set(made) == {"blk", "chr", "fifo", "sock", "mkfifo", "symlink", "outside"}
    assert all(isinstance(v, int) for v in made.values()), made
    assert made["blk"] == made["chr"] == made["fifo"] == 1  # EPERM: the seccomp filter, before any path is read
    assert not outcome.witness.outside.with_suffix(".txt.blk").exists()


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
