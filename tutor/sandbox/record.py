"""The whole output of a snippet module, recorded while a check calls it (edit mode's sides).

A fix is judged on everything the faulted code hands back, not only on what
the check grades: a repair that bans one token more than asked, or writes
into an argument it should only read, keeps the graded observation and may
keep the check's evidence, yet changes the function's output. So when an
edit-mode run's learner file is a module of ``exercises/snippets/``
(:func:`record_path`, which the runner puts on the request), every side's
check child imports that module from its private copy *before* the check's
module (a check's ``from exercises.snippets.x import f`` then gets the
wrapped ``f``) and wraps its functions and the methods of its classes
(:meth:`Recorder.install`). The first :data:`CALLS` outermost calls of each
are recorded: the value returned (or the class of what it raised), every
tensor, array or module argument after the call (an in-place write shows),
and for a method its object after the call — each as a bounded table (:func:`rows`): a small tensor entry by
entry, a larger one as its shape and dtype then at most :data:`SLICES` slice
rows of smallest, largest, Σ|x|, Σ (i + 1)·|x| and Σ|x| over x < 0,
a module as one row per parameter and buffer. The tables travel beside the
evidence (``Measured.records``) and the verdict compares them across sides
like evidence (``tutor.model.evidence.first_record_difference``).

Plain Python over the methods tensors and arrays share: this module imports
no torch (the runner reads :func:`record_path` from it), only the child that
calls :meth:`Recorder.install` has torch loaded.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
import threading
from typing import Any

from exercises.outcome import RECORD_RAISED, RECORD_RETURNED, fmt

#: Where the modules whose whole output is recorded live (a side's file replacing one turns recording on).
SNIPPETS = "exercises/snippets/"
#: The calls of each function or method recorded (the first ones; a call inside a recorded one is not).
CALLS = 3
#: Up to this many entries a tensor is recorded entry by entry; a larger one by slices.
ENTRIES = 32
#: The most slice rows of a larger tensor (consecutive indices of its first axis grouped to fit).
SLICES = 8
#: The most parameters and buffers of a module, items of a list, tuple or dict, attributes of an object.
ITEMS = 24
#: How deep lists, dicts and objects inside an output are followed.
DEPTH = 3
#: The most bytes of JSON the records of one side may take (beside the evidence, on one pipe line).
MAX_RECORD_BYTES = 24 * 1024
#: Methods recorded besides the public ones (other dunders are the object's plumbing).
DUNDERS = ("__init__", "__call__", "__getitem__")
#: The columns of a slice row and of a module's parameter row.
SLICE_COLUMNS = ["slice", "smallest", "largest", "Σ|x|", "Σ (i + 1)·|x|", "Σ|x| over x < 0"]
MODULE_COLUMNS = ["parameter", *SLICE_COLUMNS[1:], "shape", "dtype", "kind", "Σ|grad|"]


def record_path(sides) -> str:
    """The snippet module a run records: the file a side replaces (a learner's copy), when it is one of
    :data:`SNIPPETS`; "" for a run that records nothing (a plain run, an engine file)."""
    for side in sides:
        for path, _ in side.files:
            if path.startswith(SNIPPETS) and path.endswith(".py") and "/" not in path[len(SNIPPETS):] \
                    and not path.endswith("__init__.py"):
                return path
    return ""


class Recorder:
    """Wraps one module's functions and methods and keeps the tables their first calls give.

    Attributes:
        tables: the records, evidence tables (``exercises.outcome.table``'s shape), in call order.
    """

    def __init__(self, budget: int = MAX_RECORD_BYTES) -> None:
        self.tables: list[dict] = []
        self.budget = budget
        self._calls: dict[str, int] = {}
        self._size = 0
        self._full = False
        self._inside = threading.local()

    def install(self, path: str) -> Any:
        """Import the module at ``path`` (``exercises/snippets/x.py``, from the first entry of ``sys.path``:
        the side's private copy) and wrap what it defines; the module."""
        name = path[:-len(".py")].replace("/", ".")
        module = importlib.import_module(name)
        for attr, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue  # imported from elsewhere (torch, F, another module's helper)
            if inspect.isfunction(value):
                setattr(module, attr, self.wrap(value, attr, method=False))
            elif inspect.isclass(value) and value.__qualname__ == attr:
                self._wrap_class(value)
        return module

    def _wrap_class(self, cls: type) -> None:
        for attr, value in list(vars(cls).items()):
            if attr.startswith("__") and attr not in DUNDERS:
                continue
            name = f"{cls.__name__}.{attr}"
            if isinstance(value, staticmethod):
                setattr(cls, attr, staticmethod(self.wrap(value.__func__, name, method=False)))
            elif isinstance(value, classmethod):
                setattr(cls, attr, classmethod(self.wrap(value.__func__, name, method=False, skip=1)))
            elif inspect.isfunction(value):
                setattr(cls, attr, self.wrap(value, name, method=True))

    def wrap(self, function, name: str, method: bool, skip: int = 0):
        """``function`` recording its first :data:`CALLS` outermost calls under ``name``.

        Args:
            method: its first argument is the object (recorded after the call as ``self``).
            skip: leading arguments never recorded (a classmethod's class).
        """
        try:
            names = [p.name for p in inspect.signature(function).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        recorder, inside = self, self._inside

        @functools.wraps(function)
        def recorded(*args, **kwargs):
            if getattr(inside, "depth", 0) or recorder._full or recorder._calls.get(name, 0) >= CALLS \
                    or _compiling():
                return function(*args, **kwargs)
            inside.depth = 1
            try:
                result = function(*args, **kwargs)
            except Exception as exc:  # what it raised is its output too (and what it wrote before raising)
                inside.depth = 0
                recorder._note(name, names, args, kwargs, Raised(type(exc).__name__), method, skip)
                raise
            finally:
                inside.depth = 0
            recorder._note(name, names, args, kwargs, result, method, skip)
            return result
        return recorded

    def _note(self, name: str, names: list, args: tuple, kwargs: dict, result: Any, method: bool,
              skip: int) -> None:
        """Record one call (never raises: what cannot be read is recorded by its type's name)."""
        count = self._calls[name] = self._calls.get(name, 0) + 1
        parts = [("raised" if isinstance(result, Raised) else "returned", result)]
        for i, value in enumerate(args[skip:], start=skip):
            label = "self" if method and i == 0 else names[i] if i < len(names) else f"argument {i + 1}"
            if label == "self" or _data(value):
                parts.append((label, value))
        parts.extend((key, value) for key, value in kwargs.items() if _data(value))
        for label, value in parts:
            what = {"returned": RECORD_RETURNED, "raised": RECORD_RAISED}.get(label, f"{label} after the call")
            try:
                found = rows(label, value)
            except Exception as exc:  # an output no summary reads: its type, and why
                found = [[label, "unrecordable", type(value).__name__, type(exc).__name__]]
            table = {"type": "table", "title": f"{name}, call {count}: {what}",
                     "columns": _columns(value, found), "rows": found}
            size = len(json.dumps(table))
            if self._size + size > self.budget:
                self._full = True
                self.tables.append(_cut(f"{name}, call {count}", self.budget))
                return
            self._size += size
            self.tables.append(table)

    def fit(self, room: int) -> list[dict]:
        """The records, the last ones dropped until their JSON takes at most ``room`` bytes."""
        kept, size = [], 0
        for table in self.tables:
            size += len(json.dumps(table)) + 2
            if size > room:
                kept.append(_cut(table["title"], room))
                break
            kept.append(table)
        return kept


def _cut(record: str, limit: int) -> dict:
    """The table that stands for records left out past ``limit`` bytes, from ``record`` on."""
    return {"type": "table", "title": "records cut", "columns": ["record", "bytes"], "rows": [[record, f"past {limit}"]]}


class Raised(str):
    """The class name of the exception a recorded call raised, recorded in place of a value returned."""


def _compiling() -> bool:
    """Whether torch.compile is tracing this call (a record would break its graph): then nothing is recorded."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.compiler.is_compiling())
    except AttributeError:
        return False


def _tensor(value) -> bool:
    return hasattr(value, "detach") and hasattr(value, "dtype") and hasattr(value, "shape")


def _array(value) -> bool:
    return not _tensor(value) and hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "astype")


def _module(value) -> bool:
    return hasattr(value, "named_parameters") and hasattr(value, "named_buffers")


def _data(value, depth: int = 0) -> bool:
    """Whether ``value`` carries data an output is made of: a tensor, an array, a module, or a list, tuple
    or dict holding one. Such an argument is recorded after the call (a call can write into it), and such
    an attribute is an object's recorded state."""
    if _tensor(value) or _array(value) or _module(value):
        return True
    if depth < DEPTH and isinstance(value, (list, tuple)):
        return any(_data(v, depth + 1) for v in value[:ITEMS])
    if depth < DEPTH and isinstance(value, dict):
        return any(_data(v, depth + 1) for v in list(value.values())[:ITEMS])
    return False


def _columns(value: Any, found: list[list]) -> list[str]:
    """The columns of one record: a larger tensor's slice summary, a module's parameters, else numbered entries."""
    if _module(value):
        return list(MODULE_COLUMNS)
    if (_tensor(value) and value.numel() > ENTRIES) or (_array(value) and value.size > ENTRIES):
        return list(SLICE_COLUMNS)
    return ["output", *(f"col {c}" for c in range(max((len(row) for row in found), default=1) - 1))]


def rows(label: str, value: Any, depth: int = 0) -> list[list]:
    """``value`` as bounded table rows, each starting with the name of what it shows (``logits[0]``)."""
    if isinstance(value, Raised):
        return [[label, "raised", str(value)]]
    if value is None or isinstance(value, (bool, int, float)):
        return [[label, fmt(value)]]
    if isinstance(value, str):
        return [[label, value[:80]]]
    if _tensor(value):
        return _tensor_rows(label, value.detach())
    if _array(value):
        return _array_rows(label, value)
    if depth >= DEPTH:
        return [[label, type(value).__name__]]
    if _module(value):
        return _module_rows(label, value)
    if isinstance(value, (list, tuple)):
        # callers unpack or index either alike: a list returned where the clean code returns a tuple
        # (or a namedtuple, a torch.Size) is the same output
        found = [[label, "sequence", len(value)]]
        for i, item in enumerate(value[:ITEMS]):
            found.extend(rows(f"{label}[{i}]", item, depth + 1))
        return found
    if isinstance(value, dict):
        found = [[label, "mapping", len(value)]]
        for i, (key, item) in enumerate(list(value.items())[:ITEMS]):
            shown = key if isinstance(key, (str, int, float, bool)) else f"#{i}"
            found.extend(rows(f"{label}[{shown!r}]", item, depth + 1))
        return found
    if hasattr(value, "item") and callable(value.item) and not hasattr(value, "__dict__"):  # numpy scalars
        return [[label, fmt(value.item())]]
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict):
        return [[label, type(value).__name__]]
    found = [[label, type(value).__name__]]
    # the data an object carries (tensors, arrays, modules, containers of them), not its bookkeeping:
    # a counter a repair adds, public or private, changes nothing the object hands out
    public = [(k, v) for k, v in attributes.items() if isinstance(k, str) and not k.startswith("_") and _data(v)]
    for key, item in public[:ITEMS]:
        found.extend(rows(f"{label}.{key}", item, depth + 1))
    return found


def _tensor_rows(label: str, t) -> list[list]:
    """A tensor: its shape and dtype, then its entries (small) or at most :data:`SLICES` slice rows."""
    head = [label, f"shape {fmt(tuple(t.shape))}", str(t.dtype)]
    if t.is_complex() or str(t.layout) != "torch.strided" or t.device.type == "meta":
        return [head + ["unrecordable"]]
    t = t.cpu()
    if t.numel() <= ENTRIES:  # float16, bfloat16 and float8 entries read through float64
        return [head] + _entries(label, (t.double() if t.is_floating_point() else t).tolist())
    return [head] + _slices(label, t.double())


def _array_rows(label: str, a) -> list[list]:
    """A numpy array, as :func:`_tensor_rows` reads a tensor."""
    head = [label, f"shape {fmt(tuple(a.shape))}", str(a.dtype)]
    if a.dtype.kind not in "biuf":
        return [head + ["unrecordable"]]
    if a.size <= ENTRIES:
        return [head] + _entries(label, a.tolist())
    return [head] + _slices(label, a.astype("float64"))


def _entries(label: str, values: Any, index: tuple = ()) -> list[list]:
    """Every entry: one row per index of the axes before the last (``logits[0]``), one cell per entry of the last."""
    name = f"{label}[{', '.join(map(str, index))}]" if index else label
    if not isinstance(values, list):
        return [[name, fmt(values)]]
    if not values or not isinstance(values[0], list):
        return [[name, *(fmt(v) for v in values)]]
    return [row for i, part in enumerate(values) for row in _entries(label, part, index + (i,))]


def _slices(label: str, t) -> list[list]:
    """At most :data:`SLICES` rows of :func:`_stats` over consecutive indices of the first axis of a float64
    tensor or array."""
    first = t.shape[0] if len(t.shape) else 1
    flat = t.reshape(first, -1)
    step = -(-first // SLICES)
    found = []
    for start in range(0, first, step):
        stop = min(start + step, first)
        name = f"{label}[{start}]" if stop - start == 1 else f"{label}[{start}:{stop}]"
        found.append([name, *_stats(flat[start:stop].reshape(-1))])
    return found


def _stats(g) -> list:
    """A flat float64 tensor or array (the same methods serve both): smallest, largest, Σ|x|,
    Σ (i + 1)·|x| (entries moved to other places change it) and Σ|x| over x < 0 (signs flipped change it;
    unlike a count of negatives, an entry near 0 that another order of float operations leaves at -1e-9
    instead of +1e-9 does not). Σ (i + 1)·|x_i| is (n + 1)·S − Σ_k c_k, with S = Σ|x| and c the running
    sums; the negative part is (S − Σx) / 2."""
    n = g.shape[0]
    if n == 0:
        return ["empty", "", "", "", 0]
    magnitude = abs(g)
    total = float(magnitude.sum())
    weighted = (n + 1) * total - float(magnitude.cumsum(0).sum())
    return [fmt(float(g.min())), fmt(float(g.max())), fmt(total), fmt(weighted),
            fmt(max(0.0, (total - float(g.sum())) / 2))]


def _module_rows(label: str, module) -> list[list]:
    """A module: its class and how many of its modules train, then a row per parameter and buffer (at most
    :data:`ITEMS`): shape, requires_grad, and its slice summary over the whole tensor."""
    modules = list(module.modules())
    found = [[label, type(module).__name__, f"{sum(m.training for m in modules)} of {len(modules)} training"]]
    named = [(n, p, True) for n, p in module.named_parameters()] + [(n, b, False) for n, b in module.named_buffers()]
    for name, tensor, parameter in named[:ITEMS]:
        t = tensor.detach().cpu()
        grad = getattr(tensor, "grad", None) if parameter else None
        stats = _stats(t.double().reshape(-1)) if not t.is_complex() else ["complex", "", "", "", 0]
        found.append([f"{label}.{name}", *stats, fmt(tuple(t.shape)), str(t.dtype),
                      f"requires_grad {tensor.requires_grad}" if parameter else "buffer",
                      "no grad" if grad is None else fmt(float(abs(grad.detach().double()).sum()))])
    if len(named) > ITEMS:
        found.append([label, f"{len(named) - ITEMS} more parameters and buffers"])
    return found
