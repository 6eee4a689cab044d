"""Model configuration.

Seed 004, "The environment": n_layer=4, n_head=4, n_embd=128, block_size=64
and a 37-character vocabulary give a GPT of 804,224 parameters (tied).

The same dataclass also describes the block today's open models use (Llama
style): rotary positions instead of a learned table (``pos="rope"``), fewer
key/value heads than query heads (``n_kv_head``, grouped-query attention),
RMSNorm instead of LayerNorm and a gated SwiGLU MLP. Every option defaults
to the seed's model, so a config that names none of them is that model.

The sizes the exercises build are named once, in ``PRESETS``, and read
through ``preset(name, **overrides)``; a check asks for a model with
``ctx.gpt(preset="small", n_layer=1)`` (``exercises/context.py``).

This module imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GPTConfig:
    """Hyperparameters of the GPT in ``engine.model``.

    Attributes:
        vocab_size: V, the number of token ids; ids live in [0, V).
        block_size: the longest sequence the model accepts, in tokens; also
            the number of rows in the position table.
        n_layer: number of transformer blocks.
        n_head: H, attention heads per block.
        n_embd: C, the width of the residual stream. Head size D = C // H.
        dropout: dropout probability used in training mode.
        tie_weights: share one [V, C] matrix between the token embedding and
            the lm_head (Seed 004, "Weight tying").
        bias: whether the MLP's Linear layers carry a bias.
        pos: where positions come from. "learned" (the seed's): a
            (block_size, C) table added to the token embeddings once.
            "rope": rotary positions, no table; every attention layer turns
            each query and key by an angle proportional to its position, so a
            score depends on how far apart two tokens are.
        rope_theta: the base of the rotary frequencies; channel pair i of a
            head turns by position * rope_theta ** (-2i / D) radians.
        n_kv_head: how many key/value heads attention computes and caches;
            None means n_head (every query head has its own). Fewer gives
            grouped-query attention: n_head // n_kv_head query heads share
            each key/value head.
        norm: "layernorm" (the seed's: subtract the mean, divide by the
            standard deviation, scale and shift; 2C parameters) or "rmsnorm"
            (divide by the root mean square, scale; C parameters).
        mlp: "gelu" (the seed's: Linear, GELU, Linear) or "swiglu" (a gated
            MLP: silu(x W_gate) * (x W_up), then W_down; three matrices).
        mlp_hidden: the MLP's hidden width; None means 4 * n_embd.
        window: sliding-window attention: each query sees only the ``window``
            most recent positions, its own included. None (the seed's) sees
            the whole causal past.
        check_ids: every forward checks its token ids against [0, V) and
            raises an IndexError that names the bad id and the table size,
            where a bare embedding lookup says only "index out of range" on
            the CPU and fails as an opaque device-side assert on CUDA. On by
            default, for teaching on the CPU, where the check costs one scan.
            On an accelerator it reads idx.min() and idx.max() back to the
            host, a synchronisation on every forward (every token of a
            generation loop) and a graph break under ``torch.compile``: turn
            it off there, once the ids have been checked where they enter
            (the tokenizer's vocab_size against the model's).

    Raises:
        ValueError: if n_embd is not divisible by n_head, n_head not by
            n_kv_head, a size is not positive, dropout is outside [0, 1), an
            option names no known variant, or rotary positions meet an odd
            head size.
    """

    vocab_size: int = 37
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    tie_weights: bool = True
    bias: bool = True
    pos: str = "learned"
    rope_theta: float = 10000.0
    n_kv_head: int | None = None
    norm: str = "layernorm"
    mlp: str = "gelu"
    mlp_hidden: int | None = None
    window: int | None = None
    check_ids: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}.")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head}) "
                "so that every head gets the same head size D = n_embd // n_head."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")
        for name, allowed in (("pos", ("learned", "rope")), ("norm", ("layernorm", "rmsnorm")),
                              ("mlp", ("gelu", "swiglu"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, "
                                 f"got {getattr(self, name)!r}.")
        for name in ("n_kv_head", "mlp_hidden", "window"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer or None, got {value}.")
        if self.n_head % self.kv_heads != 0:
            raise ValueError(f"n_head ({self.n_head}) must be divisible by n_kv_head ({self.kv_heads}) "
                             "so that every key/value head serves the same number of query heads.")
        if self.pos == "rope" and (self.n_embd // self.n_head) % 2 != 0:
            raise ValueError(f"rotary positions turn channel pairs, so the head size D = "
                             f"{self.n_embd // self.n_head} must be even; change n_embd or n_head.")
        if self.rope_theta <= 0:
            raise ValueError(f"rope_theta must be positive, got {self.rope_theta}.")

    @property
    def head_size(self) -> int:
        """D, the width of one attention head: n_embd // n_head."""
        return self.n_embd // self.n_head

    @property
    def kv_heads(self) -> int:
        """H_kv, the key/value heads attention computes and caches: n_kv_head, or n_head."""
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    @property
    def hidden_size(self) -> int:
        """The MLP's hidden width: mlp_hidden, or 4 * n_embd."""
        return 4 * self.n_embd if self.mlp_hidden is None else self.mlp_hidden


#: Named model sizes, declared once. Every check builds its GPT from one of
#: these (``ctx.gpt``), changing only what its experiment is about.
PRESETS: dict[str, dict] = {
    # Seed 004, "The environment": the engine's own defaults, 804,224 parameters tied.
    "seed": dict(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128),
    # Two thin blocks (about 0.1 M parameters): trains in seconds on one CPU core.
    "small": dict(vocab_size=37, block_size=32, n_layer=2, n_head=2, n_embd=64),
    # GPT-2-small's sizes (seed 004, "Parameter accounting"); build it on the meta device.
    "gpt2-small": dict(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768),
    # The seed's sizes with the Llama-style block: rotary positions, 2 key/value heads
    # for 4 query heads, RMSNorm, a SwiGLU MLP whose hidden width 352 is 8C/3 rounded up
    # to a multiple of 32 (three matrices of C x 352 hold about what two of C x 4C do),
    # and no biases: 743,168 parameters tied.
    "llama-tiny": dict(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128, n_kv_head=2,
                       pos="rope", norm="rmsnorm", mlp="swiglu", mlp_hidden=352, bias=False),
}


def preset(name: str = "seed", **overrides) -> GPTConfig:
    """The ``GPTConfig`` named ``name`` in ``PRESETS``, with ``overrides`` applied.

    Args:
        name: a key of ``PRESETS`` ("seed", "small", "gpt2-small", "llama-tiny").
        overrides: any ``GPTConfig`` field, e.g. ``n_layer=1, dropout=0.2``.

    Raises:
        KeyError: if ``name`` is not a preset (the message lists them).
        TypeError: if an override is not a ``GPTConfig`` field.
        ValueError: if the resulting sizes are invalid (see ``GPTConfig``).
    """
    if name not in PRESETS:
        raise KeyError(f"there is no GPT preset {name!r}; the presets are {', '.join(PRESETS)}.")
    return GPTConfig(**{**PRESETS[name], **overrides})
