"""Instruments that turn claims about the model into observations.

Seed 004: the shape ledger, causality by intervention, the learning ledger,
parameter accounting, the performance ledger, the run record and seed
variation; seed 000 §6: cached-versus-full logits. Each module imports only
torch and the standard library; import the one you need.
"""

from .cache_check import cached_vs_full
from .intervention import future_token_intervention
from .learning_ledger import LearningLedger, LinkRow, learning_ledger
from .shape_ledger import Ledger, LedgerRow, shape_ledger

__all__ = ["Ledger", "LedgerRow", "LearningLedger", "LinkRow", "cached_vs_full", "future_token_intervention",
           "learning_ledger", "shape_ledger"]
