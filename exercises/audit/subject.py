"""The model under audit and everything the links read: built once, shared by all.

``prepare`` calls the factory, moves the model, cuts the corpus batch and
finds the forward convention; a link reads what it needs from the
``Subject`` and returns its verdict. Anything that stops the audit before
the first link (a factory that raises or returns no model, a first forward
that raises) becomes one sentence, ``Crash``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn

from exercises.audit.adapter import Forward, plain_attributes, probe, unpack
from exercises.audit.constants import B_AUDIT, CORPUS_CHARS, T_MAX


class Crash(Exception):
    """The audit cannot start on this model; the message is the report's one-line error."""


@dataclass
class Subject:
    """What the links examine.

    Attributes:
        model: the module under audit, on ``device``.
        optimizer: the factory's optimizer, or AdamW built by the audit.
        forward: calls the model so it yields (B, T, V) logits.
        text, tokenizer: the corpus and the tutor's CharTokenizer built on it.
        x, y: (B, T) int64, a real batch from ``get_batch`` (ALIGNMENT's evidence).
        xs, ys: x, y reduced modulo V (they differ only when ids exceed the model's V).
        V: the logits' last axis. T: the batch's time axis.
        generator: seeded; the links draw their random changes from it.
        overfit_steps: CAPABILITY's step budget (0 skips it).
        say: ``say(fraction, what)`` names the step that runs now.
        attributes: every module's plain attributes as the factory built them
            (``adapter.plain_attributes``), before any forward pass.
        setup: the report's description of what was audited.
        memo: results links share (the learning ledger runs once for five links).
    """

    model: nn.Module
    optimizer: Any
    forward: Forward
    text: str
    tokenizer: Any
    x: torch.Tensor
    y: torch.Tensor
    V: int
    generator: torch.Generator
    overfit_steps: int
    say: Callable[[float, str], None]
    attributes: list = field(default_factory=list)
    setup: dict = field(default_factory=dict)
    memo: dict = field(default_factory=dict)

    @property
    def xs(self) -> torch.Tensor:
        return self.x % self.V

    @property
    def ys(self) -> torch.Tensor:
        return self.y % self.V

    @property
    def T(self) -> int:
        return int(self.x.size(1))

    def remember(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per audit; its result, or the exception it raised, is replayed after."""
        if key not in self.memo:
            try:
                self.memo[key] = (compute(), None)
            except Exception as exc:
                self.memo[key] = (None, exc)
        value, error = self.memo[key]
        if error is not None:
            raise error
        return value


def prepare(factory: Callable[[], Any], vocab_size: int | None, block_size: int | None, device: str, seed: int,
            get_batch: Callable | None, overfit_steps: int, say: Callable[[float, str], None]) -> Subject:
    """Build the model, cut the batch, find the forward convention (see ``audit`` for the arguments).

    Raises:
        Crash: the factory raised or returned no model, moving the model
            failed, or the first forward pass raised.
    """
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer

    if get_batch is None:
        from engine.data import get_batch
    dev = torch.device(device)

    torch.manual_seed(seed)
    name = f"{getattr(factory, '__name__', 'factory')}()"
    say(0.0, f"the factory call {name}")
    try:
        built = factory()
    except Exception as exc:
        raise Crash(f"the factory {name} raised {type(exc).__name__}: {exc}") from None
    model, optimizer, problem = unpack(built)
    if problem is not None:
        raise Crash(f"the factory {name} returned {problem}, but it must return an nn.Module or a "
                    "(model, optimizer) pair")
    attributes = plain_attributes(model)
    try:
        model.to(dev)
    except Exception as exc:
        raise Crash(f"moving the model to {dev} raised {type(exc).__name__}: {exc}") from None

    text = make_corpus(CORPUS_CHARS, seed=0)
    tokenizer = CharTokenizer(text)
    cfg = getattr(model, "config", None)
    block = block_size or getattr(cfg, "block_size", None) or getattr(model, "block_size", None) or 64
    T = min(int(block), T_MAX)
    generator = torch.Generator().manual_seed(seed)
    x, y = get_batch(tokenizer.encode_tensor(text), B_AUDIT, T, generator=generator, device=dev)

    say(0.02, "the model's first forward pass")
    try:
        probe_ids = x % (vocab_size or tokenizer.vocab_size)
        forward, described = probe(model, probe_ids, y % (vocab_size or tokenizer.vocab_size))
        with torch.no_grad():
            V = int(forward(probe_ids, probe_ids).size(-1))
    except Exception as exc:
        raise Crash(f"the forward pass raised {type(exc).__name__}: {exc}") from None
    if vocab_size is not None and vocab_size != V:
        described += f"; --vocab {vocab_size} but the logits have {V}"
    if optimizer is None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
        opt_text = "AdamW lr 3e-3 built by the audit"
    else:
        opt_text = f"{type(optimizer).__name__} from the factory"
    setup = {"V": V, "T": T, "B": B_AUDIT, "device": str(dev), "convention": described, "optimizer": opt_text,
             "model": type(model).__name__}
    return Subject(model=model, optimizer=optimizer, forward=forward, text=text, tokenizer=tokenizer, x=x, y=y,
                   V=V, generator=generator, overfit_steps=overfit_steps, say=say, attributes=attributes,
                   setup=setup)
