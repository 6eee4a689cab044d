"""Bad input: a file that writes 10 MB to stdout without a newline (straight to the
file descriptor, past Python's sys.stdout) when it is imported. ``build`` returns a
clean model; ``broken`` raises, for a quick test of the same flood."""

import os

import zoo_nano

os.write(1, b"x" * 10_000_000)


def build():
    return zoo_nano.build()


def broken():
    raise RuntimeError("no model today")
