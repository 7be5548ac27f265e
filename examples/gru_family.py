"""An example third-party model family: ``gru``, a one-layer GRU.

How to use it:

    lengthbench check examples/gru_family.py
    lengthbench run --preset smoke --plugin examples/gru_family.py --models transformer,gru
    lengthbench submit examples/gru_family.py --preset smoke

The contract (see ``models/families.py``): register a builder
``build(vocab_size, size, runs)`` with ``@register_family``. It returns the
models of a group of runs as ONE module whose every weight has a leading run
dimension (``RunStack``): calling it on ``(R, B, T)`` tokens gives ``(R, B,
T, V)`` logits, each run computed with its own weights, initialised from
``runs[r].init_seed``, so a group of runs equals each run alone (``check``
tests that). Declare the forward FLOPs so ``run --plan`` can cost it.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.families import ModelSize, RunInit, register_family


def _per_run(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x (R, ..., in) @ W_r^T + b_r`` with each run's own weights."""
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    return torch.baddbmm(bias[:, None, :], flat, weight.transpose(1, 2)).view(*x.shape[:-1], -1)


class StackedGRU(nn.Module):
    def __init__(self, vocab_size: int, size: ModelSize, runs: list[RunInit]):
        super().__init__()
        self.n_runs, hidden = len(runs), size.d_model
        per_run = []
        for run in runs:
            torch.manual_seed(run.init_seed)  # each run's weights from its own seed
            gru, head = nn.GRUCell(hidden, hidden), nn.Linear(hidden, vocab_size)
            per_run.append({"embedding": nn.Embedding(vocab_size, hidden).weight, "w_ih": gru.weight_ih,
                            "w_hh": gru.weight_hh, "b_ih": gru.bias_ih, "b_hh": gru.bias_hh,
                            "head": head.weight, "head_bias": head.bias})
        self.weights = nn.ParameterDict({k: nn.Parameter(torch.stack([w[k].detach() for w in per_run]))
                                         for k in per_run[0]})

    def n_parameters(self, run: int) -> int:
        return sum(p.numel() for p in self.weights.values()) // self.n_runs

    def run_parameters(self, run: int) -> list[torch.Tensor]:
        return [p[run] for p in self.weights.values()]

    def run_gradients(self, run: int) -> list[torch.Tensor]:
        return [p.grad[run] for p in self.weights.values() if p.grad is not None]

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor:
        return torch.arange(tokens.shape[1], device=tokens.device)[None]  # a GRU reads no positions

    def forward(self, tokens: torch.Tensor, positions=None, runs=None) -> torch.Tensor:
        w = dict(self.weights.items())
        if runs is not None:
            index = torch.tensor(list(runs), device=tokens.device)
            w = {k: v.index_select(0, index) for k, v in w.items()}
        vocab = w["embedding"].shape[1]
        offsets = torch.arange(tokens.shape[0], device=tokens.device)[:, None, None] * vocab
        x = F.embedding(tokens + offsets, w["embedding"].flatten(0, 1))  # (R, B, T, H)
        inputs = _per_run(x, w["w_ih"], w["b_ih"])  # every step's input gates at once
        h, states = x.new_zeros(x.shape[0], x.shape[1], x.shape[-1]), []
        for t in range(tokens.shape[-1]):
            r_i, z_i, n_i = inputs[:, :, t].chunk(3, dim=-1)
            r_h, z_h, n_h = _per_run(h, w["w_hh"], w["b_hh"]).chunk(3, dim=-1)
            reset, update = torch.sigmoid(r_i + r_h), torch.sigmoid(z_i + z_h)
            h = (1 - update) * torch.tanh(n_i + reset * n_h) + update * h
            states.append(h)
        return _per_run(torch.stack(states, dim=2), w["head"], w["head_bias"])


def gru_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Per token: input and recurrent gate projections (2 x 3 x H x H multiply-adds), then the head."""
    n, hidden = np.asarray(token_lengths, dtype=float), size.d_model
    return float((n * (2 * 2 * 3 * hidden * hidden + 2 * hidden * vocab)).sum())


@register_family("gru", flops=gru_flops, description="one-layer GRU, hidden size d_model (example plugin)")
def build(vocab_size: int, size: ModelSize, runs: list[RunInit]) -> StackedGRU:
    return StackedGRU(vocab_size, size, runs)
