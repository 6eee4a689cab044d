"""Bug (TIE): the config declares tied embeddings, but tie_weights copies the table
into a new Parameter: equal at the start, trained apart."""

import torch.nn as nn

import zoo_hf


class HFGPT(zoo_hf.HFGPT):
    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = nn.Parameter(self.wte.weight.detach().clone())


def build():
    return zoo_hf.build(HFGPT)
