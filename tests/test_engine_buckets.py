"""engine.generate.left_pad's bucket: the width rounded up to a multiple, the answer unchanged."""

import pytest
import torch

from engine.config import preset
from engine.generate import generate_batch, left_pad
from engine.model import GPT


def test_left_pad_rounds_the_width_up_to_the_bucket():
    idx, pads = left_pad([[5, 6, 7], [8]], pad_id=0, multiple=4)
    assert idx.tolist() == [[0, 5, 6, 7], [0, 0, 0, 8]] and pads.tolist() == [1, 3]
    idx, pads = left_pad([[1, 2, 3, 4, 5]], pad_id=9, multiple=4)  # 5 rounds up to 8
    assert idx.tolist() == [[9, 9, 9, 1, 2, 3, 4, 5]] and pads.tolist() == [3]
    assert left_pad([[1, 2, 3, 4]], pad_id=0, multiple=4)[0].shape == (1, 4)  # already a multiple
    assert torch.equal(left_pad([[1], [2, 3]], 0)[0], left_pad([[1], [2, 3]], 0, multiple=1)[0])


def test_left_pad_refuses_a_bucket_below_one():
    with pytest.raises(ValueError, match="multiple must be 1 or more"):
        left_pad([[1]], pad_id=0, multiple=0)


def test_a_bucketed_batch_gives_each_prompt_its_own_last_logits():
    torch.manual_seed(0)
    model = GPT(preset("small")).eval()
    prompts = [[3, 4, 5, 6, 7], [8, 9]]
    with torch.no_grad():
        for multiple in (1, 8):
            idx, pads = left_pad(prompts, 0, multiple=multiple)
            cache = model.new_cache(2)
            for layer in cache:
                layer.pads = pads
            batched = model(idx, cache=cache)[0][:, -1]  # (2, V)
            for b, p in enumerate(prompts):
                alone = model(torch.tensor([p]))[0][0, -1]  # (V,)
                assert (batched[b] - alone).abs().max().item() < 1e-5
    assert generate_batch(model, prompts, 3)[1][:2] == [8, 9]
