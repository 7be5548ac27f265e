"""The looped transformer: one shared unit of decoder layers, applied more
times the longer the input (Fan et al. 2024, "Looped Transformers for Length
Generalization").

The transformer's embedding (with the encoding's ``embed``), then its
layers (``size.n_layers``; Fan et al. loop one block: ``n_layers`` 1) as one
unit applied again and again with input injection, each pass reading the
input embedding afresh: ``h <- unit(h + x)`` from ``h = 0``; then the final
LayerNorm and the head. Only the last pass's output is read, so training
supervises the final output alone, as Fan et al. do (no loss on
intermediate passes).

How many passes: a token of an example gets one pass per input symbol read
so far, plus one: the count of input tokens (after ``<bos>``, before
``<sep>``) at or before it, so every token from ``<sep>`` on (the whole
answer) gets ``n_in + 1`` passes, ``n_in`` the input's token count. That is
Fan et al.'s schedule T(n) = n (parity and copy take one RASP-L step per
input symbol) up to the constant, applied in training and at test alike.
A token stops once it has had its passes and keeps its state; the tokens
still looping read it as it stands. Since the count depends only on the
tokens up to that one, the model stays causal, and greedy decoding sees the
same counts as the teacher-forced pass.

Where it departs from Fan et al.: their model predicts the whole answer at
once after the input (full-answer prediction) and stops at test time where
its prediction is most confident; here it predicts the next token like
every other family (so the benchmark scores it identically) and uses the
schedule at test time too (their "oracle" step count, set by the input
length alone). Their addition takes n+1 steps for n-digit operands; here
an n-digit addition's prompt (``2n+3`` symbols) gets ``2n+4`` passes.
Parameter matching is by width (a preset's ``family_settings``): one block
at a larger ``d_model`` against the fixed-depth transformer's layers
(``python -m lengthbench.benchmark.tools.matching``: 104 against 2 layers of 64).
"""

from __future__ import annotations

import numpy as np
import torch

from lengthbench.models.families import ModelSize, register_family
from lengthbench.models.transformer import Transformer, attention_mask, encoding_not_applicable
from lengthbench.tasks.base import BOS, PAD, SEP

LOOPED = "looped"


def passes_per_token(tokens: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
    """``(B, T)``: 1 + the number of input tokens (not ``<bos>``, ``<sep>`` or
    padding, and before the example's ``<sep>``) at or before each token of
    its example; with ``segments``, counted within each packed example."""
    if segments is None:
        segments = torch.zeros_like(tokens)
    starts = torch.ones_like(tokens, dtype=torch.bool)
    starts[:, 1:] = segments[:, 1:] != segments[:, :-1]

    def within_example(flags: torch.Tensor) -> torch.Tensor:
        """Running sum of ``flags`` restarting at each example's first token."""
        total = flags.long().cumsum(1)
        before = torch.where(starts, total - flags.long(), torch.zeros_like(total))
        return total - before.cummax(1).values

    after_sep = within_example(tokens == SEP) > 0
    reading = (tokens != BOS) & (tokens != SEP) & (tokens != PAD) & ~after_sep
    return 1 + within_example(reading)


class LoopedTransformer(Transformer):
    """``forward(tokens (B, T), positions (B|1, T), segments=None) -> logits (B, T, V)``:
    the transformer's layers (``size.n_layers`` of them; Fan et al.'s one
    block is ``n_layers`` 1) as one unit, looped (``passes_per_token``). Its
    layers and their order are the transformer's, so a seed gives the same
    weights as a transformer of the same size."""

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor,
                segments: torch.Tensor | None = None) -> torch.Tensor:
        x = self.dropout(self.encoding.embed(self.token_embedding(tokens), positions))
        mask = attention_mask(self.encoding, positions, tokens.shape[1], x.dtype, segments)
        passes = passes_per_token(tokens, segments)
        # Rows by their most-looped token, most first: a pass computes only the rows that still
        # loop (a prefix), so a packed batch's rows of short examples stop early.
        row_passes, order = passes.max(1).values.sort(descending=True, stable=True)
        x, passes = x[order], passes[order][..., None]
        positions, mask = (_rows(t, order) for t in (positions, mask))
        looping = row_passes.tolist()
        h = torch.zeros_like(x)
        for done in range(looping[0] if looping else 0):
            rows = sum(n > done for n in looping)
            step = h[:rows] + x[:rows]
            for block in self.blocks:
                step = block(step, self.encoding, _rows(positions, slice(rows)), _rows(mask, slice(rows)))
            h = torch.cat([torch.where(passes[:rows] > done, step, h[:rows]), h[rows:]])
        return self.head(self.ln_f(h))[order.argsort()]


def _rows(t: torch.Tensor | None, which) -> torch.Tensor | None:
    """``t``'s rows ``which`` (an order, or a slice); one shared by every row (or none) as it is."""
    return t if t is None or t.shape[0] == 1 else t[which]


def looped_flops(token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward FLOPs, taking a sequence's passes as its token count (an upper
    bound: its answer tokens add none), each pass the unit's layers over the
    whole sequence (as the forward computes it), then the head."""
    n = np.asarray(token_lengths, dtype=float)
    d, f = size.d_model, size.d_ff
    per_layer = 2 * n * (4 * d * d + 2 * d * f) + 2 * d * n * (n + 1)
    return float((n * size.n_layers * per_layer + 2 * n * d * vocab).sum())


register_family(LOOPED, rank=20, takes_encoding=True, flops=looped_flops, not_applicable=encoding_not_applicable,
                version=2,
                description="the transformer's layers as one shared unit, looped once per input token read, plus "
                            "one (Fan et al. 2024: one block, n_layers 1); takes a position encoding")(LoopedTransformer)
