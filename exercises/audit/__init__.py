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
                 tensor kept as a plain attribute (aliases of registered
                 tensors and tensors the forward moves itself accepted), no
                 module or Parameter in a plain container (an index of
                 registered modules accepted)
 7 TIE           a head that starts equal to the token table is that table
 8 EVAL          eval() reaches every module; two eval forwards agree
 9 ATTENTION     each attention module equals causal SDPA from its own q, k, v
                 as they reach its attention call (after its rotary
                 embedding, however kept, and any qk-norm), at the scale it
                 applies itself (SDPA's scale=, or a hand-written softmax
                 input's ratio to q @ k^T), read by hooks and a torch
                 function mode in the model's own forward (packed, Conv1D,
                 grouped kv heads; the head count from the call when no
                 attribute names it); a scale other than 1/sqrt(D), a
                 soft-cap, ALiBi (fit from the softmax's input or read from
                 SDPA's attn_mask) or a sliding window warns; ALiBi slopes
                 of the wrong sign fail; kv heads tiled where they should
                 be grouped are named as such
10 RESIDUAL      with its output projections zeroed in place, each block
                 returns its input inside the model's own forward
11 CACHE         KV-cached decoding (prefill, then one token at a time and
                 chunks of 3) equals the full forward: the engine's cache,
                 past_key_values or transformers 5's Cache, Meta's start_pos,
                 litgpt's input_pos; through greedy generate when that is the
                 only cached path (a forward whose cache keyword hands back no
                 cache included)
12 GENERATE      generate runs past block_size (up to it for a library's
                 generate that never crops) and returns ids in [0, V)
13 GRADIENTS     every trainable parameter gets a finite, nonzero gradient (or,
                 behind a projection initialised to zero, one a few steps later)
14 OWNERSHIP     the optimizer holds exactly the model's trainable parameters
                 (weight decay on 1-D tensors or embeddings: a warning)
15 UPDATE        the optimizer's state matches its parameters' dtype and
                 device; one step moves every trainable parameter
16 CAPABILITY    a reference AdamW fits one tiny batch below 0.1 nats in 150
                 steps on a copy as built (the factory run again when the
                 model cannot be copied, said), and the factory's optimizer (and
                 scheduler) falls at least half as far; losses in eval mode,
                 the curves in the evidence
17 LOOP          the factory's train_step, from the model as built: zero_grad,
                 loss normalisation over microbatches, clipping order,
                 scheduler order, evaluate()

The links 1-6 and 13-16 are seed 004's ten, in the seed's order; the
structural links 7-12 need no training and run before the training links,
so a fault that also cripples training (a dropped residual) is named where
it is. Each link's wall time is in the report.

A failure carries advice read from what was measured (``Link.advice``, the
report's "fix:" line). A link whose contract holds while the model departs
from a common convention (a scale other than 1/sqrt(D), weight decay on
1-D tensors) carries a warning line and says "warn", naming it (a link with
a warning is never "ok": ``Link.settle``); it fails nothing, unless the audit is asked to expect the convention (``expect``,
``--expect sdpa``: causal SDPA at 1/sqrt(D)), when it fails. A link that cannot apply says "skip" with the reason (no cache interface, no
generate, no train_step, no attention module it can read), naming what it
looked for and what it found. Comparisons bounded by rounding allow the
link's float32 tolerance or 8 unit roundoffs of the model's dtype, whichever
is larger (``measure.rounding_tol``); the verdicts say which.

The model comes from a *factory*: a callable with no arguments returning an
``nn.Module``; a ``(model, optimizer)`` pair, when the code under audit
builds its own optimizer (how a stale optimizer shows); or a dict with
``model`` and any of ``optimizer``, ``tokenizer``, ``pad_id``,
``train_step``, ``evaluate``, ``scheduler``, ``scaler``, ``forward`` (a
function ``(model, idx)`` giving the logits, for an interface the audit
cannot drive: one token per forward), ``label_smoothing`` (the ε of a loss
that smooths its labels on purpose, which INIT then recomputes). Without an
optimizer the audit builds AdamW (lr 3e-3, no weight decay). The interface
is read from the forward's signature, every argument after the ids by
keyword, and reported (``adapter``): nanoGPT style (targets by keyword,
last-position logits without them, ``generate``; a forward that returns the
loss alone given targets, as nanochat's, is recognised), Hugging Face style
(a ``PreTrainedModel`` or a first parameter ``input_ids``; ``labels``
shifted inside; ``past_key_values`` or ``cache``), engine style
(``new_cache``), a model keeping its own cache (``start_pos``, supplied
where it is required), an ``input_pos`` cache the model sets up itself
(litgpt, lit-llama, gpt-fast's ``setup_caches``), one token per forward
(``start_pos`` or ``input_pos``, run token by token), a loss wrapper whose child
gives the logits (x-transformers' ``AutoregressiveWrapper``), or plain.

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
