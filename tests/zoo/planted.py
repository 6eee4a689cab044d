"""Planted bugs in the zoo's real GPTs: each factory builds a zoo subject and changes one thing.

The vendored files stay as published: a bug is planted by giving one of the
built model's modules a subclass with one method rewritten (``plant``), by
replacing a tensor after the build, or by writing the recipe's step wrong.
Each is a mistake seen in real code; ``BUGS`` names the link that must fail
first. The bugs need the package of their family (transformers for the
Hugging Face ones); the vendored nanoGPT and minGPT need nothing.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import subjects


def plant(model: nn.Module, original: type, replacement: type) -> nn.Module:
    """Give every module of class ``original`` inside ``model`` the class ``replacement`` (a subclass)."""
    for m in model.modules():
        if type(m) is original:
            m.__class__ = replacement
    return model


def _nano():
    import nanogpt.model as nano

    return nano


def _heads(attn, x):
    B, T, C = x.size()
    q, k, v = attn.c_attn(x).split(attn.n_embd, dim=2)
    return [t.view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2) for t in (q, k, v)]  # (B, H, T, D) each


def _merge(attn, y, x):
    B, T, C = x.size()
    return attn.resid_dropout(attn.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


def nanogpt_attention(kind: str):
    """nanoGPT whose attention is rewritten by hand with one mistake (``kind``)."""
    nano = _nano()

    class Planted(nano.CausalSelfAttention):
        def forward(self, x):
            q, k, v = _heads(self, x)
            T, C, D = x.size(1), x.size(2), q.size(-1)
            if kind == "mask removed":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=False)
                return _merge(self, y, x)
            scale = {"scale 1/sqrt(C)": 1 / math.sqrt(C), "scale missing": 1.0}.get(kind, 1 / math.sqrt(D))
            att = (q @ k.transpose(-2, -1)) * scale
            diagonal = 1 if kind == "mask off by one" else 0  # off by one: each position also sees the next
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=diagonal)
            att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            if kind == "dropout on in eval":
                att = F.dropout(att, 0.2, training=True)
            return _merge(self, att @ v, x)

    built = subjects.nanogpt(dropout=0.0)
    plant(built["model"], nano.CausalSelfAttention, Planted)
    return built


def nanogpt_block(kind: str):
    """nanoGPT whose block forward loses the residual or takes it from norm(x)."""
    nano = _nano()

    class Planted(nano.Block):
        def forward(self, x):
            if kind == "residual dropped":
                x = self.attn(self.ln_1(x))
            else:  # "residual from norm(x)"
                x = self.ln_1(x)
                x = x + self.attn(x)
            return x + self.mlp(self.ln_2(x))

    built = subjects.nanogpt(dropout=0.0)
    plant(built["model"], nano.Block, Planted)
    return built


def nanogpt_loss(kind: str):
    """nanoGPT whose loss shifts the targets again, or scores the inputs, or scores padding."""
    nano = _nano()

    class Planted(nano.GPT):
        def forward(self, idx, targets=None):
            if targets is None:
                return super().forward(idx)
            logits, _ = super().forward(idx, targets.clamp_min(0))  # nanoGPT's own loss ignores only -1
            V = logits.size(-1)
            if kind == "loss shifted twice":  # targets are already the next tokens
                loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), targets[:, 1:].reshape(-1))
            elif kind == "loss not shifted":
                loss = F.cross_entropy(logits.reshape(-1, V), idx.reshape(-1))
            else:  # "padding scored": -100 becomes the pad id 0 and is scored
                loss = F.cross_entropy(logits.reshape(-1, V), targets.clamp_min(0).reshape(-1))
            return logits, loss

    built = subjects.nanogpt(dropout=0.0, model_class=Planted)
    if kind == "padding scored":
        built["pad_id"] = 0
    return built


def nanogpt_untied_by_clone():
    """nanoGPT whose head is replaced by a copy of the token table (the tie the config promises, broken)."""
    built = subjects.nanogpt(dropout=0.0)
    model = built["model"]
    model.lm_head.weight = nn.Parameter(model.transformer.wte.weight.detach().clone())
    built["optimizer"] = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
    return built


def nanogpt_generate_not_cropping():
    nano = _nano()

    class Planted(nano.GPT):
        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                logits, _ = self(idx)  # the whole context, never cropped to block_size
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("inf")
                idx = torch.cat((idx, torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)), dim=1)
            return idx

    return subjects.nanogpt(dropout=0.0, model_class=Planted)


def nanogpt_decay_on_norms():
    """nanoGPT with one AdamW group decaying everything (LayerNorm gains and the embeddings too): a warning."""
    built = subjects.nanogpt()
    built["optimizer"] = torch.optim.AdamW(built["model"].parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    return built


def nanogpt_recipe(kind: str, micro: int = 2):
    """nanoGPT with train.py's step written wrong (``kind``)."""
    built = subjects.nanogpt()

    def train_step(model, optimizer, batch):
        x, y = batch
        for xm, ym in zip(x.chunk(micro), y.chunk(micro)):
            _, loss = model(xm, ym)
            (loss if kind == "unnormalised microbatches" else loss / micro).backward()
        if kind == "clip after step":
            optimizer.step()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        if kind != "missing zero_grad":
            optimizer.zero_grad(set_to_none=True)

    built["train_step"] = train_step
    return built


def nanogpt_not_learning():
    """nanoGPT whose optimizer is built with a learning rate a thousand times too small: it cannot learn."""
    return subjects.nanogpt(learning_rate=1e-6)


def mingpt_scheduler_first():
    """minGPT's trainer step with a warmup scheduler stepped before the optimizer."""
    built = subjects.mingpt()
    scheduler = torch.optim.lr_scheduler.LambdaLR(built["optimizer"], lambda step: min(1.0, (step + 1) / 10))

    def train_step(model, optimizer, batch):
        x, y = batch
        _, loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scheduler.step()
        optimizer.step()

    built["train_step"], built["scheduler"] = train_step, scheduler
    return built


def mingpt_attention(kind: str):
    from mingpt.model import CausalSelfAttention

    class Planted(CausalSelfAttention):
        def forward(self, x):
            B, T, C = x.size()
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                       for t in self.c_attn(x).split(self.n_embd, dim=2))
            scale = 1 / math.sqrt(C) if kind == "scale 1/sqrt(C)" else 1 / math.sqrt(k.size(-1))
            att = (q @ k.transpose(-2, -1)) * scale
            if kind != "mask removed":
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = self.attn_dropout(F.softmax(att, dim=-1)) @ v
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))

    built = subjects.mingpt()
    plant(built["model"], CausalSelfAttention, Planted)
    return built


def mingpt_residual_dropped():
    from mingpt.model import Block

    class Planted(Block):
        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return self.mlpf(self.ln_2(x))  # the MLP's residual is gone

    built = subjects.mingpt()
    plant(built["model"], Block, Planted)
    return built


def hf_llama_attention_scale(scaling: str):
    """Hugging Face Llama whose attention modules scale the scores by 1/sqrt(C), or not at all."""
    built = subjects.hf_llama()
    for m in built["model"].modules():
        if type(m).__name__ == "LlamaAttention":
            m.scaling = 1 / math.sqrt(subjects.C) if scaling == "scale 1/sqrt(C)" else 1.0
    return built


def hf_llama_rope_not_offset():
    """Hugging Face Llama whose forward numbers every chunk's positions from 0: in a cached step the
    rotary embedding is not offset by the cache length."""
    from transformers import LlamaForCausalLM

    class Planted(LlamaForCausalLM):
        @functools.wraps(LlamaForCausalLM.forward)
        def forward(self, input_ids=None, **kwargs):
            kwargs["position_ids"] = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
            return super().forward(input_ids=input_ids, **kwargs)

    built = subjects.hf_llama()
    built["model"].__class__ = Planted
    return built


def handwritten_hf_cache_wrong_axis():
    """The audit's own Hugging Face-style test model (tests/audit_models/zoo_hf.py, past_key_values as
    per-layer (k, v) tuples) whose cache appends new keys and values along the heads axis, not time."""
    import os
    import sys

    models = os.path.join(os.path.dirname(subjects.HERE), "audit_models")
    if models not in sys.path:
        sys.path.insert(0, models)
    import zoo_hf

    class Planted(zoo_hf.Attention):
        def forward(self, hidden_states, past_key_value=None, attention_mask=None, use_cache=False):
            B, T, C = hidden_states.shape
            q, k, v = (self.heads(p(hidden_states)) for p in (self.q_proj, self.k_proj, self.v_proj))  # (B, H, T, D)
            past = 0
            if past_key_value is not None:
                past = past_key_value[0].size(2)
                k, v = torch.cat([past_key_value[0], k], dim=1), torch.cat([past_key_value[1], v], dim=1)
            y = self.attend(q, k, v, past, attention_mask)
            return self.o_proj(y.transpose(1, 2).reshape(B, T, C)), ((k, v) if use_cache else None)

    built = zoo_hf.build()
    plant(built["model"], zoo_hf.Attention, Planted)
    return built


def transformer_lens_scale_c():
    """TransformerLens whose attention modules divide the scores by sqrt(C) instead of sqrt(D)."""
    built = subjects.transformer_lens()
    for m in built["model"].modules():
        if type(m).__name__ == "Attention" and hasattr(m, "attn_scale"):
            m.attn_scale = math.sqrt(subjects.C)
    return built


def meta_rope_not_offset():
    """The Meta-style model whose forward takes the rotary table from position 0 for every chunk: in a
    cached step the new token is rotated as if it were the first."""
    import meta_style

    class Planted(meta_style.Transformer):
        @torch.inference_mode()
        def forward(self, tokens, start_pos: int):
            B, T = tokens.shape
            h = self.tok_embeddings(tokens)
            self.freqs_cis = self.freqs_cis.to(h.device)
            freqs_cis = self.freqs_cis[:T]  # not [start_pos:start_pos + T]
            mask = None
            if T > 1:
                mask = torch.triu(torch.full((T, T), float("-inf"), device=tokens.device), diagonal=1)
                mask = torch.hstack([torch.zeros((T, start_pos), device=tokens.device), mask]).type_as(h)
            for layer in self.layers:
                h = layer(h, start_pos, freqs_cis, mask)
            return self.output(self.norm(h)).float()

    return {"model": Planted(meta_style.ModelArgs())}


def x_transformer_residual_dropped():
    """x-transformers whose residual modules return the layer's output alone: the stream is lost."""
    from x_transformers.x_transformers import Residual

    class Planted(Residual):
        def forward(self, x, residual, **kwargs):
            return x

    built = subjects.x_transformer()
    plant(built["model"], Residual, Planted)
    return built


P = functools.partial
#: name -> (factory, the link that must fail first, the package it needs or None).
BUGS = {
    "nanogpt: mask removed": (P(nanogpt_attention, "mask removed"), "CAUSALITY", None),
    "nanogpt: mask off by one": (P(nanogpt_attention, "mask off by one"), "CAUSALITY", None),
    "nanogpt: dropout on in eval": (P(nanogpt_attention, "dropout on in eval"), "EVAL", None),
    "nanogpt: untied head by clone": (nanogpt_untied_by_clone, "TIE", None),
    "nanogpt: residual dropped": (P(nanogpt_block, "residual dropped"), "RESIDUAL", None),
    "nanogpt: residual from norm(x)": (P(nanogpt_block, "residual from norm(x)"), "RESIDUAL", None),
    "nanogpt: loss shifted twice": (P(nanogpt_loss, "loss shifted twice"), "INIT", None),
    "nanogpt: loss not shifted": (P(nanogpt_loss, "loss not shifted"), "INIT", None),
    "nanogpt: padding scored": (P(nanogpt_loss, "padding scored"), "INIT", None),
    "nanogpt: generate not cropping": (nanogpt_generate_not_cropping, "GENERATE", None),
    "nanogpt: missing zero_grad": (P(nanogpt_recipe, "missing zero_grad"), "LOOP", None),
    "nanogpt: unnormalised microbatches": (P(nanogpt_recipe, "unnormalised microbatches"), "LOOP", None),
    "nanogpt: clip after step": (P(nanogpt_recipe, "clip after step"), "LOOP", None),
    "minGPT: scheduler before optimizer": (mingpt_scheduler_first, "LOOP", None),
    "minGPT: mask removed": (P(mingpt_attention, "mask removed"), "CAUSALITY", None),
    "minGPT: residual dropped": (mingpt_residual_dropped, "RESIDUAL", None),
    "HF Llama: RoPE not offset in the cached step": (hf_llama_rope_not_offset, "CACHE", "transformers"),
    "TransformerLens: scale 1/sqrt(C)": (transformer_lens_scale_c, "ATTENTION", "transformer_lens"),
    "Meta-style Llama: RoPE not offset in the cached step": (meta_rope_not_offset, "CACHE", None),
    "x-transformers: residual dropped": (x_transformer_residual_dropped, "RESIDUAL", "x_transformers"),
    "HF-style (hand-written): cache on the wrong axis": (handwritten_hf_cache_wrong_axis, "CACHE", None),
}
#: Bugs that need CAPABILITY's budget to show: name -> (factory, link).
TRAINING_BUGS = {"nanogpt: optimizer that does not learn (lr 1e-6)": (nanogpt_not_learning, "CAPABILITY")}
#: Planted departures from a convention that keep every contract, so warn and fail nothing:
#: name -> (factory, link, the warning's start, the package it needs or None). A scale other than
#: 1/sqrt(D) is one (muP trains at 1/D, GPT-Neo unscaled); TransformerLens' scale is not read from a
#: call, so its 1/sqrt(C) still fails (BUGS).
SCALE = "a scale other than 1/sqrt(D)"
WARNINGS = {
    "nanogpt: weight decay on norms and embeddings": (nanogpt_decay_on_norms, "OWNERSHIP", "weight decay 0.1 on", None),
    "nanogpt: scale 1/sqrt(C)": (P(nanogpt_attention, "scale 1/sqrt(C)"), "ATTENTION", SCALE, None),
    "nanogpt: scale missing": (P(nanogpt_attention, "scale missing"), "ATTENTION", SCALE, None),
    "minGPT: scale 1/sqrt(C)": (P(mingpt_attention, "scale 1/sqrt(C)"), "ATTENTION", SCALE, None),
    "HF Llama: scale 1/sqrt(C)": (P(hf_llama_attention_scale, "scale 1/sqrt(C)"), "ATTENTION", SCALE, "transformers"),
    "HF Llama: scale missing": (P(hf_llama_attention_scale, "scale missing"), "ATTENTION", SCALE, "transformers"),
}
