"""The useful-FLOP count of every family against torch's own count of the
matmuls it runs, and of the elementwise arithmetic of the stack and tape
updates, counted op by op as they run."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from lengthbench.benchmark.flops import forward_flops, training_flops
from lengthbench.models import ModelSize, build_encoding, build_model
from lengthbench.models.contract import logits_of
from lengthbench.models.recurrent import STACK_CELL, TAPE_CELL, update_stack, update_tape

ARITHMETIC = (torch.ops.aten.mul.Tensor, torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor)


class FloatArithmetic(TorchDispatchMode):
    """Counts one FLOP per floating-point output element of every elementwise
    multiply, add and subtract, and one per element a sum removes."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            if func in ARITHMETIC:
                self.flops += out.numel()
            elif func is torch.ops.aten.sum.dim_IntList:
                self.flops += args[0].numel() - out.numel()
        return out


def _matmul_flops(model, tokens) -> int:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(tokens)
    return sum(counter.get_flop_counts()["Global"].values())


@pytest.mark.parametrize("n", [1, 13, 40])
def test_projection_and_head_flops_match_torch_count(n):
    size = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
    model = build_model("transformer", 11, size, 0, lambda: build_encoding("nope", 32, 4)).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        logits_of(model, torch.randint(0, 11, (1, n)))
    counted = sum(v for op, v in counter.get_flop_counts()["Global"].items()
                  if str(op) in ("aten.addmm", "aten.mm"))
    causal_attention = size.n_layers * 2 * size.d_model * n * (n + 1)  # scores + mixing, j <= i
    assert forward_flops([n], size, 11) - causal_attention == counted
    assert training_flops([n, n], size, 11) == 6 * forward_flops([n], size, 11)


def _update_flops(cell: str, n: int) -> int:
    """The elementwise FLOPs of one step's stack or tape update in a sequence of n tokens."""
    counter = FloatArithmetic()
    with counter, torch.no_grad():
        if cell == "stack-rnn":
            update_stack(torch.rand(1, n + 1, STACK_CELL), torch.rand(1, 3), torch.rand(1, STACK_CELL))
        elif cell == "tape-rnn":
            update_tape(torch.rand(1, 2 * n + 2, TAPE_CELL), torch.rand(1, 5), torch.rand(1, TAPE_CELL),
                        torch.tensor([1]))
    return counter.flops


@pytest.mark.parametrize("cell", ["rnn", "lstm", "stack-rnn", "tape-rnn"])
@pytest.mark.parametrize("n", [1, 13])
def test_recurrent_flops_match_the_operations_they_run(cell, n):
    """Every per-token projection and the head, as torch counts matmuls; the
    stack's and tape's updates (elementwise, once per token), counted as
    they run."""
    size = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=32)
    model = build_model(cell, 11, size, 0).eval()
    expected = _matmul_flops(model, torch.randint(0, 11, (1, n))) + n * _update_flops(cell, n)
    assert forward_flops([n], size, 11, cell) == expected
    if cell in ("stack-rnn", "tape-rnn"):
        assert _update_flops(cell, n) > 0
