"""The audit's links, one small function each: ``link(subject) -> Link``.

``data``: TOKENIZER, ALIGNMENT. ``structure``: CAUSALITY, SHAPE,
REGISTRATION, TIE. ``learning``: INIT, GRADIENTS, OWNERSHIP, UPDATE,
CAPABILITY. ``inference``: EVAL, CACHE, GENERATE. ``architecture``:
ATTENTION, RESIDUAL. ``loop``: LOOP. The pipeline
(``exercises.audit.pipeline``) lists them in order.
"""
