"""Training batches without padding waste.

A training batch draws its task lengths uniformly from 1..L_train, so padding
every example to the longest one wastes about half of the tokens (and more of
the attention work, which grows with the square of the width). Instead the
batch's rows (in ascending length) are split into a few contiguous buckets,
chosen by an exact dynamic program to minimise padded tokens, with as few
buckets as keep the padding at or below ``MAX_PADDING``. The trainer runs one
forward and backward pass per bucket and sums token losses, so the update is
the one the whole padded batch would give: same examples, same loss, same
gradient.

A model that can attend within segments of a row (``RunModel.packs_sequences``:
the transformer) gets no padding at all to speak of: ``pack`` lays the
batch's examples end to end into rows as wide as its longest example
(best-fit decreasing), each slot marked with its example's segment, so that
attention stays inside each example and every position keeps the position
its example gave it. A large batch is packed in two groups, its shorter and
its longer examples (``packed_groups``), so the short ones sit in narrower
rows, where attention costs less. The same examples, loss and gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_PADDING = 0.10  # share of a step's tokens that may be padding
MAX_BUCKETS = 16  # the reference batches need at most 7 for 10% padding
# A forward/backward pass has a fixed cost (kernel launches, Python), so a small batch is
# cheaper padded than split: at most one bucket per this many (estimated) padded tokens.
# Measured on 2 CPU cores: quick's copy batch (64 x ~19 tokens) ran 0.85x as fast in 4
# buckets as padded; the reference batch (128 x ~83 tokens) 1.5x faster in 7.
MIN_BUCKET_TOKENS = 1024
# Real tokens per packed group, at most MAX_PACK_GROUPS groups. Measured (2 CPU threads): the
# reference batch (128 x ~43 tokens) trains 1.09x as fast in two groups as in one (three: no
# better); quick's (64 x ~11 tokens) stays one group (two: 0.77x).
PACK_GROUP_TOKENS = 2048
MAX_PACK_GROUPS = 2


def length_buckets(widths: np.ndarray, max_padding: float = MAX_PADDING, max_buckets: int = MAX_BUCKETS,
                   min_bucket_tokens: int = MIN_BUCKET_TOKENS) -> list[tuple[int, int]]:
    """Row ranges ``(lo, hi)`` of the non-decreasing per-row ``widths``: the
    fewest contiguous buckets (up to ``max_buckets``, and one per
    ``min_bucket_tokens`` padded tokens) whose padding share is <=
    ``max_padding``, each the split that minimises padded tokens for its
    count. Every bucket is padded to its last width."""
    widths = np.asarray(widths, dtype=np.int64)
    values, counts = np.unique(widths, return_counts=True)  # sorted widths: contiguous runs of equal values
    m = len(values)
    real = float(widths.sum())
    max_buckets = max(1, min(max_buckets, int(values[-1] * counts.sum()) // min_bucket_tokens))
    before = np.concatenate([[0], np.cumsum(counts)])
    width = values.astype(float)
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


@dataclass(frozen=True)
class Packing:
    """Where a padded batch's tokens go in packed rows: ``source[r, s]`` is the
    flat index (row x width + column) of the padded batch's token that slot s
    of packed row r holds, ``segment[r, s]`` which of the row's examples it
    belongs to; both are -1 for a padding slot."""

    source: np.ndarray
    segment: np.ndarray


def packed_groups(seq_lens: np.ndarray, width: int) -> list[Packing]:
    """The examples of a padded batch (``seq_lens`` real tokens each, in
    ascending order; rows ``width`` wide) as one packing per group of about
    ``PACK_GROUP_TOKENS`` real tokens (at most ``MAX_PACK_GROUPS``),
    contiguous in length, each indexing the whole padded batch."""
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    ends = np.cumsum(seq_lens)
    groups = int(np.clip(ends[-1] // PACK_GROUP_TOKENS, 1, MAX_PACK_GROUPS))
    cuts = [0, *(int(np.searchsorted(ends, ends[-1] * g / groups)) for g in range(1, groups)), len(seq_lens)]
    packings = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi > lo:
            part = pack(seq_lens[lo:hi], width)
            packings.append(Packing(np.where(part.source >= 0, part.source + lo * width, -1), part.segment))
    return packings


def pack(seq_lens: np.ndarray, width: int) -> Packing:
    """The examples of a padded batch (``seq_lens`` real tokens each, rows
    ``width`` wide) packed best-fit decreasing into rows as wide as the longest."""
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    lengths = seq_lens.tolist()
    row_width = max(lengths)
    free: list[int] = []  # room left in each row
    row_of, start_of, segment_of = [0] * len(lengths), [0] * len(lengths), [0] * len(lengths)
    filled: list[int] = []  # examples in each row
    for example in sorted(range(len(lengths)), key=lengths.__getitem__, reverse=True):
        need, best = lengths[example], -1
        for row, room in enumerate(free):
            if need <= room and (best < 0 or room < free[best]):
                best = row
        if best < 0:
            best = len(free)
            free.append(row_width)
            filled.append(0)
        row_of[example], start_of[example], segment_of[example] = best, row_width - free[best], filled[best]
        free[best] -= need
        filled[best] += 1
    examples = np.repeat(np.arange(len(lengths)), seq_lens)  # every real token's example
    within = np.arange(len(examples)) - np.repeat(np.cumsum(seq_lens) - seq_lens, seq_lens)
    source = np.full((len(free), row_width), -1, dtype=np.int64)
    segment = np.full((len(free), row_width), -1, dtype=np.int64)
    at = (np.asarray(row_of)[examples], np.asarray(start_of)[examples] + within)
    source[at] = examples * width + within
    segment[at] = np.asarray(segment_of)[examples]
    return Packing(source, segment)
