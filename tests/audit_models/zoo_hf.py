"""A small GPT with a Hugging Face-style interface, for the audit's test zoo (independent of engine/).

forward(input_ids, past_key_values=None, attention_mask=None, position_ids=None,
labels=None, use_cache=None) returns an object with .logits, .loss and
.past_key_values; labels are the inputs, shifted inside (position t is
scored against labels[:, t + 1]). Separate q, k, v projections, a per-layer
(k, v) cache, tied embeddings declared by ``config.tie_word_embeddings``.
"""

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
from torch.nn import functional as F

from zoo_nano import ALPHABET


@dataclass
class HFConfig:
    vocab_size: int = 38  # the 37 characters and a padding token
    n_positions: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    tie_word_embeddings: bool = True


@dataclass
class CausalLMOutput:
    logits: torch.Tensor
    loss: Optional[torch.Tensor] = None
    past_key_values: Optional[tuple] = None


class CharTokenizer:
    """Characters to ids, with a padding token after them."""

    def __init__(self):
        self.stoi = {c: i for i, c in enumerate(ALPHABET)}
        self.itos = dict(enumerate(ALPHABET))
        self.pad_token_id = len(ALPHABET)
        self.vocab_size = len(ALPHABET) + 1

    def encode(self, text):
        return [self.stoi[c] for c in text]

    def decode(self, ids):
        return "".join(self.itos.get(i, "") for i in ids)


def offset_causal_mask(past, T, device):
    """(T, past + T) bool: query i (at position past + i) may see key j iff j <= past + i."""
    q = torch.arange(past, past + T, device=device).unsqueeze(1)
    k = torch.arange(past + T, device=device).unsqueeze(0)
    return k <= q


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.num_heads, self.head_dim = config.n_head, C // config.n_head
        self.q_proj, self.k_proj = nn.Linear(C, C), nn.Linear(C, C)
        self.v_proj, self.o_proj = nn.Linear(C, C), nn.Linear(C, C)

    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, past_key_value=None, attention_mask=None, use_cache=False):
        B, T, C = hidden_states.shape
        q, k, v = (self.heads(p(hidden_states)) for p in (self.q_proj, self.k_proj, self.v_proj))
        past = 0
        if past_key_value is not None:
            past = past_key_value[0].size(2)
            k, v = torch.cat([past_key_value[0], k], dim=2), torch.cat([past_key_value[1], v], dim=2)
        y = self.attend(q, k, v, past, attention_mask)
        out = self.o_proj(y.transpose(1, 2).reshape(B, T, C))
        return out, ((k, v) if use_cache else None)

    def attend(self, q, k, v, past, attention_mask):
        T = q.size(2)
        if past == 0 and attention_mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        mask = offset_causal_mask(past, T, q.device)  # (T, past + T)
        if attention_mask is not None:  # (B, past + T), 1 for real tokens
            mask = mask & attention_mask[:, None, None, :].bool()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Block(nn.Module):
    attention_class = Attention

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = self.attention_class(config)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, hidden_states, past_key_value=None, attention_mask=None, use_cache=False):
        attn_out, present = self.attn(self.ln_1(hidden_states), past_key_value, attention_mask, use_cache)
        hidden_states = hidden_states + attn_out
        return hidden_states + self.mlp(self.ln_2(hidden_states)), present


class HFGPT(nn.Module):
    block_class = Block

    def __init__(self, config=None):
        super().__init__()
        self.config = config = config or HFConfig()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.h = nn.ModuleList([self.block_class(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.wte.weight

    def get_input_embeddings(self):
        return self.wte

    def get_output_embeddings(self):
        return self.lm_head

    def positions(self, past, T, device):
        return torch.arange(past, past + T, device=device).unsqueeze(0)

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, labels=None,
                use_cache=None):
        B, T = input_ids.shape
        past = past_key_values[0][0].size(2) if past_key_values is not None else 0
        if position_ids is None:
            position_ids = self.positions(past, T, input_ids.device)
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for i, block in enumerate(self.h):
            x, present = block(x, None if past_key_values is None else past_key_values[i], attention_mask,
                               bool(use_cache))
            presents.append(present)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if labels is not None:
            shift_logits, shift_labels = logits[:, :-1].contiguous(), labels[:, 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1),
                                   ignore_index=-100)
        return CausalLMOutput(logits=logits, loss=loss, past_key_values=tuple(presents) if use_cache else None)


def build(model_class=HFGPT, config=None):
    """The factory's dict: the model, AdamW, its own tokenizer and padding id."""
    model = model_class(config or HFConfig())
    tokenizer = CharTokenizer()
    return {"model": model, "optimizer": torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0),
            "tokenizer": tokenizer, "pad_id": tokenizer.pad_token_id}
