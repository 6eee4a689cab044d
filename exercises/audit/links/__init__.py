"""The audit's links, one small function each: ``link(subject) -> Link``.

``data``: TOKENIZER, ALIGNMENT. ``structure``: CAUSALITY, SHAPE,
REGISTRATION. ``learning``: INIT, GRADIENTS, OWNERSHIP, UPDATE, CAPABILITY.
The pipeline (``exercises.audit.pipeline``) lists them in order.
"""
