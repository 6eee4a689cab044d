"""Bugs (RESIDUAL), one in each block layout of zoo_layouts.py, as each code base's own style would
make it:

- post-norm (OPT-350m): the MLP's residual dropped, ``final_layer_norm(fc2(...))``: the norm after the
  branch sees only the branch;
- sandwich (Gemma 2): ``residual = hidden_states`` taken after the input norm, so the stream restarts
  from norm(x) in every layer;
- parallel (GPT-J): the residual added twice, left over from a sequential block, x + attn(h) + x + mlp(h);
- mixture of experts (Mixtral): the MoE block's output replaces the stream instead of adding to it;
- qk-norm (StableLM): the attention's residual dropped.
"""

from torch.nn import functional as F

import zoo_layouts


class PostNormDropped(zoo_layouts.PostNorm):
    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(residual + self.self_attn(hidden_states))
        return self.final_layer_norm(self.fc2(F.relu(self.fc1(hidden_states))))


class SandwichFromNorm(zoo_layouts.Sandwich):
    def forward(self, hidden_states):
        hidden_states = self.input_layernorm(hidden_states)
        residual = hidden_states
        hidden_states = residual + self.post_attention_layernorm(self.self_attn(hidden_states))
        residual = hidden_states
        hidden_states = self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(hidden_states)))
        return residual + hidden_states


class ParallelTwice(zoo_layouts.Parallel):
    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        return residual + self.attn(hidden_states) + (residual + self.mlp(hidden_states))


class MixtureReplaces(zoo_layouts.MixtureOfExperts):
    def forward(self, hidden_states):
        hidden_states = hidden_states + self.self_attn(self.input_layernorm(hidden_states))
        hidden_states, _ = self.block_sparse_moe(self.post_attention_layernorm(hidden_states))
        return hidden_states


class QkNormDropped(zoo_layouts.QkNorm):
    def forward(self, hidden_states):
        hidden_states = self.self_attn(self.input_layernorm(hidden_states))
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


def build_post_norm():
    return zoo_layouts.build(PostNormDropped)


def build_sandwich():
    return zoo_layouts.build(SandwichFromNorm)


def build_parallel():
    return zoo_layouts.build(ParallelTwice)


def build_moe():
    return zoo_layouts.build(MixtureReplaces)


def build_qk_norm():
    return zoo_layouts.build(QkNormDropped)
