"""Training batches without padding waste.

A training batch draws its task lengths uniformly from 1..L_train, so padding
every example to the longest one wastes about half of the tokens (and more of
the attention work, which grows with the square of the width). Instead the
batch's rows (in ascending length) are split into a few contiguous buckets,
chosen by an exact dynamic program to minimise padded tokens, with as few
buckets as keep the padding at or below ``MAX_PADDING``. The trainer runs one
forward and backward pass per bucket and sums token losses, so the update is
the one the whole padded batch would give: same examples, same loss, same
gradient. A group of runs is bucketed by rank: bucket rows ``lo:hi`` of
every run's batch (their i-th shortest examples have similar lengths, since
all draw from one distribution) share one stacked pass.
"""

from __future__ import annotations

import numpy as np

MAX_PADDING = 0.10  # share of a step's tokens that may be padding
# Solo batches need at most 7 buckets for 10% padding; a group bucketed by rank needs more
# (the i-th shortest examples of different runs differ a little): reference batches, 4 runs:
# 13 buckets for 9.9%; 16 runs: 16 buckets for 12.5%.
MAX_BUCKETS = 16
# A forward/backward pass has a fixed cost (kernel launches, Python), so a small batch is
# cheaper padded than split: at most one bucket per this many (estimated) padded tokens.
# Measured on 2 CPU cores: quick's copy batch (64 x ~19 tokens) ran 0.85x as fast in 4
# buckets as padded; the reference batch (128 x ~83 tokens) 1.5x faster in 7.
MIN_BUCKET_TOKENS = 1024


def length_buckets(widths: np.ndarray, n_runs: int = 1, real_tokens: float | None = None,
                   max_padding: float = MAX_PADDING, max_buckets: int = MAX_BUCKETS,
                   min_bucket_tokens: int = MIN_BUCKET_TOKENS) -> list[tuple[int, int]]:
    """Rank ranges ``(lo, hi)`` of the non-decreasing per-row ``widths``: the
    fewest contiguous buckets (up to ``max_buckets``, and one per
    ``min_bucket_tokens`` padded tokens) whose padding share against
    ``real_tokens`` (default: the widths' sum) is <= ``max_padding``, each
    the split that minimises padded tokens for its count. Every bucket is
    padded to its last width, for each of ``n_runs`` runs."""
    widths = np.asarray(widths, dtype=np.int64)
    values, counts = np.unique(widths, return_counts=True)  # sorted widths: contiguous runs of equal values
    m = len(values)
    real = float(widths.sum() * n_runs if real_tokens is None else real_tokens)
    max_buckets = max(1, min(max_buckets, int(values[-1] * counts.sum() * n_runs) // min_bucket_tokens))
    before = np.concatenate([[0], np.cumsum(counts)])
    width = values.astype(float) * n_runs
    # padded[k][j]: least padded tokens covering the first j distinct widths with k buckets
    padded = np.full((max_buckets + 1, m + 1), np.inf)
    cut = np.zeros((max_buckets + 1, m + 1), dtype=np.int64)
    padded[0, 0] = 0.0
    for k in range(1, max_buckets + 1):
        for j in range(1, m + 1):
            options = padded[k - 1, :j] + width[j - 1] * (before[j] - before[:j])
            cut[k, j] = int(np.argmin(options))
            padded[k, j] = options[cut[k, j]]
        if 1 - real / padded[k, m] <= max_padding or k == min(max_buckets, m):
            break
    edges, j = [], m
    for level in range(k, 0, -1):
        edges.append(j)
        j = cut[level, j]
    bounds = [0] + [int(before[e]) for e in reversed(edges)]
    return [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


def group_buckets(seq_lens: list[np.ndarray]) -> list[tuple[int, int, int]]:
    """Buckets ``(lo, hi, width)`` for one step of a group of runs, each
    batch's rows in ascending task length (``make_batch``'s order): bucket
    rows ``lo:hi`` of every run, truncated to ``width`` tokens (the longest
    real sequence among them), form one stacked forward pass."""
    stacked = np.stack([np.asarray(s, dtype=np.int64) for s in seq_lens])
    widths = np.maximum.accumulate(stacked.max(axis=0))  # non-decreasing by rank
    return [(lo, hi, int(stacked[:, lo:hi].max()))
            for lo, hi in length_buckets(widths, len(seq_lens), real_tokens=float(stacked.sum()))]
