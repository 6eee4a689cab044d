"""Clean control, nanoGPT style: tied head, weight decay on 2-D matmul weights only,
and a correct training loop (microbatches averaged, GradScaler, clipping after
unscale_, a warmup schedule stepped after the optimizer, an evaluate that
restores train mode)."""

import zoo_nano


def build():
    return zoo_nano.with_loop(*zoo_nano.build())
