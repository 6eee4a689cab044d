"""Blocks laid out as real decoder-only GPTs lay them out, for RESIDUAL's test zoo, each in the GPT of
zoo_nano.py (token and position tables, the blocks, a final norm, a tied head). Written here, in the
style of the code named, not copied from it:

- ``PostNorm``: OPT-350m's layer (transformers' ``OPTDecoderLayer`` with ``do_layer_norm_before=False``):
  x = ln(x + attn(x)), then x = ln(x + fc2(act(fc1(x)))), fc1 and fc2 children of the layer itself;
- ``Sandwich``: Gemma 2's layer (``Gemma2DecoderLayer``): a norm before and after each branch,
  x + post(attn(pre(x))), RMSNorm gains kept as w and applied as (1 + w); ``SandwichLayerNorm`` the same
  with LayerNorms whose biases are not zero;
- ``Parallel``: GPT-J's layer (``GPTJBlock``): one norm, attention and MLP both read it,
  x + attn(h) + mlp(h);
- ``MixtureOfExperts``: Mixtral's layer (``MixtralDecoderLayer`` with ``MixtralSparseMoeBlock``): a
  router picks the top 2 of 4 experts per token, the experts' weights are 3-D Parameters
  (``gate_up_proj``, ``down_proj``), not ``nn.Linear``;
- ``QkNorm``: StableLM's layer (``StableLmDecoderLayer`` with ``qk_layernorm``): a LayerNorm per head over
  q and k, D wide, registered in the attention before the layer's own norms.

Each correct layout's ``build_*`` factory is clean; ``bug_*`` classes are the realistic mistakes of the
same code (bug_residual_layouts.py).
"""

import torch
import torch.nn as nn
from torch.nn import functional as F

import zoo_nano


class Attention(nn.Module):
    """Multi-head causal attention with separate q, k, v projections and an output projection (the
    names transformers' OPT, GPT-J, Gemma and Mixtral use: q_proj, k_proj, v_proj and out_proj/o_proj)."""

    output_name = "out_proj"

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.n_head, self.head_dim = config.n_head, C // config.n_head
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        setattr(self, self.output_name, nn.Linear(C, C))

    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.n_head, self.head_dim).transpose(1, 2)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = self.normalise(q, k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return getattr(self, self.output_name)(y.transpose(1, 2).reshape(B, T, C))

    def normalise(self, q, k):
        """q and k as the scores read them: unchanged here, normalised per head in ``QkNormAttention``."""
        return q, k


class PostNorm(nn.Module):
    """OPT-350m: post-norm, the MLP's fc1 and fc2 children of the layer."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.self_attn = Attention(config)
        self.self_attn_layer_norm = nn.LayerNorm(C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.final_layer_norm = nn.LayerNorm(C)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(F.relu(self.fc1(hidden_states)))
        return self.final_layer_norm(residual + hidden_states)


class RMSNorm(nn.Module):
    """Gemma's RMSNorm: the gain is stored as w, zero at init, and applied as (1 + w)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * (1.0 + self.weight.float())).type_as(x)


class GatedMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(C, 2 * C), nn.Linear(C, 2 * C), nn.Linear(2 * C, C)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class OAttention(Attention):
    output_name = "o_proj"


class Sandwich(nn.Module):
    """Gemma 2: a norm before and after each branch."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.self_attn, self.mlp = OAttention(config), GatedMLP(config)
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(C), RMSNorm(C)
        self.pre_feedforward_layernorm, self.post_feedforward_layernorm = RMSNorm(C), RMSNorm(C)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.post_attention_layernorm(self.self_attn(hidden_states))
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.post_feedforward_layernorm(self.mlp(hidden_states))
        return residual + hidden_states


class SandwichLayerNorm(Sandwich):
    """Gemma 2's layout with LayerNorms whose biases are not zero, as a trained checkpoint's are: the norm
    after a silenced branch gives its bias, not zero."""

    def __init__(self, config):
        super().__init__(config)
        for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            norm = nn.LayerNorm(config.n_embd)
            nn.init.normal_(norm.bias, std=0.1)
            setattr(self, name, norm)


class GPTJMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc_in, self.fc_out = nn.Linear(config.n_embd, 4 * config.n_embd), nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.fc_out(F.gelu(self.fc_in(x)))


class Parallel(nn.Module):
    """GPT-J: attention and MLP read the same normalised stream and are added to it together."""

    def __init__(self, config):
        super().__init__()
        self.ln_1, self.attn, self.mlp = nn.LayerNorm(config.n_embd), Attention(config), GPTJMLP(config)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        return self.attn(hidden_states) + self.mlp(hidden_states) + residual


class Experts(nn.Module):
    """Mixtral's experts: every expert's gated MLP in two 3-D Parameters, applied with F.linear."""

    def __init__(self, config, n_experts=4):
        super().__init__()
        C, hidden = config.n_embd, 2 * config.n_embd
        self.gate_up_proj = nn.Parameter(torch.randn(n_experts, 2 * hidden, C) * 0.02)
        self.down_proj = nn.Parameter(torch.randn(n_experts, C, hidden) * 0.02)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden_states)
        for e in range(self.gate_up_proj.size(0)):
            token, slot = torch.where(top_k_index == e)
            if token.numel() == 0:
                continue
            gate, up = F.linear(hidden_states[token], self.gate_up_proj[e]).chunk(2, dim=-1)
            h = F.linear(F.silu(gate) * up, self.down_proj[e]) * top_k_weights[token, slot, None]
            out.index_add_(0, token, h.to(out.dtype))
        return out


class SparseMoe(nn.Module):
    """Mixtral's sparse MoE block: a router (``gate``) over 4 experts, the top 2 per token, their weights
    renormalised; returns the mixture and the router's logits."""

    top_k = 2

    def __init__(self, config):
        super().__init__()
        self.gate, self.experts = nn.Linear(config.n_embd, 4, bias=False), Experts(config)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        flat = hidden_states.view(-1, C)
        router_logits = self.gate(flat)
        weights, index = torch.topk(F.softmax(router_logits.float(), dim=-1), self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(flat.dtype)
        return self.experts(flat, index, weights).view(B, T, C), router_logits


class MixtureOfExperts(nn.Module):
    """Mixtral: pre-norm, the MLP a sparse mixture of experts."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.self_attn, self.block_sparse_moe = OAttention(config), SparseMoe(config)
        self.input_layernorm, self.post_attention_layernorm = nn.RMSNorm(C), nn.RMSNorm(C)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = residual + self.self_attn(self.input_layernorm(hidden_states))
        residual = hidden_states
        hidden_states, _ = self.block_sparse_moe(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states


class PerHeadLayerNorm(nn.Module):
    """StableLM's ``StableLmLayerNormPerHead``: one LayerNorm of width D per head."""

    def __init__(self, dim, n_head):
        super().__init__()
        self.norms = nn.ModuleList([nn.LayerNorm(dim, bias=False) for _ in range(n_head)])

    def forward(self, t):  # (B, H, T, D)
        return torch.stack([norm(h) for norm, h in zip(self.norms, t.unbind(1))], dim=1)


class QkNormAttention(OAttention):
    def __init__(self, config):
        super().__init__(config)
        self.q_layernorm = PerHeadLayerNorm(self.head_dim, self.n_head)
        self.k_layernorm = PerHeadLayerNorm(self.head_dim, self.n_head)

    def normalise(self, q, k):
        return self.q_layernorm(q), self.k_layernorm(k)


class QkNorm(nn.Module):
    """StableLM: pre-norm, the attention's per-head qk LayerNorms registered before the layer's norms."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.self_attn, self.mlp = QkNormAttention(config), GatedMLP(config)
        self.input_layernorm, self.post_attention_layernorm = nn.LayerNorm(C), nn.LayerNorm(C)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = residual + self.self_attn(self.input_layernorm(hidden_states))
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


def gpt_of(block_class):
    """zoo_nano's GPT with ``block_class`` in every block (its constructor takes the config)."""

    class GPT(zoo_nano.GPT):
        pass

    GPT.block_class = block_class
    return GPT


def build(block_class):
    return zoo_nano.build(model_class=gpt_of(block_class))


def build_post_norm():
    return build(PostNorm)


def build_sandwich():
    return build(Sandwich)


def build_sandwich_layernorm():
    return build(SandwichLayerNorm)


def build_parallel():
    return build(Parallel)


def build_moe():
    return build(MixtureOfExperts)


def build_qk_norm():
    return build(QkNorm)
