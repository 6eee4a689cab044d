"""Learner names: which names are allowed, one learner per name whatever its case, and the file stem each gets.

A learner types a name ("Zoë", "Ada Lovelace"); :func:`validate_learner`
tidies and checks it, :func:`learner_key` is the learner's identity and
:func:`file_stem` the progress file's name, safe on every file system.
The default name comes from ``TUTOR_LEARNER`` or the login name.
"""

from __future__ import annotations

import getpass
import os
import re
import unicodedata
import urllib.parse

from tutor.model.attempts import ProgressError

#: The learner name used when neither a flag, TUTOR_LEARNER nor a safe login name gives one.
FALLBACK_LEARNER = "learner"
#: The names earlier tutors allowed (ASCII, case kept in the file name); such files are still found.
LEGACY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Longest learner name, in characters (after spaces are tidied).
MAX_LEARNER_CHARS = 64
#: Longest file-name stem a learner name may give, in bytes: a file system allows 255 per name, and the
#: stem also carries ".toml", ".lock", ".corrupt-<time>" (31) or a temporary file's 19 characters.
MAX_STEM_BYTES = 200
#: Characters a file name keeps as they are; every other character of a learner's key is written %XX.
_STEM_SAFE = "abcdefghijklmnopqrstuvwxyz0123456789._-"
#: Punctuation a learner name may hold beside letters, digits and single spaces (O'Brien, Ada-Mae, a.b_c).
_NAME_PUNCTUATION = "._-'\u2019@,()+"
#: Device names Windows reserves whatever the extension: such a stem has its first letter written %XX.
_RESERVED_STEMS = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def validate_learner(name: str) -> str:
    """Return ``name`` tidied (Unicode NFC, spaces trimmed and single) if it is a usable learner name.

    A name holds letters and digits of any script, single spaces, dots,
    dashes, underscores, apostrophes, and the ``@ , ( ) +`` an LMS export's
    names and e-mail addresses carry ("Zoë", "Ada Lovelace", "O'Brien",
    "李雷", "ada@uni.edu", "García, José (TA)"), 1-64 characters starting
    with a letter or digit. Two names that
    differ only by case are one learner (:func:`learner_key`); the progress
    file's name is derived from the key (:func:`file_stem`), never typed.

    Raises:
        ProgressError: the name is empty, too long (also for its file name),
            or holds a path separator, a control character (a tab, a newline)
            or other punctuation.
    """
    plain = isinstance(name, str) and not any(unicodedata.category(ch)[0] == "C" for ch in name)
    tidy = " ".join(unicodedata.normalize("NFC", name).split()) if plain else ""
    if not _usable_name(tidy):
        shown = repr(name)[:40]
        raise ProgressError(f"the learner name {shown} is not allowed; use 1-{MAX_LEARNER_CHARS} letters of any "
                            "script, digits, spaces, dots, dashes, underscores, apostrophes or @ , ( ) +, "
                            "starting with a letter or digit")
    if len(stem_of_key(learner_key(tidy)).encode()) > MAX_STEM_BYTES:
        raise ProgressError(f"the learner name {repr(tidy)[:40]} is too long for a file name once written "
                            "safely; use a shorter name")
    return tidy


def _usable_name(tidy: str) -> bool:
    """Whether a tidied name has the allowed length and characters (see :func:`validate_learner`)."""
    if not 1 <= len(tidy) <= MAX_LEARNER_CHARS or not tidy[0].isalnum():
        return False
    for ch in tidy:
        category = unicodedata.category(ch)
        if not (category[0] in "LN" or category.startswith("M") or ch == " " or ch in _NAME_PUNCTUATION):
            return False
    return True


def learner_key(name: str) -> str:
    """A learner's identity: the tidied name case-folded (``"ADA"``, ``"Ada"`` and ``"ada"`` are one learner).

    ``name`` must be valid (:func:`validate_learner`).
    """
    return unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", name).split()).casefold())


def file_stem(name: str) -> str:
    """The progress file's name without ``.toml`` for a learner: the key, with every character other than
    ASCII lower-case letters, digits, ``.``, ``_`` and ``-`` written as ``%XX`` (its UTF-8 bytes).

    ``ada`` stays ``ada``; ``Ada Lovelace`` becomes ``ada%20lovelace`` and ``Zoë`` ``zo%C3%AB``: a name
    safe on every file system, the same for names that differ only by case, and read back by
    :func:`name_of_stem`.

    Raises:
        ProgressError: the name is not allowed (:func:`validate_learner`).
    """
    return stem_of_key(learner_key(validate_learner(name)))


def stem_of_key(key: str) -> str:
    stem = urllib.parse.quote(key, safe=_STEM_SAFE)
    if stem in _RESERVED_STEMS or stem.startswith(("con.", "prn.", "aux.", "nul.")):
        stem = f"%{ord(stem[0]):02X}{stem[1:]}"
    return stem


def name_of_stem(stem: str) -> str | None:
    """The learner key a progress file's stem stands for, or None when the stem is not one
    :func:`file_stem` writes (another file in the folder)."""
    try:
        key = urllib.parse.unquote(stem, errors="strict")
    except UnicodeDecodeError:
        return None
    tidy = " ".join(unicodedata.normalize("NFC", key).split())
    if not _usable_name(tidy) or stem_of_key(learner_key(tidy)) != stem:
        return None
    return key


def default_learner() -> str:
    """``TUTOR_LEARNER``, else the login name when it is a safe name, else ``learner``.

    Raises:
        ProgressError: TUTOR_LEARNER is set to an unsafe name.
    """
    return default_learner_and_notice()[0]


def default_learner_and_notice() -> tuple[str, str | None]:
    """The default learner name, and a sentence to show when it is the fallback.

    The name is ``TUTOR_LEARNER``, else the login name when it is a safe
    learner name, else ``FALLBACK_LEARNER``; the sentence is None unless the
    fallback was taken, and then names it and how to choose a name.

    Raises:
        ProgressError: TUTOR_LEARNER is set to an unsafe name.
    """
    name = os.environ.get("TUTOR_LEARNER")
    if name:
        return validate_learner(name), None
    try:
        login = getpass.getuser()
    except Exception:
        login = ""
    try:
        return validate_learner(login), None
    except ProgressError:
        pass
    why = (f"your login name {login[:40]!r} is not a valid learner name" if login else
           "no login name was found")
    return FALLBACK_LEARNER, (f"{why}, so the learner name {FALLBACK_LEARNER!r} is used; "
                              "choose one with --learner NAME or TUTOR_LEARNER=NAME")


def display_name(data: dict, learner: str) -> str:
    """The name a progress file shows: the one it holds when that is the same learner, else ``learner``."""
    held = data.get("learner")
    if isinstance(held, str):
        try:
            if learner_key(validate_learner(held)) == learner_key(learner):
                return held
        except ProgressError:
            pass
    return learner
