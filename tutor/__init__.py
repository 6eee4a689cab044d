"""tutor — a terminal tutor for PyTorch and GPT internals, taught by faults."""

__version__ = "0.1.0"
