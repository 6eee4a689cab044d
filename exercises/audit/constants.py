"""What the audit and ``tutor audit`` agree on, stated once.

This module imports only the standard library: ``tutor.cli.audit`` reads it
without loading torch (DESIGN.md, principle 4).
"""

from __future__ import annotations

import os

#: The ten links of seed 004's "prove the chain", in order.
SEED_LINKS = ("TOKENIZER", "ALIGNMENT", "CAUSALITY", "SHAPE", "INIT", "REGISTRATION", "GRADIENTS", "OWNERSHIP",
              "UPDATE", "CAPABILITY")
#: Every link the audit runs, in order (the pipeline's names; the tests pin that they agree). The
#: structural links, which need no training, run before the training links (GRADIENTS on), so a fault
#: that also cripples training (a dropped residual) is named where it is, not at CAPABILITY. The seed's
#: ten keep their relative order.
LINKS = ("TOKENIZER", "ALIGNMENT", "CAUSALITY", "SHAPE", "INIT", "REGISTRATION", "TIE", "EVAL", "ATTENTION",
         "RESIDUAL", "CACHE", "GENERATE", "GRADIENTS", "OWNERSHIP", "UPDATE", "CAPABILITY", "LOOP")

#: Conventions ``--expect`` may hold a model to, each with what it asks, in words: by default a departure
#: from them that keeps every contract is a warning; expected, it fails its link.
EXPECTATIONS = {"sdpa": "every attention module computes causal SDPA at 1/sqrt(D): no other scale, soft-cap "
                        "or bias on the scores"}

#: The batch every link uses: B windows of at most T_MAX tokens.
B_AUDIT, T_MAX = 4, 32
#: CAPABILITY's default budget and bar: below OVERFIT_BELOW nats per token within OVERFIT_STEPS steps.
OVERFIT_STEPS, OVERFIT_BELOW = 150, 0.1
#: Characters of the synthetic corpus TOKENIZER round-trips and the batch is cut from.
CORPUS_CHARS = 20_000

#: Exit status of ``python -m exercises.audit`` and of ``tutor audit``.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASHED = 0, 1, 2, 3

#: Starts each stderr line of the audit process that names the step it starts
#: (``tutor audit`` reads the last one when its time limit stops the audit).
STAGE_MARKER = "tutor-audit-stage: "

#: ``tutor audit`` keeps the audited code's output in a file: more than FLOOD_BYTES of
#: it is reported as an output flood, only its last TAIL_BYTES are read back, and
#: the file may not grow past OUTPUT_CAP_BYTES (a write beyond raises in the audited code).
FLOOD_BYTES, TAIL_BYTES, OUTPUT_CAP_BYTES = 1 << 20, 1 << 20, 64 << 20

#: The environment variable that caps a sandboxed process's address space, in MiB
#: (the check worker's children read it too), and its default. 0 or less: no cap.
MEMORY_CAP_ENV, DEFAULT_MEMORY_CAP_MB = "TUTOR_MEMORY_CAP_MB", 8192


def memory_cap_bytes() -> int:
    """The address-space cap in bytes from ``TUTOR_MEMORY_CAP_MB`` (default 8192 MiB); 0 means none.

    Raises:
        ValueError: the variable is set to something that is not an integer.
    """
    return max(0, int(os.environ.get(MEMORY_CAP_ENV, str(DEFAULT_MEMORY_CAP_MB)))) * 1024 * 1024
