"""Training one model on one task: lengths uniform in 1..L_train, every
batch mixing lengths; AdamW with warmup + cosine decay and gradient
clipping. A batch is processed as a few length buckets (``batching``) whose
token losses add up to the loss of the whole batch."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from benchmark.batching import training_batches
from benchmark.config import RunConfig
from benchmark.seeding import data_rng, init_seed, position_generator
from models import Transformer, build_encoding
from tasks import IGNORE, Batch, Task

LOSS_CURVE_POINTS = 20


@dataclass
class TrainResult:
    steps_done: int
    diverged: bool
    loss_curve: list[float]  # mean loss over LOSS_CURVE_POINTS equal windows
    final_loss: float


def build_model(config: RunConfig, task: Task, device: torch.device) -> Transformer:
    torch.manual_seed(init_seed(config.seed))
    encoding = build_encoding(config.encoding, config.model.d_model, config.model.n_heads,
                              config.encoding_params)
    return Transformer(task.vocab_size, config.model, encoding).to(device)


def batch_tensors(batch: Batch, device: torch.device) -> dict[str, torch.Tensor]:
    names = ("tokens", "targets", "scored", "position_ids", "seq_lens")
    return {n: torch.from_numpy(np.ascontiguousarray(getattr(batch, n))).to(device) for n in names}


def lr_at(step: int, config: RunConfig) -> float:
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return config.lr * 0.5 * (1 + math.cos(math.pi * progress))


def train(model: Transformer, task: Task, config: RunConfig, device: torch.device,
          progress=None) -> TrainResult:
    """Train in place; stops early (``diverged``) on a non-finite loss."""
    rng = data_rng(config.seed)
    gen = position_generator(config.seed, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    model.train()
    losses = []
    low = task.min_length
    for step in range(config.steps):
        lengths = rng.integers(low, config.train_length + 1, size=config.batch_size)
        batches = training_batches(task, rng, lengths)
        n_targets = sum(int((b.targets != IGNORE).sum()) for b in batches)  # on the host: no device sync
        buckets = [batch_tensors(b, device) for b in batches]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, config)
        optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for t in buckets:
            logits = model(t["tokens"], t["position_ids"], t["seq_lens"], gen)
            part = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(), ignore_index=IGNORE,
                                   reduction="sum") / n_targets
            part.backward()
            loss += part.detach()
        if not torch.isfinite(loss):
            return TrainResult(step, True, _curve(losses), float("nan"))
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        losses.append(float(loss))
        if progress is not None:
            progress.update(1)
            if step % 50 == 0:
                progress.set_postfix(loss=f"{losses[-1]:.3f}")
    tail = losses[-max(1, len(losses) // LOSS_CURVE_POINTS):]
    return TrainResult(config.steps, False, _curve(losses), float(np.mean(tail)))


def _curve(losses: list[float]) -> list[float]:
    if not losses:
        return []
    chunks = np.array_split(np.asarray(losses), min(LOSS_CURVE_POINTS, len(losses)))
    return [round(float(c.mean()), 5) for c in chunks]
