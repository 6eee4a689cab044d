"""The model under audit and everything the links read: built once, shared by all.

``prepare`` calls the factory, moves the model, cuts the corpus batch and
finds how the model is called; a link reads what it needs from the
``Subject`` and returns its verdict. Anything that stops the audit before
the first link (a factory that raises or returns no model, a first forward
that raises or breaks the (B, T) -> (B, T, V) contract) becomes one
sentence, ``Crash``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn

from exercises.audit.adapter import (Built, ContractError, Forward, Undrivable, declared_tie, detect, output_head,
                                     plain_attributes, token_table, unpack)
from exercises.audit.constants import B_AUDIT, CORPUS_CHARS, T_MAX
from exercises.audit.measure import dtype_name, dtype_of, rounding_tol
from exercises.outcome import first_line


class Crash(Exception):
    """The audit cannot start on this model; the message is the report's one-line error."""


class Tokenizer:
    """A tokenizer seen through one interface: encode to a LongTensor, decode a list, vocab_size.

    Wraps the tutor's CharTokenizer or the factory's own (``encode(str)``
    returning ids, ``decode(ids)`` returning text, and ``vocab_size``,
    ``n_vocab`` or ``len()``).
    """

    def __init__(self, inner: Any, source: str) -> None:
        self.inner, self.source = inner, source

    @property
    def vocab_size(self) -> int:
        for attr in ("vocab_size", "n_vocab"):
            value = getattr(self.inner, attr, None)
            if isinstance(value, int):
                return value
        return len(self.inner)

    def encode(self, text: str) -> torch.Tensor:
        ids = self.inner.encode(text)
        if isinstance(ids, Mapping):  # a Hugging Face tokenizer's BatchEncoding
            ids = ids["input_ids"]
        return torch.as_tensor(ids, dtype=torch.long).reshape(-1)

    def decode(self, ids: list[int]) -> str:
        return self.inner.decode(ids)


@dataclass
class Subject:
    """What the links examine.

    Attributes:
        model: the module under audit, on ``device``.
        optimizer: the factory's optimizer, or AdamW built by the audit.
        forward: calls the model through its interface (``adapter.Forward``).
        text: the corpus. tokenizer: the factory's tokenizer, else the tutor's
            CharTokenizer built on the corpus.
        x, y: (B, T) int64, a real batch from ``get_batch`` (ALIGNMENT's evidence).
        V: the logits' last axis. rows: the token table's rows (None: no table found).
        generator: seeded; the links draw their random changes from it.
        overfit_steps: CAPABILITY's step budget (0 skips it).
        say: ``say(fraction, what)`` names the step that runs now.
        block_size: the longest sequence the model accepts, or None when unknown.
        extras: what else the factory returned (pad_id, train_step, evaluate, scheduler, scaler).
        attributes: every module's plain attributes as the factory built them
            (``adapter.plain_attributes``), before any forward pass.
        tie: the token table and output head as built (``tie_snapshot``).
        schedule_start: (the scheduler's state_dict, each param group's lr) as
            the factory built them, or None without a scheduler: LOOP starts
            the schedule over after CAPABILITY has advanced it.
        setup: the report's description of what was audited.
        memo: results links leave for later links (UPDATE's failed step, ...).
        span: the share of the audit's progress the running link covers (set by the pipeline).
        fresh: every parameter and buffer as built, by name (None when they
            cannot be copied): CAPABILITY's reference and LOOP start from it.
        untrainable: why nothing can be trained through the forward (it runs
            under ``torch.inference_mode``, as Meta's Llama reference does), or
            None; the training links then skip with it.
        rebuild: runs the factory again at the audit's seed and returns its
            model on the device (``twin``'s way when a copy fails), or None.
        expect: the conventions the model is held to (``--expect``: "sdpa"); a
            departure from one fails its link rather than warning.
    """

    model: nn.Module
    optimizer: Any
    forward: Forward
    text: str
    tokenizer: Tokenizer
    x: torch.Tensor
    y: torch.Tensor
    V: int
    generator: torch.Generator
    overfit_steps: int
    say: Callable[[float, str], None]
    rows: int | None = None
    block_size: int | None = None
    extras: dict = field(default_factory=dict)
    attributes: list = field(default_factory=list)
    tie: dict = field(default_factory=dict)
    schedule_start: tuple | None = None
    setup: dict = field(default_factory=dict)
    memo: dict = field(default_factory=dict)
    span: tuple = (0.0, 1.0)
    fresh: dict | None = None
    untrainable: str | None = None
    dtype: torch.dtype = torch.float32
    rebuild: Callable[[], nn.Module] | None = None
    expect: tuple = ()

    def tol(self, base: float) -> float:
        """A rounding-bounded relative tolerance for this model: ``base`` in float32, wider in a
        low-precision dtype (``measure.rounding_tol``)."""
        return rounding_tol(base, self.dtype)

    @property
    def precision(self) -> str:
        """The model's dtype as a word for verdicts: "float32", "bfloat16"."""
        return dtype_name(self.dtype)

    def twin(self) -> tuple[nn.Module | None, str]:
        """A second model, apart from the one under audit, for a reference run that must leave it alone: a
        deep copy, else the factory's model built again (a model that keeps a loss graph in an attribute,
        as llama2.c's ``last_loss``, cannot be deep-copied); and, when it is not a copy, one sentence on
        what failed and what was used instead (None for the model when nothing could be made)."""
        import copy

        try:
            return copy.deepcopy(self.model), ""
        except Exception as exc:
            failed = f"the model cannot be deep-copied ({first_line(exc, limit=200).split('. ')[0]})"
        if self.rebuild is None:
            return None, failed
        try:
            again = self.rebuild()
        except Exception as exc:
            why = str(exc) if isinstance(exc, Crash) else f"the factory's model raised {first_line(exc, limit=160)}"
            return None, f"{failed}, and built again: {why}"
        return again, f"{failed}: the factory was run again for it"

    def restore_fresh(self) -> bool:
        """Put the parameters and buffers back to their values as built (in place: the optimizer keeps
        its Parameters); False when they could not be saved."""
        if self.fresh is None:
            return False
        with torch.no_grad():
            for name, t in list(self.model.named_parameters()) + list(self.model.named_buffers()):
                if name in self.fresh and self.fresh[name].shape == t.shape:
                    t.copy_(self.fresh[name])
        return True

    def tick(self, within: float, what: str) -> None:
        """Progress inside the running link: ``within`` (0 to 1) of its share of the audit (``span``)."""
        start, end = self.span
        self.say(start + (end - start) * within, what)

    @property
    def limit(self) -> int:
        """Ids the model can take: below both V and the token table's rows."""
        return min(self.V, self.rows) if self.rows else self.V

    @property
    def xs(self) -> torch.Tensor:
        """x reduced modulo ``limit`` (differs from x only when TOKENIZER fails)."""
        return self.x % self.limit

    @property
    def ys(self) -> torch.Tensor:
        return self.y % self.limit

    @property
    def T(self) -> int:
        return int(self.x.size(1))


def tie_snapshot(model: nn.Module, V: int) -> dict:
    """The token table and the output head as the factory built them, before any training.

    Returns {"table", "head": names or None, "same": head weight is the
    table's Parameter, "equal": same values, "shared": same storage,
    "declared": the config flag that declares a tie, or None}.
    """
    table, head = token_table(model), output_head(model, V)
    snap = {"table": table[0] if table else None, "head": head[0] if head else None, "same": False,
            "equal": False, "shared": False, "declared": declared_tie(model)}
    if table and head:
        a, b = table[1].weight, head[1].weight
        snap["same"] = a is b
        snap["equal"] = a.shape == b.shape and bool(torch.equal(a.detach(), b.detach()))
        snap["shared"] = a.shape == b.shape and a.data_ptr() == b.data_ptr()
    return snap


#: Where a model keeps its hyperparameters: Hugging Face and nanoGPT ``config``, TransformerLens ``cfg``,
#: llama2.c and Meta's Llama ``params`` (ModelArgs), others ``args`` or ``hparams``.
CONFIG_OWNERS = ("config", "cfg", "params", "args", "hparams")


def block_size_of(model: nn.Module, given: int | None) -> int | None:
    """The longest sequence the model accepts: ``given``, else a common name for it (``block_size``,
    ``max_seq_len``, ``n_positions``, ``max_position_embeddings``, ``sequence_len``...) on its config
    (``CONFIG_OWNERS``) or on the model, else the position table's rows; None when nothing says."""
    if given:
        return int(given)
    for owner in (*(getattr(model, name, None) for name in CONFIG_OWNERS), model):
        for attr in ("block_size", "n_positions", "max_position_embeddings", "max_seq_len", "context_length",
                     "n_ctx", "sequence_len", "seq_len", "max_len"):
            value = owner.get(attr) if isinstance(owner, Mapping) else getattr(owner, attr, None)
            if isinstance(value, int) and value > 0:
                return value
    positions = [m for n, m in model.named_modules() if isinstance(m, nn.Embedding)
                 and ("pos" in n.lower() or n.split(".")[-1] == "wpe")]
    return positions[0].num_embeddings if positions else None


def _build(factory: Callable[[], Any], name: str) -> Built:
    try:
        built = factory()
    except Exception as exc:
        raise Crash(f"the factory {name} raised {type(exc).__name__}: {exc}") from None
    parts, problem = unpack(built)
    if problem is not None:
        raise Crash(f"the factory {name} returned {problem}, but it must return an nn.Module, a "
                    "(model, optimizer) pair, or a dict with 'model' (and an 'optimizer' and a 'scheduler' that "
                    "are each one object with step() or a list of them)")
    return parts


def prepare(factory: Callable[[], Any], vocab_size: int | None, block_size: int | None, device: str, seed: int,
            get_batch: Callable | None, overfit_steps: int, say: Callable[[float, str], None]) -> Subject:
    """Build the model, cut the batch, find the interface (see ``audit`` for the arguments).

    Raises:
        Crash: the factory raised or returned no model, moving the model
            failed, or the first forward pass raised or broke the contract.
    """
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer

    if get_batch is None:
        from engine.data import get_batch
    dev = torch.device(device)

    torch.manual_seed(seed)
    name = f"{getattr(factory, '__name__', 'factory')}()"
    say(0.0, f"the factory call {name}")
    built = _build(factory, name)
    model = built.model
    if built.get("forward") is not None and not callable(built.get("forward")):
        raise Crash(f"the factory {name} returned a dict whose 'forward' is not callable; it must be a function "
                    "(model, idx) -> logits (B, T, V)")
    attributes = plain_attributes(model)
    try:
        model.to(dev)
    except Exception as exc:
        raise Crash(f"moving the model to {dev} raised {type(exc).__name__}: {exc}") from None
    try:
        fresh = {name: t.detach().clone() for name, t in
                 list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers())}
    except Exception:
        fresh = None

    text = make_corpus(CORPUS_CHARS, seed=0)
    tutor_tokenizer = Tokenizer(CharTokenizer(text), "the tutor's CharTokenizer")
    tokenizer, ids = tutor_tokenizer, tutor_tokenizer.encode(text)
    if built.get("tokenizer") is not None:
        tokenizer = Tokenizer(built.get("tokenizer"), "the factory's tokenizer")
        try:  # TOKENIZER judges it; the batch needs ids either way
            ids = tokenizer.encode(text)
        except Exception:
            pass
    table = token_table(model)
    rows = table[1].num_embeddings if table else None
    block = block_size_of(model, block_size)
    T = min(block or 64, T_MAX)
    generator = torch.Generator().manual_seed(seed)
    x, y = get_batch(ids, B_AUDIT, T, generator=generator, device=dev)

    say(0.02, "the model's first forward pass")
    limit = min(v for v in (vocab_size, rows, int(ids.max()) + 1) if v)
    try:
        forward = detect(model, x % limit, y % limit, block, built.get("forward"))
        with torch.no_grad():
            V = int(forward(x % limit).size(-1))
    except (ContractError, Undrivable) as exc:
        raise Crash(str(exc)) from None
    except Exception as exc:
        raise Crash(f"the forward pass raised {type(exc).__name__}: {exc}") from None
    untrainable = None
    try:
        with torch.enable_grad():
            probe = forward(x[:1] % limit)
        if probe.is_inference():
            untrainable = ("the forward runs under torch.inference_mode() (as Meta's Llama reference does): its "
                           "outputs carry no graph, so nothing can be trained through it")
    except Exception:
        pass
    if untrainable is None and forward.interface.one_token is not None:
        untrainable = _backward_fails(model, forward, x[:1, :2] % limit)
    described = forward.description
    if vocab_size is not None and vocab_size != V:
        described += f"; --vocab {vocab_size} but the logits have {V}"
    optimizer = built.optimizer
    if optimizer is None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
        opt_text = "AdamW lr 3e-3 built by the audit"
    else:
        opt_text = f"{getattr(optimizer, 'name', type(optimizer).__name__)} from the factory"
    dtype = dtype_of(model)
    setup = {"V": V, "T": T, "B": B_AUDIT, "device": str(dev), "dtype": dtype_name(dtype), "convention": described,
             "interface": forward.interface.style, "optimizer": opt_text, "model": type(model).__name__,
             "tokenizer": tokenizer.source}
    schedule_start = None
    if built.get("scheduler") is not None:
        import copy

        schedule_start = (copy.deepcopy(built.get("scheduler").state_dict()),
                          [group["lr"] for group in optimizer.param_groups])
    if built.extras:
        setup["factory"] = "a dict with " + ", ".join(["model", *built.extras])
    return Subject(model=model, optimizer=optimizer, forward=forward, text=text, tokenizer=tokenizer, x=x, y=y,
                   V=V, generator=generator, overfit_steps=overfit_steps, say=say, rows=rows, block_size=block,
                   extras=dict(built.extras or {}), attributes=attributes, tie=tie_snapshot(model, V),
                   schedule_start=schedule_start, setup=setup, fresh=fresh, untrainable=untrainable,
                   dtype=dtype, rebuild=lambda: _rebuild(factory, name, seed, dev))


def _backward_fails(model: nn.Module, forward: Forward, idx: torch.Tensor) -> str | None:
    """Why nothing can be trained through a forward that takes one token per call, measured with a
    backward() through two tokens (a cache written in place breaks the first token's graph), or None when
    it can; the gradients it left are cleared."""
    try:
        with torch.enable_grad():
            forward(idx).float().sum().backward()
    except Exception as exc:
        return (f"the forward takes one token per call, and backward() through two of them raised "
                f"{first_line(exc, limit=160)} (a cache written in place?): nothing can be trained through it "
                "this way; a factory dict's 'forward' (model, idx) -> logits can drive training your way")
    finally:
        model.zero_grad(set_to_none=True)
    return None


def _rebuild(factory: Callable[[], Any], name: str, seed: int, device: torch.device) -> nn.Module:
    """The factory's model built again as ``prepare`` built it (the same seed, the global RNG left as it
    was), on ``device``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _build(factory, name).model.to(device)
