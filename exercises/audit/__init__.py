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

The model comes from a *factory*: a callable with no arguments returning an
``nn.Module`` — or a ``(model, optimizer)`` pair, when the code under audit
builds its own optimizer (how a stale optimizer shows). Without one the
audit builds AdamW (lr 3e-3, no weight decay). The forward takes (B, T)
int64 ids and returns logits (B, T, V), or a tuple/object whose first
element (or ``.logits``) they are; it may accept targets. A forward that
returns only the last position's logits without targets (nanoGPT's
inference path) is called with targets instead, and the report says so.

The package, by layer:

- ``constants``: what the audit and ``tutor audit`` share (the links' names,
  exit codes, ``STAGE_MARKER``, the memory cap); standard library only.
- ``report``: ``Link``, ``AuditReport``, ``format_report``; standard library only.
- ``adapter``: how a model is called (the forward convention, the factory's
  return value, the learning ledger's view of the model).
- ``subject``: ``prepare`` builds what the links examine, a ``Subject``.
- ``links``: one function per link, ``link(subject) -> Link``.
- ``pipeline``: ``PIPELINE``, the links in order, and ``audit()``.
- ``loading`` and ``__main__``: the learner's file and the command line
  (``python -m exercises.audit FILE.py FACTORY``, what ``tutor audit`` starts).

Importing this package loads neither torch nor the engine: ``audit``,
``load_factory`` and ``main`` are loaded on first use.
"""

from __future__ import annotations

from exercises.audit.constants import (B_AUDIT, CORPUS_CHARS, EXIT_CRASHED, EXIT_FAILED, EXIT_OK, EXIT_USAGE,
                                       LINKS, OVERFIT_BELOW, OVERFIT_STEPS, SEED_LINKS, STAGE_MARKER, T_MAX)
from exercises.audit.report import AuditReport, Link, format_report

#: Names loaded on first use (they import torch): name -> module.
_LAZY = {"audit": "exercises.audit.pipeline", "PIPELINE": "exercises.audit.pipeline",
         "load_factory": "exercises.audit.loading", "main": "exercises.audit.__main__",
         "Forward": "exercises.audit.adapter", "probe": "exercises.audit.adapter"}

__all__ = ["AuditReport", "B_AUDIT", "CORPUS_CHARS", "EXIT_CRASHED", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE",
           "LINKS", "Link", "OVERFIT_BELOW", "OVERFIT_STEPS", "SEED_LINKS", "STAGE_MARKER", "T_MAX",
           "format_report", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'exercises.audit' has no attribute {name!r}")
