"""One realistic bug planted in each Hugging Face style of tests/zoo/hf_styles.py.

transformers' files stay as published: a bug is planted by giving the built
model's modules a subclass with one method rewritten (``planted.plant``), by
replacing a tensor after the build, or by handing the model an attention
function of its own through transformers' ``AttentionInterface`` (the way a
user plugs in a custom kernel), written with the mistake. ``BUGS`` names, for
each, the link that must fail first; every one breaks a contract a correct
GPT keeps (causality, its own heads' keys and values, the residual stream,
cached = full, eval determinism, the tie).
"""

from __future__ import annotations

import functools

import torch
import torch.nn as nn

import hf_styles
from planted import plant


def _subclass(model: nn.Module, class_name: str, forward) -> nn.Module:
    """Give every module of class ``class_name`` in ``model`` a subclass whose forward is ``forward(self,
    original, *args, **kwargs)``, ``original`` the class's own forward."""
    original = next(type(m) for m in model.modules() if type(m).__name__ == class_name)
    planted = type(f"Planted{class_name}", (original,),
                   {"forward": lambda self, *a, **k: forward(self, original.forward, *a, **k)})
    return plant(model, original, planted)


def _attention_function(name: str, function) -> str:
    """Register ``function`` as transformers attention implementation ``name`` (idempotent) and return it."""
    from transformers import AttentionInterface

    AttentionInterface.register(name, function)
    return name


def _use_attention(built: dict, name: str) -> dict:
    built["model"].set_attn_implementation(name)
    return built


# --- ATTENTION -------------------------------------------------------------------

def bloom_alibi_sign_flipped():
    """BLOOM whose attention adds ALiBi with the distance's sign flipped (slopes x (i - j) where the
    model builds slopes x j, i.e. -slopes x (i - j)): each query favours the keys furthest in its past."""
    def forward(self, original, hidden_states, residual, alibi, *args, **kwargs):
        return original(self, hidden_states, residual, -alibi, *args, **kwargs)

    built = hf_styles.bloom()
    _subclass(built["model"], "BloomAttention", forward)
    return built


def _kv_tiled(module, query, key, value, attention_mask, **kwargs):
    """SDPA attention whose shared kv heads are tiled with ``repeat`` (query head h reads kv head
    h mod Hkv) where grouped-query attention groups them (``repeat_interleave``: h // (H / Hkv))."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    n = query.size(1) // key.size(1)
    key, value = key.repeat(1, n, 1, 1), value.repeat(1, n, 1, 1)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def kv_tiled(style: str):
    """A grouped-query model (two kv heads for four query heads) whose attention tiles its kv heads."""
    return _use_attention(getattr(hf_styles, style)(), _attention_function("zoo_kv_tiled", _kv_tiled))


# --- CAUSALITY -------------------------------------------------------------------

def _next_position_let_in(mask: torch.Tensor | None) -> torch.Tensor | None:
    """A 4-D causal mask (bool: True attends; float: 0 attends, a large negative hides) that also lets
    each query read the key one position after its own: ``triu(..., diagonal=2)`` where 1 was meant."""
    if mask is None or mask.dim() != 4:
        return mask
    T, S = mask.shape[-2:]
    next_key = torch.ones(T, S, dtype=torch.bool, device=mask.device).triu(S - T + 1) & \
        ~torch.ones(T, S, dtype=torch.bool, device=mask.device).triu(S - T + 2)
    return mask | next_key if mask.dtype == torch.bool else mask.masked_fill(next_key, 0.0)


def mask_off_by_one(style: str, layer: str):
    """A model (eager attention, so its causal mask is always built) whose decoder layers get a causal
    mask shifted by one: each position also sees the next."""
    def forward(self, original, *args, **kwargs):
        kwargs["attention_mask"] = _next_position_let_in(kwargs.get("attention_mask"))
        return original(self, *args, **kwargs)

    built = getattr(hf_styles, style)()
    built["model"].set_attn_implementation("eager")
    _subclass(built["model"], layer, forward)
    return built


# --- EVAL ------------------------------------------------------------------------

def _dropout_in_eval(module, query, key, value, attention_mask, dropout=0.0, **kwargs):
    """SDPA attention handed the module's dropout rate whether or not it is training (the
    ``0.0 if not self.training`` left out)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=module.attention_dropout,
                                  **kwargs)


def stablelm_dropout_in_eval():
    """StableLM (attention dropout 0.1) whose attention applies its dropout in eval mode too."""
    built = hf_styles.stablelm(attention_dropout=0.1)
    return _use_attention(built, _attention_function("zoo_dropout_in_eval", _dropout_in_eval))


# --- RESIDUAL --------------------------------------------------------------------

def gemma2_residual_from_norm():
    """Gemma 2's sandwich block with its residual taken after the input norm (x = norm(x); x = x +
    post_norm(attn(x))): the stream no longer carries the block's input."""
    def forward(self, original, hidden_states, position_embeddings=None, attention_mask=None, position_ids=None,
                cache=None, **kwargs):
        hidden_states = self.input_layernorm(hidden_states)
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, position_embeddings=position_embeddings,
                                          attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                                          **kwargs)
        hidden_states = residual + self.post_attention_layernorm(hidden_states)
        residual = hidden_states
        hidden_states = self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(hidden_states)))
        return residual + hidden_states

    built = hf_styles.gemma2()
    _subclass(built["model"], "Gemma2DecoderLayer", forward)
    return built


def mixtral_moe_residual_dropped():
    """Mixtral whose block returns the experts' output alone (``hidden_states = self.mlp(...)`` without
    ``residual +``): the stream is lost after every mixture-of-experts MLP."""
    def forward(self, original, hidden_states, position_embeddings=None, attention_mask=None, position_ids=None,
                cache=None, **kwargs):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states=self.input_layernorm(hidden_states),
                                          position_embeddings=position_embeddings, attention_mask=attention_mask,
                                          position_ids=position_ids, cache=cache, **kwargs)
        hidden_states = residual + hidden_states
        return self.mlp(self.post_attention_layernorm(hidden_states))

    built = hf_styles.mixtral()
    _subclass(built["model"], "MixtralDecoderLayer", forward)
    return built


def opt_post_norm_residual_dropped():
    """OPT-350m's post-norm block whose attention output replaces the stream (norm(attn(x)) where
    norm(x + attn(x)) was meant)."""
    def forward(self, original, hidden_states, attention_mask=None, cache=None, use_cache=False, position_ids=None,
                **kwargs):
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, cache=cache, position_ids=position_ids,
                                          attention_mask=attention_mask, **kwargs)
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(self.activation_fn(self.fc1(hidden_states)))
        return self.final_layer_norm(residual + hidden_states)

    built = hf_styles.opt()
    _subclass(built["model"], "OPTDecoderLayer", forward)
    return built


def gptj_parallel_residual_dropped():
    """GPT-J's parallel block returning attention + MLP without the block's input."""
    def forward(self, original, hidden_states, attention_mask=None, position_ids=None, cache=None, use_cache=False,
                position_embeddings=None, **kwargs):
        h = self.ln_1(hidden_states)
        attn_output, _ = self.attn(hidden_states=h, position_embeddings=position_embeddings,
                                   attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                                   use_cache=use_cache, **kwargs)
        return attn_output + self.mlp(h)

    built = hf_styles.gptj()
    _subclass(built["model"], "GPTJBlock", forward)
    return built


# --- CACHE -----------------------------------------------------------------------

def rotary_not_offset(style: str):
    """A rotary model whose forward numbers every chunk's positions from 0: in a cached step the new
    tokens are rotated as if they were the first."""
    built = getattr(hf_styles, style)()
    model = built["model"]
    base = type(model)

    class Planted(base):
        @functools.wraps(base.forward)
        def forward(self, input_ids=None, **kwargs):
            kwargs["position_ids"] = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
            return super().forward(input_ids=input_ids, **kwargs)

    model.__class__ = Planted
    return built


# --- TIE -------------------------------------------------------------------------

def gpt_neo_untied_by_clone():
    """GPT-Neo (its config ties the head to the token table) whose head is replaced by a copy of the table,
    as a checkpoint loader that clones every tensor leaves it."""
    built = hf_styles.gpt_neo()
    model = built["model"]
    model.lm_head.weight = nn.Parameter(model.transformer.wte.weight.detach().clone())
    return built


P = functools.partial
#: name -> (factory, the link that must fail first); each needs transformers.
BUGS = {
    "BLOOM: ALiBi with the distance's sign flipped": (bloom_alibi_sign_flipped, "ATTENTION"),
    "Falcon-RW: causal mask shifted by one": (P(mask_off_by_one, "falcon_rw", "FalconDecoderLayer"), "CAUSALITY"),
    "Falcon: rotary not offset in the cached step": (P(rotary_not_offset, "falcon"), "CACHE"),
    "GPT-Neo: head untied by clone": (gpt_neo_untied_by_clone, "TIE"),
    "Gemma 2: residual from norm(x)": (gemma2_residual_from_norm, "RESIDUAL"),
    "StableLM: attention dropout in eval": (stablelm_dropout_in_eval, "EVAL"),
    "Mixtral: MoE output replaces the stream": (mixtral_moe_residual_dropped, "RESIDUAL"),
    "Qwen2-MoE: kv heads tiled, not grouped": (P(kv_tiled, "qwen2_moe"), "ATTENTION"),
    "OPT post-norm: residual dropped": (opt_post_norm_residual_dropped, "RESIDUAL"),
    "CodeGen: causal mask shifted by one": (P(mask_off_by_one, "codegen", "CodeGenBlock"), "CAUSALITY"),
    "Phi: partial rotary not offset in the cached step": (P(rotary_not_offset, "phi"), "CACHE"),
    "Qwen2: kv heads tiled, not grouped": (P(kv_tiled, "qwen2"), "ATTENTION"),
    "GPT-J: parallel residual dropped": (gptj_parallel_residual_dropped, "RESIDUAL"),
}
