"""How the audit calls a model it did not write.

Seed 004, "The final checklist": every instrument relies on one contract,
(B, T) int64 ids in, (B, T, V) logits out. Models in the wild meet it in a
few ways, and ``detect`` finds which:

- **nanoGPT style**: ``forward(idx, targets=None) -> (logits, loss)``, only
  the last position's logits without targets; ``generate(idx,
  max_new_tokens, temperature=1.0, top_k=None)``.
- **Hugging Face style**: ``forward(input_ids, past_key_values=None,
  attention_mask=None, ..., labels=None, use_cache=None)`` returning an
  object with ``.logits``, ``.loss`` and ``.past_key_values``. Arguments go
  by keyword; ``labels`` are the inputs themselves, shifted inside the model.
- **engine style**: ``forward(idx, targets=None, cache=None)`` with
  ``new_cache(B)`` handing out the KV cache (the tutor's own GPT).
- **own cache**: ``forward(idx, ..., start_pos=None)`` keeping its keys and
  values inside the model (as Meta's LLaMA does); ``start_pos`` is the
  position of the chunk's first token.
- **positions**: ``forward(idx, input_pos)`` with a cache the model sets up
  itself: litgpt's ``set_kv_cache``, lit-llama's ``reset_cache`` (caches
  made on first use), gpt-fast's ``setup_caches(max_batch_size,
  max_seq_length)``, which must run before any forward (every call then
  gets ``input_pos``, and a batch smaller than the caches is padded).
- **plain**: ``forward(idx) -> logits``, or a tuple or object holding them.
- **one token per forward**: ``forward(tokens, start_pos)`` (or
  ``input_pos``) that takes a single token per call, keeping its keys and
  values in its cache: each token goes in at its own position and the
  logits are concatenated.
- **the factory's own**: a dict's ``forward``, a function ``(model, idx)``
  returning the logits, drives any other interface.

A factory may return the model, ``(model, optimizer)``, or a dict (see
``FACTORY_KEYS``). ``Forward`` wraps the model so every link calls it one
way: full logits, logits with the model's own loss, a cached continuation.
"""

from __future__ import annotations

import inspect
import reprlib
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from exercises.outcome import first_line

#: What a factory's dict may hold: the model (required) and what the links use.
FACTORY_KEYS = ("model", "optimizer", "tokenizer", "pad_id", "train_step", "evaluate", "scheduler", "scaler",
                "forward", "label_smoothing")
#: Methods that set up a cache the forward then fills at ``input_pos``, in the order they are looked for:
#: litgpt's, gpt-fast's (required before any forward), another spelling of litgpt's, lit-llama's (it only
#: drops caches made on first use).
CACHE_SETUPS = ("set_kv_cache", "setup_caches", "build_kv_cache", "reset_cache")
#: The code base each set-up method is named after, for the report.
POSITION_STYLES = {"set_kv_cache": "litgpt", "setup_caches": "gpt-fast", "build_kv_cache": "litgpt",
                   "reset_cache": "lit-llama"}
#: How a cache set-up method's parameters are read: the batch rows, and the positions it must hold.
ROWS_NAMES = ("batch_size", "max_batch_size", "B", "bsz", "max_batch")
LENGTH_NAMES = ("max_seq_length", "max_seq_len", "seq_len", "max_length", "length")
#: Keywords a forward may name its targets with, in the order they are tried.
TARGET_NAMES = ("targets", "target", "labels", "y")
#: Config flags that declare the output head tied to the token table.
TIE_FLAGS = ("tie_word_embeddings", "tie_weights", "tie_embeddings", "weight_tying")
#: Module names that mark the token table and the output head among several candidates.
TABLE_NAMES = ("wte", "tok_emb", "token_embedding", "tok_embeddings", "embed_tokens", "word_embeddings",
               "token_embedding_table", "embedding")
HEAD_NAMES = ("lm_head", "head", "output", "out_head", "unembed")


class ContractError(Exception):
    """The model does not meet the (B, T) -> (B, T, V) contract; the message says how, in one sentence."""


# ---------------------------------------------------------------------------
# What a forward returned


def _is_cache(value: Any) -> bool:
    """Whether a value looks like a KV cache handed back by a forward: a Hugging Face ``Cache``, or a
    list/tuple of per-layer entries (not tensors of logits)."""
    if value is None or isinstance(value, torch.Tensor):
        return False
    return callable(getattr(value, "get_seq_length", None)) or isinstance(value, (tuple, list))


def split_output(out: Any) -> tuple[torch.Tensor | None, torch.Tensor | None, Any]:
    """(logits, loss, cache) from whatever a forward returned; None where absent.

    A tensor with two or more axes is the logits; a 0-dim tensor is a loss
    alone (nanochat and x-transformers' ``AutoregressiveWrapper`` return only
    the loss when they compute one). In a tuple or list the logits are the
    first tensor with two or more axes, the loss the first 0-dim tensor, and
    the cache the first item that is neither (``(logits, loss, present)``).
    A mapping or an object is read by key or attribute: ``logits``, ``loss``,
    and ``past_key_values`` or ``cache`` (transformers 5).
    """
    if isinstance(out, torch.Tensor):
        return (None, out, None) if out.dim() == 0 else (out, None, None)
    if isinstance(out, (tuple, list)):
        tensors = [t for t in out if isinstance(t, torch.Tensor)]
        logits = next((t for t in tensors if t.dim() >= 2), None)
        loss = next((t for t in tensors if t.dim() == 0), None)
        state = next((v for v in out if _is_cache(v)), None)
        return logits, loss, state
    get = out.get if isinstance(out, Mapping) else (lambda key: getattr(out, key, None))
    logits, loss = get("logits"), get("loss")
    state = get("past_key_values")
    if state is None:
        state = get("cache")
    return (logits if isinstance(logits, torch.Tensor) else None,
            loss if isinstance(loss, torch.Tensor) else None, state)


def logits_of(out: Any) -> torch.Tensor:
    """The logits in a forward's output (see ``split_output``).

    Raises:
        TypeError: the output holds no logits.
    """
    logits = split_output(out)[0]
    if logits is None:
        what = "only a loss (a 0-dim tensor)" if isinstance(out, torch.Tensor) else type(out).__name__
        raise TypeError(f"the forward returned {what}, which holds no logits tensor")
    return logits


# ---------------------------------------------------------------------------
# The interface


def signature_of(fn: Any) -> inspect.Signature | None:
    """The signature of a callable, looking through decorators that hide it behind ``(*args, **kwargs)``
    without ``functools.wraps`` (x-transformers' ``eval_decorator``): the function their closure holds.
    Below a bound method, each function found is unbound, so its first parameter is the instance, whatever
    it is called (PaLM-pytorch's ``inner(model, *args, **kwargs)``), and is dropped."""
    bound, below = getattr(fn, "__self__", None) is not None and inspect.ismethod(fn), False
    for _ in range(4):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        first = next(iter(sig.parameters.values()), None)
        if bound and below and first is not None and first.kind in (first.POSITIONAL_ONLY,
                                                                    first.POSITIONAL_OR_KEYWORD):
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        kinds = {p.kind for p in sig.parameters.values() if p.name != "self"}
        if kinds - {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
            return sig
        inner = getattr(fn, "__func__", fn)
        cells = [c.cell_contents for c in (getattr(inner, "__closure__", None) or ()) if _filled(c)]
        wrapped = next((c for c in cells if inspect.isfunction(c)), None)
        if wrapped is None:
            return sig
        fn, below = wrapped, True
    return sig


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def parameters_of(fn: Any) -> tuple[list[str], bool]:
    """(parameter names of a callable, in order, without self; whether it takes **kwargs)."""
    sig = signature_of(fn)
    if sig is None:
        return [], True
    names = [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if names and names[0] == "self":  # the unbound function a decorator's closure held
        names = names[1:]
    return names, any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def _required(fn: Any) -> list[str]:
    """Every parameter of a callable that has no default, by name."""
    sig = signature_of(fn)
    return [] if sig is None else [p.name for p in sig.parameters.values()
                                   if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def required_of(fn: Any) -> list[str]:
    """The parameters of a callable that have no default (after the first, which takes the ids)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return [p.name for p in params[1:] if p.default is p.empty]


def library_generate(model: nn.Module) -> bool:
    """Whether ``model.generate`` is a library's that never crops the context (transformers,
    TransformerLens): the position table's length is a hard limit there, by design."""
    return hugging_face(model) or type(model).__module__.startswith("transformer_lens")


def hugging_face(model: nn.Module) -> bool:
    """Whether the model is a ``transformers.PreTrainedModel`` (read from its classes, no import)."""
    return any(c.__name__ == "PreTrainedModel" and c.__module__.startswith("transformers")
               for c in type(model).__mro__)


@dataclass(frozen=True)
class Interface:
    """How a model is called. Every argument after the ids goes by keyword, read from the signature.

    Attributes:
        style: "nanoGPT", "Hugging Face", "engine", "own cache", "litgpt",
            "loss wrapper" or "plain".
        full_logits: "plain" (``model(idx)`` gives (B, T, V)) or "targets"
            (only a call with targets does: nanoGPT's last-position shortcut).
        targets_kw: the keyword targets are passed by (targets, target,
            labels, y), or None: the forward takes none, and the audit
            computes the loss from the logits.
        takes_targets: whether the forward accepts targets.
        labels_shifted: the targets are the inputs and the model shifts them
            (Hugging Face's ``labels``; an ``AutoregressiveWrapper``).
        cache: "engine", "past_key_values", "cache" (transformers 5's keyword),
            "start_pos", "input_pos" (litgpt), "past_kv_cache" (TransformerLens),
            "generate" or None.
        forward_params: the forward's parameter names.
        fixed: keyword arguments every call gets (Meta's required ``start_pos=0``).
        loss_only: with targets the forward returns the loss alone; the
            logits come from a call without them.
        logits_from: the child module that gives the logits when the model's
            own forward returns only a loss ("net" for an AutoregressiveWrapper).
        setup: the method that sets up the ``input_pos`` cache (``CACHE_SETUPS``), or None.
        positions_always: every call needs the cache set up and ``input_pos``
            (gpt-fast: its forward reads its mask and rotary table at them).
        length: the positions a cache is set up for (the model's block_size, at least T).
        through: the factory's ``forward(model, idx)``, which replaces the model's own call.
        one_token: the position keyword ("start_pos" or "input_pos") of a forward
            that takes one token per call; None otherwise.
    """

    style: str
    full_logits: str
    targets_kw: str | None
    takes_targets: bool
    labels_shifted: bool
    cache: str | None
    forward_params: tuple[str, ...]
    fixed: tuple = ()
    loss_only: bool = False
    logits_from: str | None = None
    setup: str | None = None
    positions_always: bool = False
    length: int = 0
    through: Any = None
    one_token: str | None = None

    @property
    def hf(self) -> bool:
        return self.style == "Hugging Face"


def _cut_loose(model: nn.Module) -> None:
    """Detach, in place, every buffer and plain tensor attribute an earlier forward wrote a graph into (a
    KV cache filled in place), so a later backward does not reach into that forward's freed graph."""
    for module in model.modules():
        for value in [*module._buffers.values(), *vars(module).values()]:
            if isinstance(value, torch.Tensor) and value.grad_fn is not None and value._base is None:
                value.detach_()


#: The rows each model's caches were last set up for by ``open_cache`` (gpt-fast keeps larger caches as they are).
_CACHE_ROWS: "weakref.WeakKeyDictionary[nn.Module, int]" = weakref.WeakKeyDictionary()


def open_cache(model: nn.Module, interface: Interface, rows: int, device: torch.device) -> int:
    """Set up the model's ``input_pos`` cache for ``rows`` sequences through its own method, the arguments
    read from its parameters' names (``ROWS_NAMES``; ``LENGTH_NAMES`` only where the method has no default
    for it; ``device``); return the rows the caches now hold: more than ``rows`` where a method keeps
    larger caches (read from the model's attribute named as the rows parameter, as gpt-fast's
    ``max_batch_size``), and the caller pads. Tensors an earlier forward wrote a graph into are cut loose
    from it (``_cut_loose``)."""
    method = getattr(model, interface.setup)
    names, _ = parameters_of(method)
    required = set(_required(method))
    kwargs = {}
    for name in names:
        if name in ROWS_NAMES:
            kwargs[name] = max(rows, _CACHE_ROWS.get(model, 0)) if interface.positions_always else rows
        elif name in LENGTH_NAMES and interface.length and name in required:  # else the model's own default
            kwargs[name] = interface.length
        elif name == "device":
            kwargs[name] = device
    method(**kwargs)
    _cut_loose(model)
    rows_name = next((n for n in names if n in ROWS_NAMES), "")
    held = kwargs.get(rows_name, rows)
    kept = getattr(model, rows_name, None) if rows_name else None  # gpt-fast keeps larger caches as they are
    if isinstance(kept, int) and kept > held:
        held = kept
    if interface.positions_always:
        _CACHE_ROWS[model] = held
    return held


class Forward:
    """Calls a model through its ``Interface``; every link calls the model through this.

    Args:
        model: the module under audit.
        interface: how to call it (``detect``).
        description: one line for the report.
    """

    def __init__(self, model: nn.Module, interface: Interface, description: str = "") -> None:
        self.model, self.interface, self.description = model, interface, description

    @property
    def convention(self) -> str:
        """"plain" or "targets": how full (B, T, V) logits are obtained."""
        return self.interface.full_logits

    def call(self, idx: torch.Tensor, targets: torch.Tensor | None = None, **extra) -> Any:
        """The model's raw output for ids (B, T) and, if given, targets in the interface's convention.

        The ids go first (positionally: ``input_ids`` for Hugging Face by
        keyword); everything else by keyword. Targets go only where the
        forward names them; a loss wrapper gets the ids alone and scores them.
        """
        it = self.interface
        kwargs = {**dict(it.fixed), **extra}
        if it.through is not None:
            return it.through(self.model, idx)
        if it.positions_always:
            return self.at_positions(idx, kwargs)
        if it.one_token is not None:
            return self.token_by_token(idx, kwargs)
        if it.logits_from is not None:  # the wrapper's forward is the loss; its net gives the logits
            if targets is not None:
                return self.model(idx, **kwargs)
            return getattr(self.model, it.logits_from)(idx, **kwargs)
        if it.hf:
            kwargs["input_ids"] = idx
            if targets is not None:
                kwargs["labels"] = targets
            return self.model(**kwargs)
        if targets is not None and it.targets_kw is not None:
            kwargs[it.targets_kw] = targets
        return self.model(idx, **kwargs)

    def at_positions(self, idx: torch.Tensor, kwargs: dict) -> Any:
        """A call to a forward that needs its cache set up and ``input_pos`` every time (gpt-fast): a full
        forward (no ``input_pos`` given) sets the cache up afresh and goes at positions 0..T-1; a batch
        smaller than the caches is padded with copies of its first row, and only its own rows come back."""
        B, T = idx.shape
        if "input_pos" not in kwargs:
            rows = open_cache(self.model, self.interface, B, idx.device)
            kwargs["input_pos"] = torch.arange(T, device=idx.device)
        else:
            rows = _CACHE_ROWS.get(self.model, B)
        if rows > B:
            idx = torch.cat([idx, idx[:1].expand(rows - B, T)])
        out = self.model(idx, **kwargs)
        if rows <= B:
            return out
        if isinstance(out, torch.Tensor):
            return out[:B]
        return type(out)(v[:B] if isinstance(v, torch.Tensor) and v.dim() >= 2 else v for v in out) \
            if isinstance(out, (tuple, list)) else out

    def token_by_token(self, idx: torch.Tensor, kwargs: dict) -> torch.Tensor:
        """Logits (B, T, V) from a forward that takes one token per call: token t goes in at position t
        (``start_pos=t``, or ``input_pos`` as a one-element tensor), in order, so each reads the keys and
        values the ones before it left in the model's cache. Tensors an earlier call wrote a graph into
        (the cache) are cut loose from it first."""
        _cut_loose(self.model)
        key, logits = self.interface.one_token, []
        for t in range(idx.size(1)):
            position = t if key == "start_pos" else torch.tensor([t], device=idx.device)
            logits.append(logits_of(self.model(idx[:, t:t + 1], **{**kwargs, key: position})))
        return torch.cat(logits, dim=1)

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        """Full logits (B, T, V) for ids (B, T)."""
        if self.convention == "targets":
            return logits_of(self.call(idx, torch.zeros_like(idx)))
        return logits_of(self.call(idx))

    def labels(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """What the model is given as targets for inputs x and next tokens y: y, or x when it shifts."""
        return x if self.interface.labels_shifted else y

    def aligned(self, logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pairs (z (N, V), t (N,)) of logits and the target each is scored against, ignored (−100) ones out.

        With shifted labels, position t predicts labels[:, t + 1], so the last
        position has no target; otherwise position t predicts labels[:, t].
        """
        if self.interface.labels_shifted:
            logits, labels = logits[:, :-1], labels[:, 1:]
        z, t = logits.reshape(-1, logits.size(-1)), labels.reshape(-1)
        keep = t != -100
        return z[keep], t[keep]

    def logits_and_loss(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """(logits (B, T, V), the loss the model reports or None, the labels it was given) for inputs x, next tokens y."""
        labels = self.labels(x, y)
        logits, loss = self.logits_and_loss_with(x, labels)
        return logits, loss, labels

    def logits_and_loss_with(self, idx: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(logits (B, T, V), reported loss or None) for ids and labels already in the model's convention.

        A forward that returns only the loss when given targets is called
        twice: once for the loss, once without targets for the logits.
        """
        it = self.interface
        out = self.call(idx, labels) if it.takes_targets else self.call(idx)
        logits, loss, _ = split_output(out)
        if logits is None and (it.loss_only or it.logits_from):
            logits = logits_of(self.call(idx))
        if logits is None:
            raise TypeError(f"the forward returned {type(out).__name__}, which holds no logits tensor")
        return logits, loss

    def cross_entropy(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross entropy of the model's logits against the next tokens (nats per token, float32), whatever
        objective the model reports itself: label smoothing, an auxiliary loss or a lower precision change
        what it trains on, never what it predicts."""
        logits, _, labels = self.logits_and_loss(x, y)
        z, t = self.aligned(logits, labels)
        return nn.functional.cross_entropy(z.float(), t)

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss to train on: the model's own, else mean cross entropy of its logits (nats per token)."""
        it = self.interface
        if it.loss_only or it.logits_from:  # one call, the loss alone
            loss = split_output(self.call(x, self.labels(x, y)))[1]
            if loss is not None:
                return loss
        logits, loss, labels = self.logits_and_loss(x, y)
        if loss is None:
            z, t = self.aligned(logits, labels)
            loss = nn.functional.cross_entropy(z, t)
        return loss


#: Values supplied for a required argument after the ids, by name (Meta's Llama: ``forward(tokens, start_pos)``).
REQUIRED_DEFAULTS = {"start_pos": 0}


def detect(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor, block_size: int | None = None,
           through: Any = None) -> Forward:
    """Find how the model is called; return the Forward and its one-line description.

    Hugging Face style means a ``transformers.PreTrainedModel`` or a forward
    whose first parameter is ``input_ids``; a hand-written
    ``forward(idx, targets=None, past_key_values=None, use_cache=None)`` is
    nanoGPT style with a cache keyword. Targets go only by a keyword named
    like them (``TARGET_NAMES``), never by position: a second parameter such
    as x-transformers' ``return_embeddings`` or TransformerLens'
    ``return_type`` is a flag.

    Args:
        idx, targets: (B, T) int64 ids within the model's token table.
        block_size: the positions an ``input_pos`` cache is set up for (at least T).
        through: the factory's ``forward(model, idx)``, when it handed one.

    Raises:
        ContractError: no call gives logits (B, T, ·); the message names the shape.
        Undrivable: the first call raised; the message names the call, the
            forward's signature and the factory key that drives it.
    """
    B, T = idx.shape
    if through is not None:
        return _through(model, idx, through)
    names, var_kw = parameters_of(model.forward)
    hf = hugging_face(model) or (bool(names) and names[0] == "input_ids")
    targets_kw = "labels" if hf and "labels" in names or hf and var_kw else \
        next((n for n in TARGET_NAMES if n in names), None)
    takes_targets = targets_kw is not None
    fixed = tuple((n, REQUIRED_DEFAULTS[n]) for n in required_of(model.forward) if n in REQUIRED_DEFAULTS)
    setup = next((m for m in CACHE_SETUPS if callable(getattr(model, m, None))), None)
    if "cache" in names and callable(getattr(model, "new_cache", None)):
        cache = "engine"
    elif "past_key_values" in names:
        cache = "past_key_values"
    elif hf and "cache" in names:
        cache = "cache"
    elif "start_pos" in names:
        cache = "start_pos"
    elif "input_pos" in names and setup is not None:
        cache = "input_pos"
    elif "past_kv_cache" in names and hasattr(model, "cfg"):
        cache = "past_kv_cache"
    elif callable(getattr(model, "generate", None)):
        cache = "generate"
    else:
        cache = None

    def interface(full: str, loss_only: bool = False, logits_from: str | None = None, shifted: bool = hf,
                  style: str | None = None) -> Interface:
        style = style or ("Hugging Face" if hf else "engine" if cache == "engine" else
                          "own cache" if cache == "start_pos" else POSITION_STYLES[setup] if cache == "input_pos" else
                          "nanoGPT" if targets_kw is not None else "plain")
        return Interface(style, full, targets_kw, takes_targets or logits_from is not None, shifted, cache,
                         tuple(names), fixed, loss_only, logits_from, setup if cache == "input_pos" else None,
                         cache == "input_pos" and setup == "setup_caches", max(block_size or 0, T))

    plain = Forward(model, interface("plain"))
    with torch.no_grad():
        try:
            first_out = plain.call(idx)
        except Exception as exc:
            token = _one_token(model, interface, idx, f"{call_text(plain, idx)} raised {first_line(exc, limit=120)}") \
                if {"start_pos", "input_pos"} & set(names) else None
            if token is None:
                raise Undrivable(undrivable(model, plain, idx, exc)) from exc
            return token
        first, first_loss, _ = split_output(first_out)
        if first is None and first_loss is not None:
            # A loss wrapper: model(idx) scores idx itself; a child module gives the logits.
            for child_name, child in model.named_children():
                try:
                    inner = logits_of(child(idx))
                except Exception:
                    continue
                if inner.dim() == 3 and inner.shape[:2] == (B, T):
                    wrapper = Forward(model, interface("plain", logits_from=child_name, shifted=True,
                                                       style="loss wrapper"))
                    return Forward(model, wrapper.interface, _described(
                        wrapper.interface, f"logits {tuple(inner.shape)} from model.{child_name}(idx)"))
            raise ContractError("the forward returns only a loss (a 0-dim tensor) for ids alone, and no child "
                                "module gives logits (B, T, V); the audit needs logits per position")
        if first is None:
            raise ContractError(f"the forward returned {type(first_out).__name__}, which holds no logits tensor")
        loss_only = False
        if takes_targets:
            try:
                with_targets = split_output(plain.call(idx, plain.labels(idx, targets)))
                loss_only = with_targets[0] is None and with_targets[1] is not None
            except Exception:
                with_targets = None
        if first.dim() == 3 and first.shape[:2] == (B, T):
            it = interface("plain", loss_only=loss_only)
            return Forward(model, it, _described(it, f"logits {tuple(first.shape)}"))
        second = with_targets[0] if takes_targets and with_targets is not None else None
        if second is not None and second.dim() == 3 and second.shape[:2] == (B, T):
            it = interface("targets")
            return Forward(model, it, _described(
                it, f"{tuple(first.shape)} (last position only); called with targets -> {tuple(second.shape)}"))
    shape = tuple(first.shape)
    if first.dim() == 2 and shape[0] == B:
        raise ContractError(f"the forward returns logits of shape {shape} for ids of shape {(B, T)}: one row per "
                            "sequence, not per position; the audit needs logits (B, T, V), one row per position")
    raise ContractError(f"the forward returns logits of shape {shape} for ids of shape {(B, T)}; the audit needs "
                        "logits (B, T, V)")


class Undrivable(Exception):
    """The model's first forward raised: the message, one sentence, names the call the audit made, the
    forward's signature, and the factory key that would drive it."""


def call_text(forward: Forward, idx: torch.Tensor) -> str:
    """The call the audit makes for full logits, in words: ``model(idx (4, 32), start_pos=0)``."""
    it = forward.interface
    extra = "".join(f", {k}={v}" for k, v in it.fixed)
    if it.positions_always:
        return (f"model.{it.setup}(...) then model(idx {tuple(idx.shape)}, input_pos=torch.arange({idx.size(1)})"
                f"{extra})")
    if it.hf:
        return f"model(input_ids=idx {tuple(idx.shape)}{extra})"
    return f"model(idx {tuple(idx.shape)}{extra})"


def undrivable(model: nn.Module, forward: Forward, idx: torch.Tensor, exc: Exception) -> str:
    """One sentence for a first forward that raised: what it raised, the call made, the forward's signature,
    whether one token at a time runs (measured), and the factory's ``forward`` key that drives any interface."""
    sig = signature_of(model.forward)
    shown = f"{type(model).__name__}.forward{sig}" if sig is not None else f"{type(model).__name__}.forward"
    one = ""
    if idx.size(1) > 1:
        try:
            with torch.no_grad():
                logits_of(forward.call(idx[:, :1]))
            one = (f" (it runs on one token, {call_text(forward, idx[:, :1])}: a forward that takes one token per "
                   "call is driven token by token when its position parameter is named start_pos or input_pos)")
        except Exception:
            pass
    return (f"the forward pass raised {type(exc).__name__}: {first_line(exc, with_type=False, limit=200)}, called as "
            f"{call_text(forward, idx)} on {shown}; if the model is meant to be called another way, return a dict "
            "from the factory with 'forward', a function (model, idx) -> logits (B, T, V) that calls it so"
            f"{one}")


def _one_token(model: nn.Module, interface, idx: torch.Tensor, whole: str) -> Forward | None:
    """The Forward for a forward that takes one token per call at a position (``start_pos`` or
    ``input_pos``), when feeding the ids that way gives logits (B, T, V); else None. ``whole`` says what
    the call with the whole sequence raised, for the report (a crash on T > 1 is then never silent)."""
    key = "start_pos" if "start_pos" in parameters_of(model.forward)[0] else "input_pos"
    it = interface("plain", style="one token per forward")
    it = Interface(it.style, "plain", None, False, False, None, it.forward_params, it.fixed, one_token=key)
    forward = Forward(model, it)
    try:
        with torch.no_grad():
            logits = forward(idx)
    except Exception:
        return None
    if logits.dim() != 3 or logits.shape[:2] != idx.shape:
        return None
    return Forward(model, it, _described(it, f"logits {tuple(logits.shape)}") + f"; a whole sequence, {whole}")


def _through(model: nn.Module, idx: torch.Tensor, through: Any) -> Forward:
    """The Forward for a factory's own ``forward(model, idx)``: it gives the logits; the audit computes the
    loss; generate, if the model has one, is its only cached path."""
    names, _ = parameters_of(model.forward)
    cache = "generate" if callable(getattr(model, "generate", None)) else None
    it = Interface("the factory's forward", "plain", None, False, False, cache, tuple(names), through=through)
    forward = Forward(model, it)
    with torch.no_grad():
        try:
            first = logits_of(forward.call(idx))
        except Exception as exc:
            raise Undrivable(f"the factory's forward(model, idx) raised {type(exc).__name__}: "
                             f"{first_line(exc, with_type=False, limit=200)}, called with idx {tuple(idx.shape)}") from exc
    if first.dim() != 3 or first.shape[:2] != idx.shape:
        raise ContractError(f"the factory's forward(model, idx) returns logits of shape {tuple(first.shape)} for ids "
                            f"of shape {tuple(idx.shape)}; the audit needs logits (B, T, V)")
    return Forward(model, it, _described(it, f"logits {tuple(first.shape)}"))


def _described(it: Interface, logits: str) -> str:
    """The report's line for an interface: how logits and the loss come out, and the cache and generate calls found."""
    fixed = "".join(f", {k}={v}" for k, v in it.fixed)
    if it.through is not None:
        call = f"{getattr(it.through, '__name__', 'forward')}(model, idx); the loss by the audit"
    elif it.one_token is not None:
        call = (f"model(idx[:, t:t + 1], {it.one_token}=t) for each t in order, the logits concatenated; the loss "
                "by the audit")
    elif it.positions_always:
        call = f"model.{it.setup}(B, {it.length}), then model(idx, input_pos=positions); the loss by the audit"
    elif it.hf:
        call = "model(input_ids=idx, labels=idx) -> .logits, .loss; labels shifted inside"
    elif it.logits_from:
        call = f"model(idx) -> the loss alone (it shifts idx itself); model.{it.logits_from}(idx) -> logits"
    elif it.targets_kw and it.loss_only:
        call = f"model(idx{fixed}) -> logits; model(idx, {it.targets_kw}=...{fixed}) -> the loss alone"
    elif it.targets_kw:
        call = f"model(idx, {it.targets_kw}=...{fixed})"
    else:
        call = f"model(idx{fixed}); the loss by the audit (the forward takes no targets)"
    cache = {"engine": "cache: model.new_cache(B), model(idx, cache=cache)",
             "past_key_values": "cache: past_key_values in and out",
             "cache": "cache: a Cache object in and out (cache=...)",
             "start_pos": "cache kept inside the model, model(idx, start_pos=n)",
             "input_pos": f"cache: model.{it.setup}(...), model(idx, input_pos=positions)",
             "past_kv_cache": "cache: a HookedTransformerKeyValueCache, model(idx, past_kv_cache=cache)",
             "generate": "generate(idx, max_new_tokens=n, ...) only"}.get(it.cache, "no cache interface")
    return f"{it.style} style: {call} -> {logits}; {cache}"


# ---------------------------------------------------------------------------
# What the factory returned


@dataclass
class Built:
    """The factory's return value, taken apart: the model and what came with it."""

    model: nn.Module
    optimizer: Any = None
    extras: dict | None = None

    def get(self, key: str) -> Any:
        return (self.extras or {}).get(key)


class Several:
    """Several optimizers, or several schedulers, handed over as one list and used as one, each in the
    list's order (modded-nanogpt's Muon for the hidden matrices and AdamW for the rest, each with its own
    schedule): ``step`` and ``zero_grad`` go to each; ``param_groups`` and ``state`` are all of theirs;
    ``state_dict`` is the list of theirs. Iterating gives the members, as the list did."""

    def __init__(self, members: list) -> None:
        self.members = list(members)

    def __iter__(self):
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def __getitem__(self, i):
        return self.members[i]

    @property
    def param_groups(self) -> list[dict]:
        return [group for m in self.members for group in m.param_groups]

    @property
    def state(self) -> dict:
        return {p: value for m in self.members for p, value in getattr(m, "state", {}).items()}

    def step(self, *args, **kwargs) -> None:
        for m in self.members:
            m.step(*args, **kwargs)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for m in self.members:
            m.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> list:
        return [m.state_dict() for m in self.members]

    def load_state_dict(self, states: list) -> None:
        for m, state in zip(self.members, states):
            m.load_state_dict(state)

    @property
    def name(self) -> str:
        return " + ".join(type(m).__name__ for m in self.members)


def _several(key: str, value: Any) -> tuple[Any, str | None]:
    """A list or tuple of optimizers or schedulers as one ``Several``; anything else as it is. The problem,
    in words, when an item of the list has no ``step``."""
    if not isinstance(value, (list, tuple)):
        return value, None
    odd = next((v for v in value if not callable(getattr(v, "step", None))), None)
    if odd is not None or not value:
        return None, (f"a dict whose '{key}' is an empty {type(value).__name__}" if not value else
                      f"a dict whose '{key}' list holds {described(odd)}, which has no step()")
    return Several(value), None


def unpack(built: Any) -> tuple[Built | None, str | None]:
    """Split what a factory returned into (Built, None), or (None, a description of what it was).

    Accepted: an nn.Module; a (model, optimizer) pair; a dict with "model"
    and any of ``FACTORY_KEYS``, where "optimizer" and "scheduler" may each
    be a list, stepped in its order (``Several``). The description reads in
    a sentence: "42 (an int)", "a tuple of 3 items", "a dict without 'model'".
    """
    if isinstance(built, Mapping):
        unknown = [k for k in built if k not in FACTORY_KEYS]
        if unknown:
            return None, f"a dict with unknown keys {', '.join(map(repr, unknown))} (known: {', '.join(FACTORY_KEYS)})"
        if not isinstance(built.get("model"), nn.Module):
            return None, ("a dict without 'model'" if "model" not in built else
                          f"a dict whose 'model' is {described(built['model'])}")
        parts = {k: v for k, v in built.items() if k != "model"}
        for key in ("optimizer", "scheduler"):
            if key in parts:
                parts[key], problem = _several(key, parts[key])
                if problem is not None:
                    return None, problem
        return Built(built["model"], parts.get("optimizer"), parts), None
    if isinstance(built, (tuple, list)):
        if len(built) != 2:
            return None, f"a {type(built).__name__} of {len(built)} items"
        model, optimizer = built
        if not isinstance(model, nn.Module):
            return None, f"a pair whose first item is {described(model)}"
        return Built(model, optimizer), None
    if not isinstance(built, nn.Module):
        return None, described(built)
    return Built(built), None


def described(value: Any) -> str:
    """A short description of a value for a message: ``42 (an int)``, ``None``."""
    if value is None:
        return "None"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{reprlib.repr(value)} ({article} {kind})"


# ---------------------------------------------------------------------------
# Finding parts of a model


def engine_like(model: nn.Module) -> bool:
    """Whether the model is built like ``engine.model.GPT`` (the shape ledger can trace it)."""
    module = sys.modules.get(type(model).__module__)
    cfg = getattr(model, "config", None)
    return (module is not None and hasattr(module, "split_heads") and hasattr(module, "merge_heads")
            and all(hasattr(model, a) for a in ("wte", "wpe", "drop", "blocks", "ln_f", "lm_head"))
            and all(hasattr(cfg, a) for a in ("n_embd", "n_head", "vocab_size")))


def plain_attributes(model: nn.Module) -> list[tuple[str, Any]]:
    """Every public instance attribute of every submodule: ("blocks.0.attn.mask", value), in module order.

    Parameters, buffers and submodules live in nn.Module's own dictionaries,
    not here; what is here is invisible to ``parameters()``, ``state_dict()``
    and ``.to()``.
    """
    found = []
    for mod_name, module in model.named_modules():
        for attr, value in vars(module).items():
            if not attr.startswith("_"):
                found.append((f"{mod_name}.{attr}" if mod_name else attr, value))
    return found


def _by_name(candidates: list[tuple[str, nn.Module]], preferred: tuple[str, ...]) -> tuple[str, nn.Module] | None:
    for want in preferred:
        for name, module in candidates:
            if name.split(".")[-1] == want:
                return name, module
    return None


def token_table(model: nn.Module) -> tuple[str, nn.Embedding] | None:
    """(name, module) of the token embedding table, or None.

    ``get_input_embeddings()`` where the model has it (Hugging Face); else an
    nn.Embedding named like one (wte, tok_emb, embed_tokens, ...); else the
    first nn.Embedding whose name does not mention positions.
    """
    names = {id(m): n for n, m in model.named_modules()}
    getter = getattr(model, "get_input_embeddings", None)
    if callable(getter):
        try:
            table = getter()
        except Exception:
            table = None
        if isinstance(table, nn.Embedding) and id(table) in names:
            return names[id(table)], table
    tables = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Embedding)]
    found = _by_name(tables, TABLE_NAMES)
    if found is not None:
        return found
    return next(((n, m) for n, m in tables if "pos" not in n.lower() and "wpe" not in n.lower()), None)


def output_head(model: nn.Module, V: int) -> tuple[str, nn.Module] | None:
    """(name, module) of the output head: ``get_output_embeddings()``, else the Linear to V named like one,
    else the last Linear with V outputs; None when there is none."""
    names = {id(m): n for n, m in model.named_modules()}
    getter = getattr(model, "get_output_embeddings", None)
    if callable(getter):
        try:
            head = getter()
        except Exception:
            head = None
        if isinstance(head, nn.Module) and isinstance(getattr(head, "weight", None), torch.Tensor) \
                and id(head) in names:
            return names[id(head)], head
    heads = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear) and m.out_features == V]
    return _by_name(heads, HEAD_NAMES) or (heads[-1] if heads else None)


def declared_tie(model: nn.Module) -> str | None:
    """The flag that declares a tied head, as "config.tie_word_embeddings", when one is set true; else None."""
    for owner_name, owner in (("config", getattr(model, "config", None)), ("model", model)):
        if owner is None:
            continue
        for flag in TIE_FLAGS:
            value = owner.get(flag) if isinstance(owner, Mapping) else getattr(owner, flag, None)
            if value is True:
                return f"{owner_name}.{flag}"
    return None


def n_head_of(module: nn.Module, model: nn.Module) -> int | None:
    """The number of attention heads: an attribute of the module, else of the model's config."""
    for owner in (module, getattr(model, "config", None), model):
        for attr in ("n_head", "num_heads", "n_heads", "num_attention_heads", "nh", "heads"):
            value = owner.get(attr) if isinstance(owner, Mapping) else getattr(owner, attr, None)
            if isinstance(value, int) and value > 0:
                return value
    return None
