"""Hugging Face architectures in the styles the field writes GPTs in, at a tiny random-weight size.

Each factory builds one transformers architecture from its config (no
download, no checkpoint): V = 37 (the audit corpus' characters), 2 layers,
4 heads, C = 64 (head size D = 16), block 32 where the architecture has
positions, dropout off. Each stands for a style the audit must hold clean:

- ``bloom``: ALiBi added to the scores through ``alibi.baddbmm``, heads
  folded into the batch, no position table.
- ``falcon_rw``: Falcon's RW layout (falcon-rw-1b): ALiBi, sequential block.
- ``falcon``: Falcon-7B's layout: multi-query attention (one kv head),
  attention and MLP in parallel from one LayerNorm, rotary.
- ``gpt_neo``: unscaled scores (no 1/sqrt(D)), global and local layers.
- ``gemma2``: soft-capped scores, ``query_pre_attn_scalar``, sandwich norms,
  a sliding window, GQA, a soft-capped head.
- ``stablelm``: per-head qk LayerNorm, partial rotary.
- ``mixtral`` and ``qwen2_moe``: mixture-of-experts MLPs (experts kept as
  3-D tensors, not ``nn.Linear``), GQA; Qwen2-MoE adds a gated shared expert.
- ``opt``: post-norm blocks (``do_layer_norm_before=False``, OPT-350m's layout).
- ``codegen``: a packed qkv projection in the model-parallel layout.
- ``phi``: attention and MLP in parallel, partial rotary.
- ``qwen2``: grouped-query attention (two kv heads), q/k/v biases.
- ``gptj``: a parallel block with interleaved rotary.

They train with the audit's AdamW.
"""

from __future__ import annotations

V, BLOCK, LAYERS, HEADS, C = 37, 32, 2, 4, 64


def _built(model):
    return {"model": model}


def bloom():
    from transformers import BloomConfig, BloomForCausalLM

    config = BloomConfig(vocab_size=V, hidden_size=C, n_layer=LAYERS, n_head=HEADS, hidden_dropout=0.0,
                         attention_dropout=0.0)
    return _built(BloomForCausalLM(config))


def falcon_rw():
    from transformers import FalconConfig, FalconForCausalLM

    config = FalconConfig(vocab_size=V, hidden_size=C, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                          alibi=True, multi_query=False, parallel_attn=False, new_decoder_architecture=False,
                          bias=True, hidden_dropout=0.0, attention_dropout=0.0, max_position_embeddings=BLOCK)
    return _built(FalconForCausalLM(config))


def falcon():
    from transformers import FalconConfig, FalconForCausalLM

    config = FalconConfig(vocab_size=V, hidden_size=C, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                          alibi=False, multi_query=True, parallel_attn=True, new_decoder_architecture=False,
                          bias=False, hidden_dropout=0.0, attention_dropout=0.0, max_position_embeddings=BLOCK)
    return _built(FalconForCausalLM(config))


def gpt_neo():
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    config = GPTNeoConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_layers=LAYERS,
                          num_heads=HEADS, attention_types=[[["global", "local"], LAYERS // 2]], window_size=4,
                          intermediate_size=4 * C, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0)
    return _built(GPTNeoForCausalLM(config))


def gemma2():
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                          num_attention_heads=HEADS, num_key_value_heads=2, head_dim=C // HEADS,
                          intermediate_size=4 * C, query_pre_attn_scalar=2 * C // HEADS, attn_logit_softcapping=50.0,
                          final_logit_softcapping=30.0, sliding_window=4, attention_dropout=0.0)
    return _built(Gemma2ForCausalLM(config))


def stablelm(attention_dropout=0.0):
    from transformers import StableLmConfig, StableLmForCausalLM

    config = StableLmConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                            num_attention_heads=HEADS, num_key_value_heads=HEADS, intermediate_size=4 * C,
                            qk_layernorm=True, partial_rotary_factor=0.25, use_parallel_residual=False,
                            hidden_dropout=0.0, attention_dropout=attention_dropout)
    return _built(StableLmForCausalLM(config))


def mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=2 * C,
                           num_local_experts=4, num_experts_per_tok=2, attention_dropout=0.0)
    return _built(MixtralForCausalLM(config))


def qwen2_moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    config = Qwen2MoeConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                            num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=2 * C,
                            moe_intermediate_size=C, shared_expert_intermediate_size=2 * C, num_experts=4,
                            num_experts_per_tok=2, attention_dropout=0.0)
    return _built(Qwen2MoeForCausalLM(config))


def opt():
    from transformers import OPTConfig, OPTForCausalLM

    config = OPTConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS, ffn_dim=4 * C, word_embed_proj_dim=C, do_layer_norm_before=False,
                       dropout=0.0, attention_dropout=0.0, pad_token_id=1)
    return _built(OPTForCausalLM(config))


def codegen():
    from transformers import CodeGenConfig, CodeGenForCausalLM

    config = CodeGenConfig(vocab_size=V, n_positions=BLOCK, n_ctx=BLOCK, n_embd=C, n_layer=LAYERS, n_head=HEADS,
                           rotary_dim=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _built(CodeGenForCausalLM(config))


def phi():
    from transformers import PhiConfig, PhiForCausalLM

    config = PhiConfig(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS, intermediate_size=4 * C, partial_rotary_factor=0.5,
                       resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0)
    return _built(PhiForCausalLM(config))


def qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=V, max_position_embeddings=BLOCK, hidden_size=C, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=4 * C,
                         attention_dropout=0.0)
    return _built(Qwen2ForCausalLM(config))


def gptj():
    from transformers import GPTJConfig, GPTJForCausalLM

    config = GPTJConfig(vocab_size=V, n_positions=BLOCK, n_embd=C, n_layer=LAYERS, n_head=HEADS, rotary_dim=4,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _built(GPTJForCausalLM(config))


#: Every style, smallest first: name -> its factory (each needs transformers).
STYLES = {"bloom": bloom, "falcon_rw": falcon_rw, "falcon": falcon, "gpt_neo": gpt_neo, "gemma2": gemma2,
          "stablelm": stablelm, "mixtral": mixtral, "qwen2_moe": qwen2_moe, "opt": opt, "codegen": codegen,
          "phi": phi, "qwen2": qwen2, "gptj": gptj}
