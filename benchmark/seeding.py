"""One master seed derives every random stream of a run.

Streams are independent children of ``numpy.random.SeedSequence([seed, k])``
so that changing, say, the number of evaluation lengths never shifts the
training data.
"""

from __future__ import annotations

import numpy as np
import torch

DATA, INIT, POSITIONS, FIT_CHECK = 0, 1, 2, 3


def _state(*key: int) -> int:
    return int(np.random.SeedSequence(list(key)).generate_state(1, dtype=np.uint64)[0] >> 1)


def data_rng(seed: int) -> np.random.Generator:
    """Training data stream."""
    return np.random.default_rng([seed, DATA])


def init_seed(seed: int) -> int:
    """Seed for weight initialisation (``torch.manual_seed``)."""
    return _state(seed, INIT)


def position_generator(seed: int, device: torch.device) -> torch.Generator:
    """Training-time stream for randomized positions and coupling offsets."""
    return torch.Generator(device=device).manual_seed(_state(seed, POSITIONS))


def eval_streams(eval_seed: int, length: int, device: torch.device):
    """Evaluation data and eval-time positions for one length: independent of
    the run seed and of which other lengths are evaluated."""
    rng = np.random.default_rng([eval_seed, length])
    gen = torch.Generator(device=device).manual_seed(_state(eval_seed, length, POSITIONS))
    return rng, gen


def fit_check_streams(eval_seed: int, length: int, device: torch.device):
    """Held-out data and positions for the in-training fit check at one
    length: neither training batches nor the reported evaluation's examples."""
    rng = np.random.default_rng([eval_seed, length, FIT_CHECK])
    gen = torch.Generator(device=device).manual_seed(_state(eval_seed, length, POSITIONS, FIT_CHECK))
    return rng, gen
