"""The audit: prove the chain, in order, on a GPT you did not write.

Seed 004, the final exercise and "Using AI on a generated language model":
take an unfamiliar GPT, change nothing, run every instrument in order, give
one verdict line per link with its evidence, and name the first link that
fails. The links:

 1 TOKENIZER     the tutor's CharTokenizer round-trips the corpus; every id
                 lies in [0, V) of the model's vocabulary
 2 ALIGNMENT     a real batch from get_batch: x[:, 1:] == y[:, :-1]
 3 CAUSALITY     change only the tokens after position i (eval mode): the
                 prefix logits stay within tolerance and the suffix moves
 4 SHAPE         the shape ledger with the head-split round trip, where the
                 model is built like the engine; else the (B, T) -> (B, T, V)
                 contract
 5 INIT          initial loss / ln V within [1/3, 3], the model's reported
                 loss equal to cross entropy by hand
 6 REGISTRATION  parameters in named_parameters(); tied tensors noted; no
                 tensor that wants gradients hidden in a plain attribute, no
                 module hidden in a plain list
 7 GRADIENTS     every trainable parameter gets a finite, nonzero gradient
 8 OWNERSHIP     the optimizer holds exactly the model's trainable parameters
 9 UPDATE        one optimizer step moves every trainable parameter
10 CAPABILITY    the optimizer overfits one tiny batch (below 0.1 nats in
                 150 steps)

Links 5 and 7–10 come from ``engine.instruments.learning_ledger``.

The model comes from a *factory*: a callable with no arguments returning an
``nn.Module`` — or a ``(model, optimizer)`` pair, when the code under audit
builds its own optimizer (how a stale optimizer shows). Without one the
audit builds AdamW (lr 3e-3, no weight decay). The forward takes (B, T)
int64 ids and returns logits (B, T, V), or a tuple/object whose first
element (or ``.logits``) they are; it may accept targets. A forward that
returns only the last position's logits without targets (nanoGPT's
inference path) is called with targets instead, and the report says so.

Run as ``python -m exercises.audit FILE.py FACTORY [--vocab V] [--block T]
[--device D] [--json]`` (what ``tutor audit`` starts in a separate process).
Exit status: 0 every link holds, 1 a link failed, 2 a usage error (no such
file or factory), 3 the import, the factory or the first forward pass raised,
or the factory returned something that is not a model. While it runs it
writes ``STAGE_MARKER`` lines to stderr naming the step in progress.
"""

from __future__ import annotations

import reprlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn as nn
from engine.instruments.forward import logits_of
from exercises.outcome import first_line

LINKS = ("TOKENIZER", "ALIGNMENT", "CAUSALITY", "SHAPE", "INIT", "REGISTRATION", "GRADIENTS", "OWNERSHIP",
         "UPDATE", "CAPABILITY")
#: The batch every link uses: B windows of at most T_MAX tokens.
B_AUDIT, T_MAX = 4, 32
OVERFIT_STEPS, OVERFIT_BELOW = 150, 0.1
CORPUS_CHARS = 20_000
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASHED = 0, 1, 2, 3
#: Starts each stderr line of ``main`` that names what is running now (``tutor audit``
#: reads the last one when its time limit stops the audit; tutor/audit_cmd.py holds a copy).
STAGE_MARKER = "tutor-audit-stage: "


@dataclass
class Link:
    """One link's verdict: status "ok", "FAIL" or "skip", one line, evidence rows."""

    name: str
    status: str
    verdict: str
    evidence: list[list[str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class AuditReport:
    """Every link in order, the first failure, and what the audit ran on.

    Attributes:
        status: "ok" (every link holds), "failed" (a link failed) or
            "crashed" (no links: the factory raised or returned no model,
            or the first forward raised).
        error: the crash, one line, when status is "crashed".
        setup: what was audited: V, T, B, device, forward convention, optimizer.
    """

    links: list[Link] = field(default_factory=list)
    status: str = "ok"
    error: str = ""
    setup: dict = field(default_factory=dict)

    @property
    def first_failure(self) -> str | None:
        for link in self.links:
            if link.status == "FAIL":
                return link.name
        return None

    @property
    def exit_code(self) -> int:
        if self.status == "crashed":
            return EXIT_CRASHED
        return EXIT_OK if self.first_failure is None else EXIT_FAILED

    def to_dict(self) -> dict:
        return {"status": self.status, "error": self.error, "setup": self.setup,
                "first_failure": self.first_failure,
                "links": [{"name": l.name, "status": l.status, "verdict": l.verdict, "evidence": l.evidence}
                          for l in self.links]}

    def text(self, evidence: bool = True) -> str:
        """The report as lines of text, one verdict per link, evidence indented."""
        return format_report(self.to_dict(), evidence=evidence)


def format_report(data: dict, evidence: bool = True) -> str:
    """Render ``AuditReport.to_dict()`` output as text (used by ``tutor audit``)."""
    s = data.get("setup", {})
    lines = [f"AUDIT  V={s.get('V', '?')}  batch {s.get('B', '?')}x{s.get('T', '?')}  "
             f"device {s.get('device', '?')}  forward: {s.get('convention', '?')}  "
             f"optimizer: {s.get('optimizer', '?')}"]
    if data.get("status") == "crashed":
        lines.append(f"could not audit: {data.get('error', '')}")
        return "\n".join(lines)
    for i, link in enumerate(data["links"], start=1):
        mark = {"ok": "ok  ", "FAIL": "FAIL", "skip": "skip"}[link["status"]]
        lines.append(f"{i:>2} {link['name']:<13}{mark}  {link['verdict']}")
        if evidence:
            for row in link["evidence"]:
                lines.append(f"{'':>19}{row[0]}: {row[1]}")
    first = data.get("first_failure")
    lines.append(f"first failure: {first}" if first else "first failure: none — every link holds")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The forward contract



class Forward:
    """Calls a model by the convention that yields (B, T, V) logits.

    ``plain``: ``model(idx)``. ``targets``: ``model(idx, targets)``, for a
    forward that returns only the last position without targets.
    """

    def __init__(self, model: nn.Module, convention: str) -> None:
        self.model, self.convention = model, convention

    def __call__(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        if self.convention == "targets":
            return logits_of(self.model(idx, targets if targets is not None else torch.zeros_like(idx)))
        return logits_of(self.model(idx))


def probe(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor) -> tuple[Forward, str]:
    """Find the calling convention; return (forward, one-line description).

    Raises:
        whatever the model's forward raises on ``model(idx)``.
    """
    B, T = idx.shape
    with torch.no_grad():
        logits = logits_of(model(idx))
        if logits.dim() == 3 and logits.shape[:2] == (B, T):
            return Forward(model, "plain"), f"model(idx) -> logits {tuple(logits.shape)}"
        try:
            with_targets = logits_of(model(idx, targets))
        except Exception:
            with_targets = None
        if with_targets is not None and with_targets.dim() == 3 and with_targets.shape[:2] == (B, T):
            return Forward(model, "targets"), (f"model(idx) -> {tuple(logits.shape)} (last position only); "
                                               f"called as model(idx, targets) -> {tuple(with_targets.shape)}")
    return Forward(model, "plain"), f"model(idx) -> {tuple(logits.shape)}, not (B, T, V)"


# ---------------------------------------------------------------------------
# Links the learning ledger does not cover


def _tokenizer(text: str, tokenizer, V: int) -> tuple[Link, torch.Tensor]:
    ids = tokenizer.encode_tensor(text)
    round_trip = tokenizer.decode(ids.tolist()) == text
    lo, hi = int(ids.min()), int(ids.max())
    in_range = lo >= 0 and hi < V
    ok = round_trip and in_range and tokenizer.vocab_size <= V
    verdict = (f"decode(encode(text)) == text on {len(text):,} chars; ids [{lo}, {hi}] within V={V}" if ok else
               "round trip fails" if not round_trip else
               f"ids reach {hi} but the model has only V={V} rows")
    return Link("TOKENIZER", "ok" if ok else "FAIL", verdict,
                [["round trip", str(round_trip)], ["id range", f"[{lo}, {hi}]"],
                 ["tokenizer vocab / model V", f"{tokenizer.vocab_size} / {V}"], ["dtype", str(ids.dtype)]]), ids


def _alignment(x: torch.Tensor, y: torch.Tensor) -> Link:
    ok = x.shape == y.shape and torch.equal(x[:, 1:], y[:, :-1])
    same = torch.equal(x, y)
    verdict = "x[:, 1:] == y[:, :-1] on a real batch" if ok else (
        "y == x: the targets are the inputs (no shift)" if same else "x[:, 1:] != y[:, :-1]")
    return Link("ALIGNMENT", "ok" if ok else "FAIL", verdict,
                [["x, y shapes", f"{tuple(x.shape)}, {tuple(y.shape)}"], ["x[0, :8]", str(x[0, :8].tolist())],
                 ["y[0, :8]", str(y[0, :8].tolist())]])


def _causality(forward: Forward, idx: torch.Tensor, V: int, generator: torch.Generator) -> Link:
    B, T = idx.shape
    position = T // 2 - 1
    shift = torch.randint(1, V, (B, T - position - 1), generator=generator).to(idx.device)
    changed = idx.clone()
    changed[:, position + 1:] = (idx[:, position + 1:] + shift) % V
    model = forward.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            before = forward(idx)
            after = forward(changed)
    finally:
        model.train(was_training)
    delta = (after - before).abs()
    prefix = float(delta[:, : position + 1].max())
    suffix = float(delta[:, position + 1:].max())
    tol = 1e-5 * max(1.0, float(before.abs().max()))
    prefix_ok, informative = prefix <= tol, suffix > tol
    ok = prefix_ok and informative
    verdict = (f"prefix 0..{position} still (max |Δ| {prefix:.1e}); suffix moved ({suffix:.2e})" if ok else
               f"the past moved: prefix max |Δ logits| {prefix:.3e} > tol {tol:.1e}" if not prefix_ok else
               f"uninformative: the suffix did not move ({suffix:.1e})")
    return Link("CAUSALITY", "ok" if ok else "FAIL", verdict,
                [["changed", f"tokens after position {position} (eval mode)"],
                 ["prefix max |Δ logits|", f"{prefix:.3e}"], ["suffix max |Δ logits|", f"{suffix:.3e}"],
                 ["tolerance", f"{tol:.1e}"]])


def _engine_like(model: nn.Module) -> bool:
    module = sys.modules.get(type(model).__module__)
    cfg = getattr(model, "config", None)
    return (module is not None and hasattr(module, "split_heads") and hasattr(module, "merge_heads")
            and all(hasattr(model, a) for a in ("wte", "wpe", "drop", "blocks", "ln_f", "lm_head"))
            and all(hasattr(cfg, a) for a in ("n_embd", "n_head", "vocab_size")))


def _shape(forward: Forward, idx: torch.Tensor, V: int) -> Link:
    model = forward.model
    B, T = idx.shape
    if _engine_like(model) and forward.convention == "plain":
        from engine.instruments.shape_ledger import shape_ledger

        ledger = shape_ledger(model, idx)
        first = ledger.first_divergence
        rows = [[f"{r.stage}", f"{r.shape} {r.invariant} {'ok' if r.ok else 'X'}"] for r in ledger.rows
                if not r.ok or r.stage in ("head split", "lm_head")]
        verdict = (f"{len(ledger.rows)} ledger rows hold, head-split round trip included" if first is None else
                   f"first divergence: {first}")
        return Link("SHAPE", "ok" if first is None else "FAIL", verdict, rows)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = forward(idx)
    finally:
        model.train(was_training)
    shape_ok = tuple(logits.shape) == (B, T, V)
    finite = bool(torch.isfinite(logits).all())
    rows = [["logits", f"{tuple(logits.shape)}, expected {(B, T, V)}"], ["finite", str(finite)]]
    cfg = getattr(model, "config", None)
    heads_ok = True
    if hasattr(cfg, "n_embd") and hasattr(cfg, "n_head"):
        heads_ok = cfg.n_embd % cfg.n_head == 0
        rows.append(["n_embd % n_head", str(cfg.n_embd % cfg.n_head)])
    ok = shape_ok and finite and heads_ok
    verdict = ("contract only (no engine-style ledger for this structure): (B, T) -> (B, T, V), finite" if ok else
               f"contract broken: logits {tuple(logits.shape)}, finite {finite}")
    return Link("SHAPE", "ok" if ok else "FAIL", verdict, rows)


def _registration(model: nn.Module) -> Link:
    named = list(model.named_parameters(remove_duplicate=False))
    first_name: dict[int, str] = {}
    tied = []
    for name, p in named:
        if id(p) in first_name:
            tied.append(f"{name} is {first_name[id(p)]}")
        else:
            first_name[id(p)] = name
    hidden = []
    for mod_name, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr.startswith("_"):
                continue
            where = f"{mod_name}.{attr}" if mod_name else attr
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) and value.requires_grad:
                hidden.append(f"{where} (tensor wanting grad, not a Parameter)")
            elif isinstance(value, (list, tuple, dict)):
                items = value.values() if isinstance(value, dict) else value
                if any(isinstance(v, nn.Module) and any(True for _ in v.parameters()) for v in items):
                    hidden.append(f"{where} (modules in a plain {type(value).__name__})")
    unique = sum(p.numel() for p in {id(p): p for _, p in named}.values())
    ok = not hidden and unique > 0
    verdict = (f"{len(first_name)} parameter tensors, {unique:,} values" + (f"; tied: {tied[0]}" if tied else "")
               if ok else f"not registered: {hidden[0]}" if hidden else "the model has no parameters")
    rows = [["named tensors (unique)", f"{len(named)} ({len(first_name)})"], ["unique values", f"{unique:,}"],
            ["tied", "; ".join(tied) or "none"]]
    if hidden:
        rows.append(["hidden from named_parameters()", "; ".join(hidden[:3])])
    return Link("REGISTRATION", "ok" if ok else "FAIL", verdict, rows)


def _from_ledger(ledger, link: str, rows_of: tuple[str, ...]) -> Link:
    # The ledger sees the model through _LedgerView, whose parameter names start with "inner.".
    rows = [r._replace(value=r.value.replace("inner.", "")) for r in ledger.rows if r.link in rows_of]
    if not rows:
        return Link(link, "skip", "not run: the learning ledger stopped earlier")
    bad = [r for r in rows if not r.ok]
    verdict = (f"{bad[0].check}: {bad[0].value}" if bad else "; ".join(f"{r.check} {r.value}" for r in rows))
    return Link(link, "FAIL" if bad else "ok", verdict,
                [[f"{r.link}/{r.check}", f"{r.value} {'ok' if r.ok else 'X'}"] for r in rows])


# ---------------------------------------------------------------------------
# The audit


def audit(factory: Callable[[], Any], vocab_size: int | None = None, block_size: int | None = None,
          device: str = "cpu", seed: int = 0, get_batch: Callable | None = None,
          overfit_steps: int = OVERFIT_STEPS, progress: Callable[[float, str], None] | None = None) -> AuditReport:
    """Run every link, in order, on the model ``factory()`` builds.

    Args:
        factory: no arguments; returns an nn.Module or (nn.Module, optimizer).
        vocab_size: the V the model claims (default: the logits' last axis).
        block_size: the longest sequence it accepts (default: ``config.block_size``
            or ``block_size`` on the model, else 64); the audit uses T = min(block_size, 32).
        device: where the model runs.
        seed: seeds the model build, the batch and the intervention.
        get_batch: the batching function under audit (default ``engine.data.get_batch``).
        overfit_steps: CAPABILITY's budget (0 skips it).
        progress: called as ``progress(fraction, what)`` as each step starts,
            ``what`` naming it ("the factory call build()", "CAUSALITY", ...).

    Returns:
        An AuditReport. It never raises for the model's faults: a factory that
        raises or returns no model, or a first forward that raises, gives
        status "crashed"; a link that raises fails with the exception in its
        verdict.
    """
    from engine.corpus import make_corpus
    from engine.instruments.learning_ledger import learning_ledger
    from engine.tokenizer import CharTokenizer

    if get_batch is None:
        from engine.data import get_batch
    report = AuditReport()
    dev = torch.device(device)
    say = progress or (lambda f, m: None)

    # Build, then find the forward convention.
    torch.manual_seed(seed)
    name = f"{getattr(factory, '__name__', 'factory')}()"
    say(0.0, f"the factory call {name}")
    try:
        built = factory()
    except Exception as exc:
        report.status, report.error = "crashed", f"the factory {name} raised {type(exc).__name__}: {exc}"
        return report
    model, optimizer, problem = _model_and_optimizer(built)
    if problem is not None:
        report.status, report.error = "crashed", (f"the factory {name} returned {problem}, but it must return "
                                                  "an nn.Module or a (model, optimizer) pair")
        return report
    try:
        model.to(dev)
    except Exception as exc:
        report.status, report.error = "crashed", f"moving the model to {dev} raised {type(exc).__name__}: {exc}"
        return report
    text = make_corpus(CORPUS_CHARS, seed=0)
    tokenizer = CharTokenizer(text)
    cfg = getattr(model, "config", None)
    block = block_size or getattr(cfg, "block_size", None) or getattr(model, "block_size", None) or 64
    T = min(int(block), T_MAX)
    g = torch.Generator().manual_seed(seed)
    data = tokenizer.encode_tensor(text)
    x, y = get_batch(data, B_AUDIT, T, generator=g, device=dev)
    say(0.02, "the model's first forward pass")
    try:
        probe_ids = x % (vocab_size or tokenizer.vocab_size)
        forward, described = probe(model, probe_ids, y % (vocab_size or tokenizer.vocab_size))
        with torch.no_grad():
            V = int(forward(probe_ids, probe_ids).size(-1))
    except Exception as exc:
        report.status, report.error = "crashed", f"the forward pass raised {type(exc).__name__}: {exc}"
        return report
    if vocab_size is not None and vocab_size != V:
        described += f"; --vocab {vocab_size} but the logits have {V}"
    if optimizer is None:
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
        opt_text = "AdamW lr 3e-3 built by the audit"
    else:
        opt_text = f"{type(optimizer).__name__} from the factory"
    report.setup = {"V": V, "T": T, "B": B_AUDIT, "device": str(dev), "convention": described,
                    "optimizer": opt_text, "model": type(model).__name__}

    def guarded(name: str, fn: Callable[[], Link]) -> Link:
        try:
            return fn()
        except Exception as exc:
            return Link(name, "FAIL", f"raised {first_line(exc)[:200]}")

    say(0.05, "TOKENIZER, ALIGNMENT")
    report.links.append(guarded("TOKENIZER", lambda: _tokenizer(text, tokenizer, V)[0]))
    report.links.append(guarded("ALIGNMENT", lambda: _alignment(x, y)))
    xs, ys = x % V, y % V  # only differs from x, y when TOKENIZER already failed
    say(0.15, "CAUSALITY")
    report.links.append(guarded("CAUSALITY", lambda: _causality(forward, xs, V, g)))
    say(0.25, "SHAPE")
    report.links.append(guarded("SHAPE", lambda: _shape(forward, xs, V)))
    registration = guarded("REGISTRATION", lambda: _registration(model))

    say(0.3, "the learning ledger (INIT, GRADIENTS, OWNERSHIP, UPDATE)")

    def on_step(step: int, total: int) -> None:
        if step % 10 == 0:
            say(0.3 + 0.7 * step / total, f"CAPABILITY: step {step}/{total}")

    try:
        ledger = learning_ledger(_LedgerView(forward), optimizer, xs, ys, vocab_size=V,
                                 overfit_steps=overfit_steps, overfit_below=OVERFIT_BELOW, on_step=on_step)
        init = _from_ledger(ledger, "INIT", ("OBJECTIVE",))
        rest = [_from_ledger(ledger, "GRADIENTS", ("GRADIENT",)), _from_ledger(ledger, "OWNERSHIP", ("OWNERSHIP",)),
                _from_ledger(ledger, "UPDATE", ("UPDATE",))]
        capability = _from_ledger(ledger, "CAPABILITY", ("CAPABILITY",)) if overfit_steps > 0 else \
            Link("CAPABILITY", "skip", "not run (no step budget)")
        if ledger.curve:
            capability.evidence.append(["loss every 25 steps",
                                        " ".join(f"{v:.3f}" for v in ledger.curve[::25] + ledger.curve[-1:])])
    except Exception as exc:
        failed = f"the learning ledger raised {first_line(exc)[:200]}"
        init = Link("INIT", "FAIL", failed)
        rest = [Link(n, "skip", "not run") for n in ("GRADIENTS", "OWNERSHIP", "UPDATE")]
        capability = Link("CAPABILITY", "skip", "not run")
    report.links += [init, registration, *rest, capability]
    report.status = "ok" if report.first_failure is None else "failed"
    say(1.0, "done")
    return report


def _model_and_optimizer(built: Any) -> tuple[nn.Module | None, Any, str | None]:
    """Split what a factory returned into (model, optimizer or None, problem or None).

    ``problem`` describes, for a message, a value that is neither an nn.Module
    nor a (model, optimizer) pair: "42 (an int)", "a tuple of 3 items".
    """
    if isinstance(built, (tuple, list)):
        if len(built) != 2:
            return None, None, f"a {type(built).__name__} of {len(built)} items"
        model, optimizer = built
        if not isinstance(model, nn.Module):
            return None, None, f"a pair whose first item is {_described(model)}"
        return model, optimizer, None
    if not isinstance(built, nn.Module):
        return None, None, _described(built)
    return built, None, None


def _described(value: Any) -> str:
    """A short description of a value for a message: ``42 (an int)``, ``None``."""
    if value is None:
        return "None"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{reprlib.repr(value)} ({article} {kind})"


class _LedgerView(nn.Module):
    """What the learning ledger sees: (idx, targets) -> (logits (B, T, V), loss or None).

    Wraps the audited model without copying it: parameters, train/eval mode
    and gradients are the model's own. The model's own loss is passed
    through when it reports one, so INIT can compare it with the loss by hand.
    """

    def __init__(self, forward: Forward) -> None:
        super().__init__()
        self.inner = forward.model
        self.convention = forward.convention
        self.config = getattr(forward.model, "config", None)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        if targets is None and self.convention == "plain":
            return logits_of(self.inner(idx)), None
        try:
            out = self.inner(idx, targets)
        except TypeError:  # a forward that takes no targets
            out = self.inner(idx)
        logits = logits_of(out)
        loss = out[1] if isinstance(out, (tuple, list)) and len(out) > 1 and isinstance(out[1], torch.Tensor) \
            else getattr(out, "loss", None)
        return logits, loss


# ---------------------------------------------------------------------------
# Entry point for ``tutor audit`` (a separate process)


def load_factory(path: str, name: str) -> Callable:
    """Import ``path`` as a module and return its attribute ``name``.

    Raises:
        FileNotFoundError: no such file. LookupError: no such attribute, or
        not callable. Anything the module raises on import propagates.
    """
    import importlib.util
    import os

    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("_audited_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["_audited_model"] = module
    spec.loader.exec_module(module)
    factory = getattr(module, name, None)
    if factory is None:
        raise LookupError(f"{os.path.basename(path)} defines no {name!r}")
    if not callable(factory):
        raise LookupError(f"{name!r} in {os.path.basename(path)} is not callable")
    return factory


def main(argv: list[str] | None = None) -> int:
    """``python -m exercises.audit FILE FACTORY [--vocab V] [--block T] [--device D] [--json]``."""
    import argparse
    import json
    import os

    parser = argparse.ArgumentParser(prog="python -m exercises.audit")
    parser.add_argument("file")
    parser.add_argument("factory")
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--block", type=int)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr  # the audited code may print; keep stdout for the report

    def stage(_fraction: float, what: str) -> None:
        # What is running now, for the message if the time limit stops the audit.
        err.write(f"\n{STAGE_MARKER}{what}\n")
        err.flush()

    stage(0.0, f"the import of {os.path.basename(args.file)}")
    try:
        factory = load_factory(args.file, args.factory)
    except (FileNotFoundError, LookupError) as exc:
        sys.stderr.write(f"audit: {exc}\n")
        return EXIT_USAGE
    except BaseException as exc:  # the learner's module raised on import
        report = AuditReport(status="crashed", error=f"importing the file raised {type(exc).__name__}: {exc}")
    else:
        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        report = audit(factory, vocab_size=args.vocab, block_size=args.block, device=device, progress=stage)
    stage(1.0, "the end of the audit, after every link ran (something the model's file started may keep "
               "the process alive)")
    data = report.to_dict()
    data["text"] = report.text()
    out.write((json.dumps(data) if args.json else data["text"]) + "\n")
    out.flush()
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
