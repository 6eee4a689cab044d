"""The messages between the tutor, its check worker and the worker's children.

One module, imported by both ends (:mod:`tutor.sandbox.runner` in the tutor,
:mod:`tutor.sandbox.worker` in the worker process), so a message is spelled once.
Every message is a frozen dataclass; on the wire it is one line of JSON with
a ``"type"`` field naming the class (``encode`` / ``decode``). This module
imports neither torch nor Textual.

Tutor → worker (the worker's stdin):
    :class:`Request` — run one check on some sides.

Worker → tutor (the worker's stdout):
    :class:`Hello` once at start, then per request any number of
    :class:`Progress` and one :class:`Answer` (or :class:`Refusal` for a line
    that is not a request).

Child → worker (a pipe per forked child):
    :class:`Progress` (with no job or side yet) and :class:`Attempted`
    (something the confinement refused), then one :class:`Measured` or
    :class:`Raised`. Each line is signed (:func:`sign`) with a key made for
    that side alone: a line the subject writes to the pipe itself, without
    the key, is not taken as the side's result (the side is *tampered*).

A *side* (:class:`Side`) is how one private tree is built before the check
runs on it: a copy of the subject packages, then the side's fault applied,
then the side's files put in place. ``clean`` has neither, ``faulted`` has
the exercise's fault, and a learner's own edited file (edit mode)
is one more side whose ``files`` replace the subject file — the runner and
worker treat every side alike.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from exercises.faults import Fault
from tutor.sandbox.shapes import shape_problem

#: The statuses a side can end with (``SideResult.status``).
SIDE_STATUSES = ("ok", "error", "timeout")

# --- what a side may send ----------------------------------------------------------------------------
# A side's lines are signed, but the subject runs in the process that holds the key: the signature proves
# which side sent a line, never that the check wrote it. So each line is held to caps while it is read
# (tutor.sandbox.side) and to its type's shape before anything of it is used (verify).

#: The longest line a side may send (signature and JSON): a longer one stops the side.
MAX_MESSAGE_BYTES = 64 * 1024
#: The most a side may send on its pipe in all: past it the side is stopped.
MAX_SIDE_BYTES = 8 * 1024 * 1024
#: The most of one notice (``Attempted.what``) or progress message a side's result keeps, in characters.
MAX_NOTICE_CHARS = 1000
#: The most notices, and the most progress reports passed on, of one side.
MAX_NOTICES = 20
MAX_PROGRESS = 1000


class ProtocolError(ValueError):
    """A line that is not a message of this protocol; the message says why."""


@dataclass(frozen=True)
class Side:
    """How one side's private tree is built.

    Attributes:
        name: the side's name; results are keyed by it (``clean``,
            ``faulted``, ``yours``).
        fault: an exact edit applied to the copy, or None.
        files: ``(path, text)`` pairs written over the copy after the fault,
            each path relative to the source root and inside one of the
            subject packages (``exercises.faults.SUBJECT_PACKAGES``), naming
            a file that exists there — e.g. ``("engine/model.py", text)``.
    """

    name: str
    fault: Fault | None = None
    files: tuple[tuple[str, str], ...] = ()

    @classmethod
    def clean(cls) -> "Side":
        """The subject as it is on disk."""
        return cls("clean")

    @classmethod
    def faulted(cls, fault: Fault) -> "Side":
        """The subject with ``fault`` applied."""
        return cls("faulted", fault=fault)

    @classmethod
    def replacing(cls, name: str, path: str, text: str) -> "Side":
        """The subject with the file ``path`` replaced by ``text`` (a learner's own copy)."""
        return cls(name, files=((path, text),))

    def to_wire(self) -> dict:
        return {"name": self.name, "fault": self.fault.to_dict() if self.fault else None,
                "files": [[path, text] for path, text in self.files]}

    @classmethod
    def from_wire(cls, data: dict) -> "Side":
        fault = data.get("fault")
        return cls(name=data["name"], fault=Fault(**fault) if fault else None,
                   files=tuple((path, text) for path, text in data.get("files", ())))


@dataclass(frozen=True)
class Message:
    """Base of every message; ``TYPE`` is its name on the wire."""

    TYPE: ClassVar[str] = ""

    def to_wire(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_wire(cls, data: dict) -> "Message":
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass(frozen=True)
class Hello(Message):
    """The worker is up: what it runs with.

    Attributes:
        torch: torch's version string.
        cuda: whether torch sees a CUDA device.
        pid: the worker's process id (its process group's id too).
        cores: CPU cores the worker may use.
        scratch: the folder every private copy lives in; removed by the
            worker when it ends, or by the runner when it kills the worker.
        speed: what the worker's speed probe measured when it started
            (``tutor.sandbox.speed.Speed.to_wire``: ``gemm_s``, ``step_s``,
            ``threads``, ``copies``, ``wall_s``, ``factor``), or None when
            the probe could not run; the runner scales time limits by it.
        confinement: how the worker confines each side
            (``tutor.sandbox.confine.Status.to_wire``), or None from a
            worker that does not say (taken as unconfined).
    """

    TYPE: ClassVar[str] = "hello"
    torch: str
    cuda: bool
    pid: int
    cores: int
    scratch: str
    speed: dict | None = None
    confinement: dict | None = None


@dataclass(frozen=True)
class Request(Message):
    """Run one check on each side, at once, in forked children.

    Attributes:
        job: a number the answer and progress repeat.
        check: ``module.function`` in ``exercises/``.
        device: ``cpu`` or ``cuda`` (already resolved).
        seed: the seed every generator is set to before the check runs.
        timeout_s: wall-clock limit for all sides together, seconds (the
            limit that applies, already scaled: ``tutor.sandbox.speed``).
        sides: the sides to run, each by its own name.
        limit_why: which limit that is and why, as a clause
            (``tutor.sandbox.speed.TimeLimit.why``); a timeout's sentence ends with
            it. "" says nothing more.
        record: the snippet module whose calls every side's check records (``exercises/snippets/x.py``:
            :mod:`tutor.sandbox.record`, for a run where a side replaces it), or "" to record nothing.
    """

    TYPE: ClassVar[str] = "request"
    job: int
    check: str
    device: str
    seed: int
    timeout_s: float
    sides: tuple[Side, ...]
    limit_why: str = ""
    record: str = ""

    def to_wire(self) -> dict:
        data = super().to_wire()
        data["sides"] = [side.to_wire() for side in self.sides]
        return data

    @classmethod
    def from_wire(cls, data: dict) -> "Request":
        return cls(job=data["job"], check=data["check"], device=data["device"], seed=int(data["seed"]),
                   timeout_s=float(data["timeout_s"]), sides=tuple(Side.from_wire(s) for s in data["sides"]),
                   limit_why=str(data.get("limit_why", "")), record=str(data.get("record", "")))


@dataclass(frozen=True)
class SideSpec:
    """All one side's processes know of the run: the worker sends it to the side's blank warden
    (:mod:`tutor.sandbox.forkserver`), and nothing of any other side travels with it.

    Attributes:
        check: ``module.function`` in ``exercises/``.
        device: ``cpu`` or ``cuda``.
        seed: the seed every generator is set to.
        folder: the side's own private tree.
        threads: torch threads for the side's child.
        key: the side's signing key, hex (:func:`sign`).
        status: how the worker confines sides (``tutor.sandbox.confine.Status.to_wire``).
        roots: what the side's child may read when confined.
        listed: what it may list but not read (``tutor.sandbox.reads.policy``).
        cgroup, memory_cgroup: the side's pids and memory cgroups, or None.
        worker_pid: the worker's pid, as the warden sees it (its parent once adopted).
        record: the module the side's check records (:attr:`Request.record`).
    """

    check: str
    device: str
    seed: int
    folder: str
    threads: int
    key: str
    status: dict
    roots: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()
    cgroup: str | None = None
    memory_cgroup: str | None = None
    worker_pid: int = 0
    record: str = ""

    @property
    def key_bytes(self) -> bytes:
        return bytes.fromhex(self.key)

    def request(self) -> "Request":
        """The side's check as a request with no sides: what the warden and child read (check, device, seed)."""
        return Request(job=0, check=self.check, device=self.device, seed=self.seed, timeout_s=0.0, sides=(),
                       record=self.record)

    def encode(self) -> bytes:
        """One line of JSON, newline included."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["roots"], data["listed"] = list(self.roots), list(self.listed)
        return json.dumps(data).encode() + b"\n"

    @classmethod
    def decode(cls, line: bytes) -> "SideSpec":
        """Raises:
            ProtocolError: the line is not a side's spec."""
        try:
            data = json.loads(line)
            return cls(**{**data, "roots": tuple(data.get("roots", ())), "listed": tuple(data.get("listed", ()))})
        except (ValueError, TypeError) as exc:
            raise ProtocolError(f"the line is not a side's spec ({exc})") from None


@dataclass(frozen=True)
class Progress(Message):
    """How far one side's check has got.

    Attributes:
        fraction: 0 to 1.
        message: what the check is doing, in a few words.
        job: the request's job (None while it travels from child to worker).
        side: the side's name ("" while it travels from child to worker).
    """

    TYPE: ClassVar[str] = "progress"
    fraction: float
    message: str = ""
    job: int | None = None
    side: str = ""


@dataclass(frozen=True)
class Attempted(Message):
    """Something a side's subject tried that its confinement refused ("tried to write ~/x: refused")."""

    TYPE: ClassVar[str] = "attempted"
    what: str


@dataclass(frozen=True)
class Unjoined(Message):
    """The side's warden could not join one of its cgroups, so that cgroup's limit does not hold for the side.

    Attributes:
        controller: ``pids`` or ``memory``.
        why: the kernel's refusal (``Permission denied``).
    """

    TYPE: ClassVar[str] = "unjoined"
    controller: str
    why: str = ""


@dataclass(frozen=True)
class Measured(Message):
    """A child's check returned (``exercises.outcome.Measurement``, as JSON-able data), with the records of
    the snippet module's calls when the request named one (:mod:`tutor.sandbox.record`)."""

    TYPE: ClassVar[str] = "measured"
    observed: Any
    evidence: list = field(default_factory=list)
    records: list = field(default_factory=list)


@dataclass(frozen=True)
class Raised(Message):
    """A child's check (or the subject under it) raised.

    Attributes:
        exception: the exception's class name.
        message: the first line of its message.
        where: ``file.py:line`` of the innermost frame, or "".
        frames: ``path:line`` of each frame in the side's own tree (the path
            relative to it: ``engine/model.py:57``), outermost first; the
            runner names the deepest one in a learner's file (:meth:`in_files`).
    """

    TYPE: ClassVar[str] = "raised"
    exception: str
    message: str
    where: str = ""
    frames: tuple[str, ...] = ()

    @classmethod
    def from_wire(cls, data: dict) -> "Raised":
        return cls(exception=data["exception"], message=data["message"], where=data.get("where", ""),
                   frames=tuple(str(frame) for frame in data.get("frames", ())))

    def in_files(self, paths) -> "Raised":
        """This exception told at the deepest frame in one of ``paths`` (a learner's own files), the
        innermost frame (torch's, say) kept only as context: ``engine/model.py:57 in your file; raised
        in functional.py:2615``. Unchanged when no frame is in those files."""
        wanted = set(paths)
        for frame in reversed(self.frames):
            path, _, line = frame.rpartition(":")
            if path in wanted:
                innermost = self.where in ("", f"{path.rsplit('/', 1)[-1]}:{line}")
                return replace(self, where=f"{frame} in your file" + ("" if innermost else f"; raised in {self.where}"))
        return self

    @property
    def sentence(self) -> str:
        where = f" ({self.where})" if self.where else ""
        return f"{self.exception}: {self.message}{where}"


@dataclass(frozen=True)
class SideResult(Message):
    """How one side ended.

    Attributes:
        status: ``ok`` (the check measured), ``error`` (the subject raised or
            crashed, or the tree could not be built) or ``timeout``.
        observed: the measurement's observation (status ok only).
        evidence: the measurement's evidence (status ok only); records: its calls' records (``Measured``).
        error: one sentence saying what went wrong (other statuses).
        exception: the class name of what was raised, when something was.
        output: an excerpt of what the side printed.
        duration_s: wall time from fork to reaping, seconds.
        refused: what the subject tried that its confinement refused, one
            sentence each ("tried to write ~/x: refused").
        tampered: lines on the side's result pipe that the check did not
            write (no valid signature); a tampered side never measures.
        confined: whether the side ran confined (file system, at least).
        last_step: the last progress message the side sent ("" for none);
            a timeout names it as the step that hung.
        limits: how the side's processes and memory were really capped:
            ``processes`` ``cgroup`` (the kernel refused a fork past the
            limit) or ``counted`` (the warden stopped it past the limit),
            ``memory`` ``cgroup`` (its processes together), ``rlimit``
            (each process's address space) or ``none`` (a CUDA side
            without a cgroup); {} for a side that never started.
    """

    TYPE: ClassVar[str] = "side"
    status: str
    observed: Any = None
    evidence: list = field(default_factory=list)
    records: list = field(default_factory=list)
    error: str | None = None
    exception: str | None = None
    output: str = ""
    duration_s: float = 0.0
    refused: list = field(default_factory=list)
    tampered: int = 0
    confined: bool = False
    last_step: str = ""
    limits: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Answer(Message):
    """Every side of one request, by name.

    Attributes:
        job: the request's job.
        torch: the worker's torch version.
        device: the device the request named.
        duration_s: wall time of the whole request, seconds.
        sides: each side's :class:`SideResult`, in the request's order.
    """

    TYPE: ClassVar[str] = "answer"
    job: int
    torch: str
    device: str
    duration_s: float
    sides: dict[str, SideResult]

    def to_wire(self) -> dict:
        data = super().to_wire()
        data["sides"] = {name: side.to_wire() for name, side in self.sides.items()}
        return data

    @classmethod
    def from_wire(cls, data: dict) -> "Answer":
        return cls(job=data["job"], torch=data["torch"], device=data["device"], duration_s=data["duration_s"],
                   sides={name: SideResult.from_wire(side) for name, side in data["sides"].items()})


@dataclass(frozen=True)
class Refusal(Message):
    """The worker could not read a line as a request."""

    TYPE: ClassVar[str] = "refusal"
    error: str


_TYPES: dict[str, type[Message]] = {cls.TYPE: cls for cls in
                                    (Hello, Request, Progress, Attempted, Unjoined, Measured, Raised, SideResult,
                                     Answer, Refusal)}


def encode(message: Message) -> str:
    """One message as one line of JSON (no newline at the end)."""
    return json.dumps({"type": message.TYPE, **message.to_wire()})


def sign(key: bytes, message: Message) -> bytes:
    """One message as a signed line for a child's pipe: hex HMAC-SHA256 of the JSON, a space, the JSON, a newline."""
    payload = encode(message).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b" " + payload + b"\n"


def verify(key: bytes, line: bytes) -> Message:
    """The message a signed line from a side (without its newline) holds, once its shape is checked.

    Raises:
        ProtocolError: the signature is missing or wrong (a line the holder
            of ``key`` did not write), the rest is not a message, it is no
            message a side sends, or a field is not of its type's shape
            (:func:`shape_problem`).
    """
    mac, _, payload = line.partition(b" ")
    expected = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(mac, expected):
        raise ProtocolError("the line is not signed with this side's key")
    data = _json_message(payload)
    problem = shape_problem(data)
    if problem:
        raise ProtocolError(problem)
    return _from_wire(data)


def decode(line: str | bytes) -> Message:
    """The message one line of JSON holds.

    Raises:
        ProtocolError: the line is not JSON, names no known type, or lacks a
            field the type needs.
    """
    return _from_wire(_json_message(line))


def _json_message(line: str | bytes) -> dict:
    """The JSON object of one line that names a known message type."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"the line is not JSON ({exc})") from None
    except RecursionError:
        raise ProtocolError("the line nests deeper than JSON is read here") from None
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in _TYPES:
        raise ProtocolError(f"the line names no known message type ({(kind[:40] if isinstance(kind, str) else kind)!r})")
    return data


def _from_wire(data: dict) -> Message:
    kind = data["type"]
    try:
        return _TYPES[kind].from_wire(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"a {kind} message is missing or mistypes a field ({repr(exc)[:200]})") from None
