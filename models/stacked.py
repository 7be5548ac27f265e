"""Several transformers of one shape run as one model.

``StackedTransformer`` takes R ``Transformer``s (one per run of a group:
same vocabulary and size, any encodings, their own initial weights) and
stacks every weight outside the encodings along a new leading *run*
dimension, so one batched matmul serves all runs. Each run keeps its own
encoding module: the encoding hooks are applied per run, and attention runs
per run when an encoding adds a logit bias (its mask differs by run).

Numerically each run computes what its own ``Transformer`` would (layer
norms and attention are per run; a batched matmul computes each run's
product on its own), so a group of runs trains like the runs one by one.
Dropout works for a stack of one only: its masks come from the process-wide
random stream, which runs of a group cannot each own.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding
from lengthbench.models.families import TRANSFORMER, RunInit, register_family
from lengthbench.models.transformer import ModelSize, Transformer, attention_mask, encoded_positions, with_content_bias



class RunStack(Protocol):
    """What the trainer and evaluation need from a model family: R models of
    one shape behind one module. ``weights`` hold the parameters stacked on a
    leading run dimension, ``run_parameters(r)`` those only run r has,
    ``run_gradients(r)`` all of run r's gradients;
    ``positions`` gives run r's positions for a batch (the family may ignore
    them); ``forward`` maps ``(R', B, T)`` tokens of the chosen runs to
    ``(R', B, T, V)`` logits."""

    n_runs: int
    weights: nn.ParameterDict

    def run_parameters(self, run: int) -> list[torch.Tensor]: ...

    def run_gradients(self, run: int) -> list[torch.Tensor]: ...

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor: ...

    def __call__(self, tokens: torch.Tensor, positions: list[torch.Tensor],
                 runs: list[int] | None = None) -> torch.Tensor: ...


def _overrides(encoding: PositionEncoding, hook: str) -> bool:
    return getattr(type(encoding), hook) is not getattr(PositionEncoding, hook)


class StackedTransformer(nn.Module):
    """``forward(tokens (R, B, T), positions [R x (B|1, T)], runs) -> logits (R, B, T, V)``.

    ``runs`` picks a subset of the stacked runs (default: all), in order;
    ``tokens`` and ``positions`` then hold those runs only."""

    def __init__(self, models: list[Transformer]):
        super().__init__()
        if not models:
            raise ValueError("a stack needs at least one model")
        first = models[0]
        self.size, self.n_runs = first.size, len(models)
        if self.size.dropout and len(models) > 1:
            raise ValueError("runs with dropout train alone (dropout masks come from one shared stream)")
        shared = [name for name, _ in first.named_parameters() if not name.startswith("encoding.")]
        for model in models[1:]:
            if model.size != first.size or model.head.out_features != first.head.out_features:
                raise ValueError("stacked models must share vocabulary and size")
        params = [dict(m.named_parameters()) for m in models]
        self.weights = nn.ParameterDict([  # pairs keep the models' order (a plain dict would be sorted)
            (_key(name), nn.Parameter(torch.stack([p[name].detach() for p in params]).clone()))
            for name in shared
        ])
        self.encodings = nn.ModuleList(m.encoding for m in models)
        # where a run's encoding parameters sit among its model's parameters (clipping sums in that order)
        self._encoding_at = next((i for i, (name, _) in enumerate(first.named_parameters())
                                  if name.startswith("encoding.")), len(shared))

    def run_parameters(self, run: int) -> list[torch.Tensor]:
        """Parameters of one run's own encoding (the stacked weights hold the rest)."""
        return list(self.encodings[run].parameters())

    def run_gradients(self, run: int) -> list[torch.Tensor]:
        """Run r's gradients (views into the stacked ones), in the order of
        its own model's parameters, so that a norm over them rounds as the
        solo model's would."""
        stacked = [p.grad[run] for p in self.weights.values() if p.grad is not None]
        own = [p.grad for p in self.run_parameters(run) if p.grad is not None]
        return stacked[:self._encoding_at] + own + stacked[self._encoding_at:]

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor:
        """One run's positions for a ``(B, T)`` batch (``encoded_positions``)."""
        return encoded_positions(self.encodings[run], tokens, position_ids, seq_lens, self.training, generator)

    def forward(self, tokens: torch.Tensor, positions: list[torch.Tensor],
                runs: list[int] | None = None) -> torch.Tensor:
        runs = list(range(self.n_runs)) if runs is None else list(runs)
        w = self._weights(runs)
        encodings = [self.encodings[r] for r in runs]
        n_runs, b, t = tokens.shape
        vocab = w["token_embedding.weight"].shape[1]
        offsets = torch.arange(n_runs, device=tokens.device)[:, None, None] * vocab
        h = F.embedding(tokens + offsets, w["token_embedding.weight"].flatten(0, 1))
        h = self._dropout(_per_run(h, encodings, "embed", lambda enc, x, i: enc.embed(x, positions[i])))
        masks = [attention_mask(enc, pos, t, h.dtype) for enc, pos in zip(encodings, positions)]
        for layer in range(self.size.n_layers):
            p = f"blocks.{layer}."
            x = _layer_norm(h, w[p + "ln1.weight"], w[p + "ln1.bias"])
            h = h + _linear(self._attention(_linear(x, w, p + "attn.qkv"), encodings, positions, masks), w,
                            p + "attn.out")
            x = _layer_norm(h, w[p + "ln2.weight"], w[p + "ln2.bias"])
            h = h + self._dropout(_linear(F.gelu(_linear(x, w, p + "mlp.0")), w, p + "mlp.2"))
        return _linear(_layer_norm(h, w["ln_f.weight"], w["ln_f.bias"]), w, "head")

    def _dropout(self, x):
        return F.dropout(x, self.size.dropout, self.training) if self.size.dropout else x

    def _weights(self, runs: list[int]) -> dict[str, torch.Tensor]:
        every = runs == list(range(self.n_runs))
        index = None if every else torch.tensor(runs, device=next(iter(self.weights.values())).device)
        return {_name(key): (p if every else p.index_select(0, index)) for key, p in self.weights.items()}

    def _attention(self, qkv, encodings, positions, masks):
        n_runs, b, t, _ = qkv.shape
        heads = self.size.n_heads
        q, k, v = qkv.view(n_runs, b, t, 3, heads, -1).permute(3, 0, 1, 4, 2, 5)  # (R, B, H, T, Dh) each
        if any(_overrides(enc, "rotate") for enc in encodings):
            pairs = [enc.rotate(a, c, pos) for enc, a, c, pos in zip(encodings, _split(q), _split(k), positions)]
            q, k = _join([a for a, _ in pairs]), _join([c for _, c in pairs])
        if any(_overrides(enc, "content_bias") for enc in encodings):
            masks = [with_content_bias(enc, a, c, pos, m)
                     for enc, a, c, pos, m in zip(encodings, _split(q), _split(k), positions, masks)]
        if all(m is None for m in masks):
            y = F.scaled_dot_product_attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), is_causal=True,
                                               dropout_p=self.size.dropout if self.training else 0.0,
                                               ).view(n_runs, b, heads, t, -1)
        else:
            y = _join([
                F.scaled_dot_product_attention(a, c, e, attn_mask=m, is_causal=m is None,
                                               dropout_p=self.size.dropout if self.training else 0.0)
                for a, c, e, m in zip(_split(q), _split(k), _split(v), masks)
            ])
        return y.transpose(2, 3).reshape(n_runs, b, t, -1)


def _split(x: torch.Tensor) -> list[torch.Tensor]:
    """Per-run views of a stacked tensor. ``unbind``/``squeeze``, not
    indexing: the backward of ``x[i]`` writes a zero-filled copy of the
    whole stack for every run."""
    return [x.squeeze(0)] if x.shape[0] == 1 else list(x.unbind())


def _join(parts: list[torch.Tensor]) -> torch.Tensor:
    """Inverse of ``_split`` (a view, not a copy, for a stack of one)."""
    return parts[0].unsqueeze(0) if len(parts) == 1 else torch.stack(parts)


def _key(name: str) -> str:
    return name.replace(".", ":")


def _name(key: str) -> str:
    return key.replace(":", ".")


def _per_run(h, encodings, hook, apply):
    """Apply an encoding hook run by run, skipping runs whose encoding keeps the identity."""
    if not any(_overrides(enc, hook) for enc in encodings):
        return h
    return _join([apply(enc, x, i) if _overrides(enc, hook) else x
                  for i, (enc, x) in enumerate(zip(encodings, _split(h)))])


def _layer_norm(x, weight, bias):
    """Per-run affine layer norm (one fused call per run, as ``nn.LayerNorm``)."""
    return _join([F.layer_norm(a, x.shape[-1:], w, b) for a, w, b in zip(_split(x), _split(weight), _split(bias))])


def _linear(x, w, name):
    """``x (R, B, T, in) -> (R, B, T, out)`` with run r's weight and bias."""
    weight, bias = w[name + ".weight"], w[name + ".bias"]
    n_runs, b, t, _ = x.shape
    if n_runs == 1:  # exactly ``nn.Linear``, forward and backward, so a solo run rounds as a plain model
        return F.linear(x.squeeze(0), weight.squeeze(0), bias.squeeze(0)).unsqueeze(0)
    y = torch.baddbmm(bias[:, None, :], x.reshape(n_runs, b * t, -1), weight.transpose(1, 2))
    return y.view(n_runs, b, t, -1)


@register_family(TRANSFORMER, takes_encoding=True,
                 description="decoder-only pre-LayerNorm transformer; takes a position encoding")
def build_transformers(vocab_size: int, size: ModelSize, runs: list[RunInit]) -> StackedTransformer:
    """Each run's ``Transformer`` (seeded, then its encoding built, as a solo
    run is), stacked."""
    return StackedTransformer([seeded_transformer(vocab_size, size, run) for run in runs])


def seeded_transformer(vocab_size: int, size: ModelSize, run: RunInit) -> Transformer:
    torch.manual_seed(run.init_seed)
    return Transformer(vocab_size, size, run.make_encoding())
