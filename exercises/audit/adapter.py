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
- **plain**: ``forward(idx) -> logits``, or a tuple or object holding them.

A factory may return the model, ``(model, optimizer)``, or a dict (see
``FACTORY_KEYS``). ``Forward`` wraps the model so every link calls it one
way: full logits, logits with the model's own loss, a cached continuation.
"""

from __future__ import annotations

import inspect
import reprlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

#: What a factory's dict may hold: the model (required) and what the links use.
FACTORY_KEYS = ("model", "optimizer", "tokenizer", "pad_id", "train_step", "evaluate", "scheduler", "scaler")
#: Keywords a forward may name its targets with, in the order they are tried.
TARGET_NAMES = ("targets", "target", "labels", "y")
#: Config flags that declare the output head tied to the token table.
TIE_FLAGS = ("tie_word_embeddings", "tie_weights", "tie_embeddings", "weight_tying")
#: Module names that mark the token table and the output head among several candidates.
TABLE_NAMES = ("wte", "tok_emb", "token_embedding", "tok_embeddings", "embed_tokens", "word_embeddings",
               "token_embedding_table", "embedding")
HEAD_NAMES = ("lm_head", "head", "output", "out_head", "unembed")
#: Second parameters of a forward that are surely not its targets (never passed targets positionally).
NOT_TARGETS = ("cache", "kv_cache", "start_pos", "input_pos", "pos", "position_ids", "past_key_values",
               "attention_mask", "mask", "use_cache")


class ContractError(Exception):
    """The model does not meet the (B, T) -> (B, T, V) contract; the message says how, in one sentence."""


# ---------------------------------------------------------------------------
# What a forward returned


def split_output(out: Any) -> tuple[torch.Tensor | None, torch.Tensor | None, Any]:
    """(logits, loss, past_key_values) from whatever a forward returned; None where absent.

    A tensor is the logits. In a tuple or list the logits are the first
    tensor with two or more axes and the loss the first 0-dim tensor (so
    both ``(logits, loss)`` and Hugging Face's ``(loss, logits, ...)`` read
    right). A mapping or an object is read by key or attribute:
    ``logits``, ``loss``, ``past_key_values``.
    """
    if isinstance(out, torch.Tensor):
        return out, None, None
    if isinstance(out, (tuple, list)):
        tensors = [t for t in out if isinstance(t, torch.Tensor)]
        logits = next((t for t in tensors if t.dim() >= 2), None)
        loss = next((t for t in tensors if t.dim() == 0), None)
        return logits, loss, None
    get = out.get if isinstance(out, Mapping) else (lambda key: getattr(out, key, None))
    logits, loss = get("logits"), get("loss")
    return (logits if isinstance(logits, torch.Tensor) else None,
            loss if isinstance(loss, torch.Tensor) else None, get("past_key_values"))


def logits_of(out: Any) -> torch.Tensor:
    """The logits in a forward's output (see ``split_output``).

    Raises:
        TypeError: the output holds no logits.
    """
    logits = split_output(out)[0]
    if logits is None:
        raise TypeError(f"the forward returned {type(out).__name__}, which holds no logits tensor")
    return logits


# ---------------------------------------------------------------------------
# The interface


def parameters_of(fn: Any) -> tuple[list[str], bool]:
    """(parameter names of a callable, in order, without self; whether it takes **kwargs)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], True
    names = [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return names, any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


@dataclass(frozen=True)
class Interface:
    """How a model is called.

    Attributes:
        style: "nanoGPT", "Hugging Face", "engine", "own cache" or "plain".
        full_logits: "plain" (``model(idx)`` gives (B, T, V)) or "targets"
            (only a call with targets does: nanoGPT's last-position shortcut).
        targets_kw: the keyword targets are passed by, or None: positional,
            or (with ``takes_targets`` False) not at all.
        takes_targets: whether the forward accepts targets.
        labels_shifted: the targets are the inputs and the model shifts them
            (Hugging Face's ``labels``).
        cache: "engine", "past_key_values", "start_pos", "generate" or None.
        forward_params: the forward's parameter names.
    """

    style: str
    full_logits: str
    targets_kw: str | None
    takes_targets: bool
    labels_shifted: bool
    cache: str | None
    forward_params: tuple[str, ...]

    @property
    def hf(self) -> bool:
        return self.style == "Hugging Face"


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
        """The model's raw output for ids (B, T) and, if given, targets in the interface's convention."""
        it = self.interface
        if it.hf:
            kwargs = {"input_ids": idx, **extra}
            if targets is not None:
                kwargs["labels"] = targets
            return self.model(**kwargs)
        if targets is None or not it.takes_targets:
            return self.model(idx, **extra)
        if it.targets_kw is not None:
            return self.model(idx, **{it.targets_kw: targets}, **extra)
        return self.model(idx, targets, **extra)

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
        """(logits (B, T, V), reported loss or None) for ids and labels already in the model's convention."""
        out = self.call(idx, labels) if self.interface.takes_targets else self.call(idx)
        logits, loss, _ = split_output(out)
        if logits is None:
            raise TypeError(f"the forward returned {type(out).__name__}, which holds no logits tensor")
        return logits, loss

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss to train on: the model's own, else mean cross entropy of its logits (nats per token)."""
        logits, loss, labels = self.logits_and_loss(x, y)
        if loss is None:
            z, t = self.aligned(logits, labels)
            loss = nn.functional.cross_entropy(z, t)
        return loss


def detect(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor) -> Forward:
    """Find how the model is called; return the Forward and its one-line description.

    Args:
        idx, targets: (B, T) int64 ids within the model's token table.

    Raises:
        ContractError: no call gives logits (B, T, ·); the message names the shape.
        whatever the model's forward raises on ``model(idx)``.
    """
    B, T = idx.shape
    names, var_kw = parameters_of(model.forward)
    hf = bool(names) and names[0] == "input_ids" or "past_key_values" in names
    targets_kw = "labels" if hf else next((n for n in TARGET_NAMES if n in names), None)
    takes_targets = hf or targets_kw is not None or (len(names) >= 2 and names[1] not in NOT_TARGETS)
    if "cache" in names and callable(getattr(model, "new_cache", None)):
        cache = "engine"
    elif "past_key_values" in names:
        cache = "past_key_values"
    elif "start_pos" in names:
        cache = "start_pos"
    elif callable(getattr(model, "generate", None)):
        cache = "generate"
    else:
        cache = None

    def interface(full: str) -> Interface:
        style = ("Hugging Face" if hf else "engine" if cache == "engine" else "own cache" if cache == "start_pos"
                 else "nanoGPT" if targets_kw is not None else "plain")
        return Interface(style, full, targets_kw, takes_targets, hf, cache, tuple(names))

    plain = Forward(model, interface("plain"))
    with torch.no_grad():
        first = logits_of(plain.call(idx))
        if first.dim() == 3 and first.shape[:2] == (B, T):
            return Forward(model, plain.interface, _described(plain.interface, f"logits {tuple(first.shape)}"))
        second = None
        if takes_targets:
            try:
                second = logits_of(plain.call(idx, plain.labels(idx, targets)))
            except Exception:
                second = None
        if second is not None and second.dim() == 3 and second.shape[:2] == (B, T):
            shortcut = Forward(model, interface("targets"))
            return Forward(model, shortcut.interface, _described(
                shortcut.interface, f"{tuple(first.shape)} (last position only); called with targets -> "
                                    f"{tuple(second.shape)}"))
    shape = tuple(first.shape)
    if first.dim() == 2 and shape[0] == B:
        raise ContractError(f"the forward returns logits of shape {shape} for ids of shape {(B, T)}: one row per "
                            "sequence, not per position; the audit needs logits (B, T, V), one row per position")
    raise ContractError(f"the forward returns logits of shape {shape} for ids of shape {(B, T)}; the audit needs "
                        "logits (B, T, V)")


def _described(it: Interface, logits: str) -> str:
    """The report's line for an interface: how logits come out, and the cache and generate calls found."""
    call = ("model(input_ids=idx, labels=idx) -> .logits, .loss; labels shifted inside" if it.hf else
            f"model(idx, {it.targets_kw}=...)" if it.targets_kw else "model(idx)")
    cache = {"engine": "cache: model.new_cache(B), model(idx, cache=cache)",
             "past_key_values": "cache: past_key_values in and out",
             "start_pos": "cache kept inside the model, model(idx, start_pos=n)",
             "generate": "generate(idx, max_new_tokens, ...) only"}.get(it.cache, "no cache interface")
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


def unpack(built: Any) -> tuple[Built | None, str | None]:
    """Split what a factory returned into (Built, None), or (None, a description of what it was).

    Accepted: an nn.Module; a (model, optimizer) pair; a dict with "model"
    and any of ``FACTORY_KEYS``. The description reads in a sentence:
    "42 (an int)", "a tuple of 3 items", "a dict without 'model'".
    """
    if isinstance(built, Mapping):
        unknown = [k for k in built if k not in FACTORY_KEYS]
        if unknown:
            return None, f"a dict with unknown keys {', '.join(map(repr, unknown))} (known: {', '.join(FACTORY_KEYS)})"
        if not isinstance(built.get("model"), nn.Module):
            return None, ("a dict without 'model'" if "model" not in built else
                          f"a dict whose 'model' is {described(built['model'])}")
        return Built(built["model"], built.get("optimizer"), {k: v for k, v in built.items() if k != "model"}), None
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
        for attr in ("n_head", "num_heads", "n_heads", "num_attention_heads", "nh"):
            value = owner.get(attr) if isinstance(owner, Mapping) else getattr(owner, attr, None)
            if isinstance(value, int) and value > 0:
                return value
    return None
