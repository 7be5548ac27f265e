"""Recall tasks (level ``recall``): the answer is a value stored earlier in
the input under a key, read back when the key is queried.

Multi-query associative recall (MQAR) is the recall task of the 2024-26
architecture papers (Arora, Eyuboglu et al. 2024, "Zoology: Measuring and
Improving Recall in Efficient Language Models"; DeltaNet, Gated DeltaNet,
RWKV-7, Mamba-2, Based and others report it): a fixed-size recurrent state
must hold every key-value pair it has read, attention only has to find the
key again.
"""

from __future__ import annotations

import numpy as np

from lengthbench.tasks.base import Sample, Task, register_task

KEYS = 64  # our vocabulary: 64 keys and 64 values, so a 64-pair test (horizon's longest) has distinct keys
VALUES = 64
NO_TARGET = -1  # an input position trained on nothing (``Sample.input_targets``)


@register_task
class MultiQueryRecall(Task):
    """Multi-query associative recall, as Zoology's ``multiquery_ar`` generates it.

    Length N is the number of key-value pairs. Input (4N - 1 symbols): N
    pairs ``k v`` (N distinct keys from the key half of the vocabulary, N
    distinct values from the value half, each drawn uniformly without
    replacement), then the query region: every key once, in a uniformly
    random order, at every other position, each followed by a filler symbol
    drawn uniformly from the whole vocabulary (keys and values alike, as
    Zoology's ``random_non_queries``), the last query ending the input.
    Which key each query asks follows Zoology's placement: pair i takes the
    i-th of the query slots drawn without replacement with weights
    (j + 1) ** (power_a - 1), power_a = 0.01 (near slots first), so earlier
    pairs tend to be asked earlier (the last query asks the last pair 29% of
    the time at 8 pairs, not 12.5%; ``tests/test_recall.py`` compares).
    Output: the value stored under the last query's key.

    Each earlier query is trained on its value at its own position (what
    Zoology's labels hold; ``Sample.input_targets``, never scored, never fed
    back: the symbol after a query is filler, as in Zoology), so the model
    learns recall from all N queries and is scored on the last.

    Differences from Zoology, chosen for the suite's one-answer framing and
    its size: (1) one query is scored per example, the last (Zoology
    averages over every query; the last is a uniformly random key, as each
    of theirs is, so the expected accuracy is the same when accuracy does
    not depend on a query's place); (2) the sequence is 4N tokens, Zoology's
    shortest for N pairs (its input_seq_len >= 4N; at exactly 4N, as at its
    256-token, 64-pair setting, every slot of the query region holds a query
    and the power law decides only their order); longer sequences with
    spaced queries and filler between them are left out, so length
    here is pairs and tokens together (Zoology's 4x test extrapolates both);
    (3) a vocabulary of 64 keys and 64 values (Zoology: 8,192 tokens, keys
    1..4095, values 4096..8191, 0 the filler before replacement), so that
    the embedding and output layers stay a small part of a ~100k-parameter
    model and a 64-pair test still has distinct keys (``max_length`` 64).
    """

    name = "mqar"
    rank = 10
    level = "recall"
    symbols = tuple(f"k{i}" for i in range(KEYS)) + tuple(f"v{i}" for i in range(VALUES))
    description = "multi-query associative recall (Zoology): N key-value pairs, then every key queried; the last query's value"
    output_rule = "1"
    max_length = min(KEYS, VALUES)
    power_a = 0.01  # Zoology's: how strongly queries follow their pairs' order

    def input_length(self, length):
        return 4 * length - 1

    def sample(self, rng, length, batch_size):
        n = length
        keys = rng.permuted(np.tile(np.arange(KEYS), (batch_size, 1)), axis=1)[:, :n]
        values = KEYS + rng.permuted(np.tile(np.arange(VALUES), (batch_size, 1)), axis=1)[:, :n]
        # Zoology's placement: pair i takes the i-th query slot drawn without replacement, slot j weighted
        # (j + 1) ** (power_a - 1) (a power law: near slots first), drawn all at once by Gumbel top-k
        weights = np.log(np.arange(1, n + 1) ** (self.power_a - 1))
        slot_of_pair = np.argsort(-(weights + rng.gumbel(size=(batch_size, n))), axis=1)
        order = np.argsort(slot_of_pair, axis=1)  # the pair each query slot asks
        rows = np.arange(batch_size)[:, None]
        x = np.empty((batch_size, 4 * n), dtype=np.int64)
        x[:, 0:2 * n:2], x[:, 1:2 * n:2] = keys, values
        x[:, 2 * n::2] = keys[rows, order]
        x[:, 2 * n + 1::2] = rng.integers(0, KEYS + VALUES, size=(batch_size, n))  # filler
        targets = np.full((batch_size, 4 * n - 1), NO_TARGET, dtype=np.int64)
        targets[:, 2 * n:4 * n - 2:2] = values[rows, order][:, :-1]  # every query but the last, at its own place
        return Sample(x[:, :-1], values[rows, order][:, -1:], input_targets=targets)

    def answer_chance(self, length):
        return 1 / VALUES  # each pair's value is uniform over the value half, whichever pair is asked

    def solve(self, inputs):
        n = (len(inputs) + 1) // 4
        stored = dict(zip(inputs[0:2 * n:2], inputs[1:2 * n:2]))
        return [stored[inputs[-1]]]
