"""The useful-FLOP count against torch's own count of the model's matmuls."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lengthbench.benchmark.flops import forward_flops, training_flops
from lengthbench.models import Transformer, build_encoding
from lengthbench.models.transformer import ModelSize


@pytest.mark.parametrize("n", [1, 13, 40])
def test_projection_and_head_flops_match_torch_count(n):
    size = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
    model = Transformer(11, size, build_encoding("nope", 32, 4)).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randint(0, 11, (1, n)))
    counted = sum(v for op, v in counter.get_flop_counts()["Global"].items()
                  if str(op) in ("aten.addmm", "aten.mm"))
    causal_attention = size.n_layers * 2 * size.d_model * n * (n + 1)  # scores + mixing, j <= i
    assert forward_flops([n], size, 11) - causal_attention == counted
    assert training_flops([n, n], size, 11) == 6 * forward_flops([n], size, 11)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "stack-rnn", "tape-rnn"])
@pytest.mark.parametrize("n", [1, 13])
def test_recurrent_flops_match_torch_count_of_their_matmuls(cell, n):
    """Every per-token projection and the head, as torch counts them; the
    stack's and tape's elementwise updates (not matmuls) on top."""
    from lengthbench.models.families import RunInit
    from lengthbench.models.recurrent import STACK_CELL, TAPE_ACTIONS, TAPE_CELL, StackedRecurrent

    size = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=32)
    model = StackedRecurrent(cell, 11, size, [RunInit(0)]).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randint(0, 11, (1, 1, n)))
    counted = sum(counter.get_flop_counts()["Global"].values())
    updates = {"stack-rnn": 3 * 2 * STACK_CELL * (n + 1) * n,
               "tape-rnn": TAPE_ACTIONS * 2 * TAPE_CELL * (2 * n + 2) * n}.get(cell, 0)
    assert forward_flops([n], size, 11, cell) - updates == counted
