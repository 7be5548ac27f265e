"""Whether a grid cell has a result to compute, decided before it trains.

The planner's check of a cell (``plan.py`` prices none where it says no), made
again by the runner, which records such a cell as not applicable instead of
training it: a format that cannot write the task, the family's own rule (an
encoding the task cannot feed), or an encoding that cannot place the longest
evaluated sequence (a randomized range or a position table too short). It
also counts the parameters an evaluated sequence can reach (the parameter
check's count). Both build the encoding and runs its positions on one example, so it lives
here and not in the config, which stays plain data.
"""

from __future__ import annotations

import numpy as np
import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.models.encodings import ENCODINGS, PositionEncoding, PositionsOutOfRange, build_encoding
from lengthbench.models.families import family_entry
from lengthbench.models.transformer import encoded_positions
from lengthbench.tasks import get_task, make_batch
from lengthbench.tasks.formats import label_not_applicable


def not_applicable(config: RunConfig) -> str | None:
    """Why ``config``'s cell has no result to compute, or None."""
    reason = label_not_applicable(config.task)
    if reason is not None:
        return reason
    encoding = config.make_encoding()
    reason = family_entry(config.family).not_applicable(get_task(config.task), encoding)
    if reason is None and encoding is not None:
        reason = out_of_range(config, encoding)
    return None if reason is None else f"{config.file_method} {reason}"


def longest_batch(config: RunConfig):
    """One example at ``config``'s longest evaluated task length, and that length."""
    length = max(config.eval_lengths())
    return make_batch(get_task(config.task), np.random.default_rng(0), np.array([length])), length


def reachable_parameters(config: RunConfig, n_parameters: int) -> int:
    """``n_parameters`` (the run's model) less its encoding's parameters that
    no evaluated sequence can reach (a learned table's rows past the longest
    one): the count the parameter check compares."""
    if config.encoding not in ENCODINGS:  # none (a family without one), or a plugin not loaded here
        return n_parameters
    taken = ENCODINGS[config.encoding].defaults  # a record of an earlier version may name parameters since dropped
    encoding = build_encoding(config.encoding, config.model.d_model, config.model.n_heads,
                              {k: v for k, v in config.encoding_params.items() if k in taken})
    longest = int(longest_batch(config)[0].tokens.shape[1])
    own = sum(p.numel() for p in encoding.parameters())
    return n_parameters - own + encoding.reachable_parameters(longest)


def out_of_range(config: RunConfig, encoding: PositionEncoding) -> str | None:
    """Why ``encoding`` cannot place ``config``'s longest evaluated sequence,
    or None: such a cell is refused at plan time, never scored 0 at its long lengths."""
    batch, length = longest_batch(config)
    tokens = torch.from_numpy(batch.tokens)
    try:
        with torch.no_grad():  # the positions, and the tables they index (learned, coupled, abacus)
            pos = encoded_positions(encoding, tokens, torch.from_numpy(batch.position_ids),
                                    torch.from_numpy(batch.seq_lens), False, torch.Generator().manual_seed(0))
            encoding.embed(torch.zeros(*tokens.shape, config.model.d_model), pos)
    except PositionsOutOfRange as err:
        return f"cannot place the longest evaluated sequence (task length {length}): {err}"
    return None
