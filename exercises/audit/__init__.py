"""The audit: prove the chain, in order, on a GPT you did not write.

Seed 004, the final exercise and "Using AI on a generated language model":
take an unfamiliar GPT, change nothing, run every instrument in order, give
one verdict line per link with its evidence, and name the first link that
fails. The ten links of the seed, then seven that catch what real GPTs get
wrong past them, each failing where its bug first shows:

 1 TOKENIZER     the tokenizer (the factory's, else the tutor's CharTokenizer)
                 round-trips the corpus; every id lies in [0, V) and inside
                 the token table, checked before any forward reads them
 2 ALIGNMENT     a real batch from get_batch: x[:, 1:] == y[:, :-1]
 3 CAUSALITY     change only the tokens after position i (eval mode, the same
                 RNG state for both forwards): the prefix logits stay within
                 tolerance and the suffix moves; −inf logits compared by kind
 4 SHAPE         the shape ledger with the head-split round trip, where the
                 model is built like the engine; else the (B, T) -> (B, T, V)
                 contract
 5 INIT          no NaN logits; initial loss / ln V within [1/3, 3]; the
                 reported loss equals cross entropy by hand, and with targets
                 padded by −100 the mean over the real tokens
 6 REGISTRATION  parameters in named_parameters(); tied tensors noted; no
                 tensor kept as a plain attribute (not a Parameter, not a
                 buffer), no module or Parameter in a plain container
 7 GRADIENTS     every trainable parameter gets a finite, nonzero gradient
 8 OWNERSHIP     the optimizer holds exactly the model's trainable parameters
                 (weight decay on 1-D tensors or embeddings: a warning)
 9 UPDATE        the optimizer's state matches its parameters' dtype and
                 device; one step moves every trainable parameter
10 CAPABILITY    the optimizer (and scheduler) overfits one tiny batch (below
                 0.1 nats in 150 steps)
11 EVAL          eval() reaches every module; two eval forwards agree
12 CACHE         KV-cached decoding (prefill, then one token at a time and
                 chunks of 3) equals the full forward; through greedy
                 generate when that is the only cached path
13 GENERATE      generate runs past block_size and returns ids in [0, V)
14 TIE           a head that starts equal to the token table is that table
15 ATTENTION     each attention module equals SDPA from its own q, k, v
16 RESIDUAL      with its output projections zeroed, a block is the identity
17 LOOP          the factory's train_step: zero_grad, loss normalisation over
                 microbatches, clipping order, scheduler order, evaluate()

A link that cannot apply says "skip" with the reason (no cache interface, no
generate, no train_step, no attention module it can read).

The model comes from a *factory*: a callable with no arguments returning an
``nn.Module``; a ``(model, optimizer)`` pair, when the code under audit
builds its own optimizer (how a stale optimizer shows); or a dict with
``model`` and any of ``optimizer``, ``tokenizer``, ``pad_id``,
``train_step``, ``evaluate``, ``scheduler``, ``scaler``. Without an
optimizer the audit builds AdamW (lr 3e-3, no weight decay). The interface
is detected and reported (``adapter``): nanoGPT style (targets by keyword,
last-position logits without them, ``generate``), Hugging Face style
(``input_ids``, ``labels`` shifted inside, ``past_key_values``), engine
style (``new_cache``), or a model keeping its own cache (``start_pos``).

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
