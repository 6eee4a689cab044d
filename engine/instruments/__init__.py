"""Instruments that turn claims about the model into observations.

Seed 004: the shape ledger, causality by intervention, and (Seed 000,
section 6) cached-versus-full logits.
"""

from .cache_check import cached_vs_full
from .intervention import future_token_intervention
from .shape_ledger import Ledger, LedgerRow, shape_ledger

__all__ = ["Ledger", "LedgerRow", "cached_vs_full", "future_token_intervention", "shape_ledger"]
