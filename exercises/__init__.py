"""The exercises: catalog data (``*.toml``), the check functions of each set
(``<set>.py``), small subject modules (``snippets/``), faults and answers.

Importing this package imports neither torch nor Textual; the check modules
do import torch, and are loaded only inside the worker process.
"""
