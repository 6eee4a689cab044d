"""Bug (CACHE): positions restart at 0 for every call instead of continuing from the
cache's length, so a cached token is embedded at the wrong position."""

import torch

import zoo_hf


class HFGPT(zoo_hf.HFGPT):
    def positions(self, past, T, device):
        return torch.arange(T, device=device).unsqueeze(0)


def build():
    return zoo_hf.build(HFGPT)
