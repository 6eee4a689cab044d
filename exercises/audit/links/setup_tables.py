"""REGISTRATION's reading of the tensors a model makes when its cache is set up.

A model whose forward needs a set-up call first (gpt-fast's
``setup_caches(max_batch_size, max_seq_length)``, lit-llama's ``reset_cache``)
may make more than its KV cache there or in its first forward: gpt-fast's
set-up makes its rotary table ``freqs_cis`` and its ``causal_mask`` as plain
attributes, lit-llama's first forward its ``rope_cache`` and ``mask_cache``. They are absent from the model as the
factory built it, so the build-time reading (``Subject.attributes``) cannot
see them; they are read from the model as the forward runs with it, after the
audit's own set-up call.

Whether the model is right to keep them there is measured, not assumed, on a
copy of the set-up model:

- converted with ``.to(torch.float64)``, then called through the audit's
  interface (which runs the set-up call again): does the forward still run,
  and did each table follow (remade in the new dtype, or a bool mask, which a
  dtype change leaves alone) or stay behind;
- its parameters and buffers moved to another device (``meta`` under fake
  tensors, ``forward_after_move``, which REGISTRATION also runs on the build's plain tensors) while the tables stay
  where they were: does the forward still run.

A forward that breaks after the dtype change fails the link; otherwise the
tables are a warning naming them and what was measured (not in
``state_dict()``, left behind by ``.to()``, and whether the set-up call
remakes them).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from exercises.audit.adapter import Forward, _cut_loose, plain_attributes
from exercises.audit.measure import mode
from exercises.audit.subject import Subject
from exercises.outcome import first_line


@dataclass
class SetupTables:
    """What the set-up call made and how it behaves when the model moves.

    Attributes:
        setup: the set-up method's name ("setup_caches").
        tables: [(where, tensor)] plain tensor attributes present as the forward runs that were not
            tensors when the factory returned the model.
        dtype_move: None when the forward runs after ``.to(torch.float64)``, else what it raised ("not
            measured: ..." when the move could not be made).
        followed: the tables whose dtype follows the model's after that move (remade, or bool).
        remade: the tables the set-up call made anew after the move.
        device_move: None when the forward runs with the parameters on another device, else what happened
            ("not measured: ..." likewise).
    """

    setup: str
    tables: list = field(default_factory=list)
    dtype_move: str | None = None
    followed: list = field(default_factory=list)
    remade: list = field(default_factory=list)
    device_move: str | None = None

    @property
    def names(self) -> str:
        names = [where for where, _ in self.tables]
        return " and ".join(names) if len(names) <= 2 else f"{names[0]}, {names[1]} and {len(names) - 2} more"

    @property
    def broken(self) -> bool:
        """Whether the forward was measured breaking after ``.to(torch.float64)``."""
        return _measured_failure(self.dtype_move)

    @property
    def device_broken(self) -> bool:
        """Whether the forward was measured breaking with the parameters on another device."""
        return _measured_failure(self.device_move)


def _measured_failure(move: str | None) -> bool:
    return move is not None and not move.startswith("not measured")


def _outcome(move: str | None) -> str:
    """A move's evidence cell: the forward runs, breaks (how), or the move was not measured (why)."""
    return "the forward runs" if move is None else move if not _measured_failure(move) else f"the forward {move}"


def made_by_setup(s: Subject) -> list[tuple[str, torch.Tensor]]:
    """The plain tensor attributes the model holds as its forward runs that it did not hold as built: only
    for a model whose interface has a set-up call (``Interface.setup``); a tensor a plain forward stores on
    a module (an attention map kept for plotting) is not part of the model."""
    if s.forward.interface.setup is None:
        return []
    built = {where for where, value in s.attributes if isinstance(value, torch.Tensor)}
    return [(where, value) for where, value in plain_attributes(s.model)
            if isinstance(value, torch.Tensor) and where not in built]


def measure(s: Subject) -> SetupTables | None:
    """The tables the set-up call made and the two moves measured on copies; None when it made none."""
    tables = made_by_setup(s)
    if not tables:
        return None
    found = SetupTables(s.forward.interface.setup, tables)
    ids = s.xs[:1, :8]
    _cut_loose(s.model)  # a KV cache an earlier forward wrote a graph into cannot be deep-copied
    found.device_move = forward_after_move(s, tables)
    try:
        twin = copy.deepcopy(s.model).to(torch.float64)
    except Exception as exc:
        found.dtype_move = f"not measured: copying the model raised {type(exc).__name__}"
        return found
    before = {where: id(attribute_at(twin, where)) for where, _ in tables}
    try:
        with mode(twin, False), torch.no_grad():
            Forward(twin, s.forward.interface)(ids)
    except Exception as exc:
        found.dtype_move = f"raises {first_line(exc, limit=160)}"
    for where, _ in tables:
        value = attribute_at(twin, where)
        if not isinstance(value, torch.Tensor):
            continue
        if id(value) != before[where]:
            found.remade.append(where)
        if value.dtype == torch.bool or value.dtype in (torch.float64, torch.complex128):
            found.followed.append(where)
    return found


def attribute_at(model: nn.Module, where: str):
    """The attribute at dotted path ``where`` ("layers.0.attn.mask") of ``model``; None where there is none."""
    owner, _, attr = where.rpartition(".")
    try:
        return getattr(model.get_submodule(owner) if owner else model, attr)
    except AttributeError:
        return None


def forward_after_move(s: Subject, stayed: list[tuple[str, torch.Tensor]]) -> str | None:
    """Whether the model still runs once its parameters and buffers are on another device while its plain
    tensors ``stayed`` behind: None when it does (the model reconciles them itself, as modded-nanogpt's
    rotary ``type_as(self.inv_freq)`` and ``.to(x.device)`` do), else what happened, in words.

    Measured without a second device: a copy of the model gets fake tensors (``FakeTensorMode``: shapes,
    dtypes and devices, no data) on the ``meta`` device for every parameter and buffer, and runs one forward
    on fake ids there; a plain attribute, a real CPU tensor, joins the computation as a fake CPU tensor, so
    an operation mixing it with the moved tensors raises a device mismatch, as it would on a GPU. Any other
    exception is the fake tensors' limit, not the model's: "not measured".
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        twin = copy.deepcopy(s.model)
    except Exception as exc:
        return f"not measured: copying the model raised {type(exc).__name__}"
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with fake:
            for m in twin.modules():
                for n, p in list(m._parameters.items()):
                    if p is not None:
                        m._parameters[n] = nn.Parameter(fake.from_tensor(p.detach().to("meta")),
                                                        requires_grad=p.requires_grad)
                for n, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[n] = fake.from_tensor(b.to("meta"))
            ids = fake.from_tensor(s.xs[:1, :4].to("meta"))
            with mode(twin, False), torch.no_grad():
                Forward(twin, s.forward.interface)(ids)
    except Exception as exc:
        said = first_line(exc, with_type=False, limit=160)
        if "device" in said.lower():
            return _left_behind(exc, stayed)
        return f"not measured: the forward under fake tensors raised {type(exc).__name__}" + \
            (f": {said}" if said else "")
    return None


def _left_behind(exc: Exception, stayed: list[tuple[str, torch.Tensor]]) -> str:
    """A forward that failed on a device mismatch once the weights moved, in the user's terms: which plain
    tensors stayed where they were made, then the exception's class as secondary evidence. The exception's
    message is left out: it names ``meta``, the fake device of the measurement, which the user never chose."""
    where = sorted({str(t.device) for _, t in stayed}) or ["its first device"]
    names = [name for name, _ in stayed]
    what = (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]) if names else \
        "a plain tensor"
    return f"fails: {what} stayed on {' and '.join(where)} while the weights moved ({type(exc).__name__})"


def rows(found: SetupTables) -> list[list[str]]:
    """The evidence rows: what was made, and each move's outcome."""
    kinds = "; ".join(f"{where}: a {str(t.dtype).replace('torch.', '')} tensor {tuple(t.shape)}"
                      for where, t in found.tables[:3])
    stayed = [where for where, _ in found.tables if where not in found.followed]
    return [[f"made after the build ({found.setup}(...), the first forward) as plain attributes", kinds],
            [f"after .to(torch.float64) and {found.setup} again",
             _outcome(found.dtype_move)
             + (f"; remade: {', '.join(found.remade)}" if found.remade else f"; {found.setup} remade none of them")
             + (f"; left in their dtype: {', '.join(stayed)}" if stayed else "")],
            [f"after {found.setup}, parameters and buffers moved to another device",
             _outcome(found.device_move)]]


def warning(found: SetupTables) -> str:
    """Why the tables are a warning, in one sentence built from what was measured."""
    remakes = (f"{found.setup} remakes them on its next call" if len(found.remade) == len(found.tables) else
               f"{found.setup} does not remake them once its caches are large enough")
    device = ("" if not found.device_broken else
              f"; moved to another device after {found.setup}, the forward breaks on them "
              f"({found.device_move.removeprefix('fails: ').split(' while ')[0][:80]}), so "
              "set the model up after moving it")
    return (f"{found.names}, made after the build (by {found.setup}(...) or the first forward), are plain tensors: not in state_dict(), and .to() leaves "
            f"them behind; {remakes}{device}; register_buffer(name, tensor, persistent=False) moves them with the "
            "model")
