"""Training one run.

Each step draws a batch (task lengths uniform in 1..L_train, every batch
mixing lengths) from the run's data stream; AdamW with warmup + cosine decay
and gradient clipping. The step's examples are packed end to end into rows
(a model that packs sequences) or processed as a few length buckets (one
that does not; ``batching``), so the update is the one the whole padded
batch would give without computing its padding."""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lengthbench.benchmark.adamw import FusedAdamW
from lengthbench.benchmark.batching import length_buckets, packed_groups
from lengthbench.benchmark.checkpoints import Checkpoint
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.seeding import data_rng, position_generator
from lengthbench.models.encodings.base import project_encoding_parameters
from lengthbench.models.families import RunModel
from lengthbench.tasks import IGNORE, PAD, Batch, Task, make_batch

LOSS_CURVE_POINTS = 20

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    steps_done: int
    diverged: bool
    loss_curve: list[float]  # mean loss over LOSS_CURVE_POINTS equal windows
    final_loss: float
    step_losses: list[float]  # every step's loss (not stored in records)
    stopped: str = "max_steps"  # or "fit" (budget until fit) or "diverged"
    fit_checks: list[list] | None = None  # [step, held-out ID exact match] at each fit check


def batch_tensors(batch: Batch, device: torch.device) -> dict[str, torch.Tensor]:
    names = ("tokens", "targets", "scored", "position_ids", "seq_lens")
    return {n: torch.from_numpy(np.ascontiguousarray(getattr(batch, n))).to(device) for n in names}


def lr_at(step: int, config: RunConfig) -> float:
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return config.lr * 0.5 * (1 + math.cos(math.pi * progress))


def make_optimizer(model: RunModel, config: RunConfig) -> FusedAdamW:
    """AdamW, its fused kernel (one update pass over every parameter; measured
    on quick's model, one thread: about 0.4 ms a step in a profile, against
    1.2 ms for the default implementation timed alone), without ``torch.optim``'s start-up cost."""
    return FusedAdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)


@dataclass
class TrainState:
    """Everything a run's training carries from step to step (what a checkpoint saves)."""

    optimizer: FusedAdamW
    rng: np.random.Generator
    generator: torch.Generator
    losses: list[float]
    fit_checks: list[list]
    step: int = 0


def fresh_state(model: RunModel, config: RunConfig, device: torch.device) -> TrainState:
    return TrainState(make_optimizer(model, config), data_rng(config.seed), position_generator(config.seed, device),
                      [], [])


def resumed_state(model: RunModel, config: RunConfig, device: torch.device, checkpoint: Checkpoint | None) -> TrainState:
    """The state saved in ``checkpoint`` (the model loaded from it), or a
    fresh one when there is none or it does not load (then it is set aside
    and the model keeps its initial weights: never lose the run)."""
    state = fresh_state(model, config, device)
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is None:
        return state
    initial = copy.deepcopy(model.state_dict())
    try:
        if not _same_shapes(model, saved["model"]):
            raise ValueError("a model of another layout (saved by other code)")
        model.load_state_dict(saved["model"])
        state.optimizer.load_state_dict(saved["optimizer"])
        state.rng.bit_generator.state = saved["data_rng"]
        state.generator.set_state(saved["position_rng"])
        state.losses, state.step = [float(v) for v in saved["losses"]], int(saved["step"])
        state.fit_checks = saved.get("fit_checks", [])
        if not 0 < state.step < config.steps:
            raise ValueError(f"step {state.step}")
    except Exception as err:  # noqa: BLE001  (a damaged state: start over, never lose the run)
        checkpoint.set_aside(f"its state does not load: {type(err).__name__}: {err}")
        model.load_state_dict(initial)
        return fresh_state(model, config, device)
    log.info("%s: resumed from its checkpoint at step %d of %d", config.run_id, state.step, config.steps)
    return state


def training_batch(task: Task, config: RunConfig, rng: np.random.Generator) -> Batch:
    """The next batch of the run's data stream ``rng`` (lengths uniform in
    1..L_train): what a training step draws, and what ``unseen`` replays."""
    return make_batch(task, rng, rng.integers(task.min_length, config.train_length + 1, size=config.batch_size))


def train_step(model: RunModel, task: Task, config: RunConfig, state: TrainState, device: torch.device) -> float:
    """One optimizer step on a fresh batch; returns its loss (mean over the
    batch's target tokens). A non-finite loss leaves the weights untouched."""
    batch = training_batch(task, config, state.rng)
    t = batch_tensors(batch, device)
    positions = model.positions(t["tokens"], t["position_ids"], t["seq_lens"], state.generator)
    n_targets = float((batch.targets != IGNORE).sum())
    state.optimizer.lr = lr_at(state.step, config)
    state.optimizer.zero_grad()
    loss = torch.zeros((), device=device)
    for logits, targets in forward_passes(model, batch, t, positions, device):
        part = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                               reduction="sum") / n_targets
        part.backward()
        loss += part.detach()
    value = float(loss)
    if math.isfinite(value):
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        state.optimizer.step()
        project_encoding_parameters(model)
    state.step += 1
    return value


def forward_passes(model: RunModel, batch: Batch, t: dict, positions: torch.Tensor, device: torch.device):
    """The step's forward passes, ``(logits, targets)`` each: one per packed
    group for a model that packs sequences, else one per length bucket."""
    if model.packs_sequences:
        positions = positions.expand_as(t["tokens"]).flatten()
        for packing in packed_groups(batch.seq_lens, batch.tokens.shape[1]):
            source = torch.from_numpy(packing.source).to(device)
            padding, source = source < 0, source.clamp(min=0)
            tokens = t["tokens"].flatten()[source].masked_fill(padding, PAD)
            targets = t["targets"].flatten()[source].masked_fill(padding, IGNORE)
            yield model(tokens, positions[source], torch.from_numpy(packing.segment).to(device)), targets
        return
    for lo, hi in length_buckets(batch.seq_lens):
        width = int(batch.seq_lens[hi - 1])
        yield (model(t["tokens"][lo:hi, :width], positions[lo:hi, :width] if positions.shape[0] > 1
                     else positions[:, :width]), t["targets"][lo:hi, :width])


def train_run(model: RunModel, task: Task, config: RunConfig, device: torch.device, progress=None,
              checkpoint: Checkpoint | None = None, fit_check=None, live_log=None) -> TrainResult:
    """Train ``model`` in place for ``config.steps`` steps. A non-finite loss
    stops it there (``diverged``). With a budget until fit
    (``RunConfig.fit_check_every``), ``fit_check() -> held-out ID exact
    match`` is called every that many steps, and the run stops once it fit
    at ``fit_patience`` checks in a row (a patience of 0 only logs the
    checks: steps-to-fit as a diagnostic). With a ``checkpoint``, training
    resumes from its saved state and saves its state whenever it is due.
    With a ``live_log`` (``benchmark.live_log``), every step's loss and
    learning rate and every fit check are written to it as they happen."""
    every = config.fit_check_every if fit_check is not None else 0
    state = resumed_state(model, config, device, checkpoint)
    if progress is not None and state.step:
        progress.update(state.step)
    if live_log is not None and state.step:
        live_log.resume(state.step)
    model.train()
    stopped = "max_steps"
    while state.step < config.steps:
        value = train_step(model, task, config, state, device)
        if not math.isfinite(value):
            stopped = "diverged"
            break
        state.losses.append(value)
        if live_log is not None:
            live_log.step(state.step, value, state.optimizer.lr)
        if every and state.step % every == 0 and state.step < config.steps and _fitted(model, fit_check, state,
                                                                                       config, live_log):
            stopped = "fit"
            break
        if checkpoint is not None and checkpoint.due() and state.step < config.steps:
            checkpoint.save({"step": state.step, "model": model.state_dict(),
                             "optimizer": state.optimizer.state_dict(), "data_rng": state.rng.bit_generator.state,
                             "position_rng": state.generator.get_state(), "losses": state.losses,
                             "fit_checks": state.fit_checks})
        if progress is not None:
            progress.update(1)
            if state.step % 50 == 1:
                progress.set_postfix(loss=f"{value:.3f}")
    checks = state.fit_checks if every else None
    if stopped == "diverged":
        return TrainResult(state.step - 1, True, _curve(state.losses), float("nan"), state.losses, stopped, checks)
    tail = state.losses[-max(1, len(state.losses) // LOSS_CURVE_POINTS):]
    return TrainResult(state.step, False, _curve(state.losses), float(np.mean(tail)), state.losses, stopped, checks)


def _fitted(model: RunModel, fit_check, state: TrainState, config: RunConfig, live_log=None) -> bool:
    """Run the fit check, log it; True once the run fit at its last
    ``fit_patience`` checks (never with a patience of 0: checks only logged)."""
    score = fit_check()
    model.train()
    state.fit_checks.append([state.step, round(score, 6)])
    if live_log is not None:
        live_log.fit_check(state.step, score)
    if not config.fit_patience:
        return False
    recent = [s for _, s in state.fit_checks[-config.fit_patience:]]
    return len(recent) == config.fit_patience and min(recent) >= config.fit_threshold


def _same_shapes(model: RunModel, saved) -> bool:
    own = model.state_dict()
    return (isinstance(saved, dict) and set(own) == set(saved)
            and all(isinstance(saved[k], torch.Tensor) and own[k].shape == saved[k].shape for k in own))


def _curve(losses: list[float]) -> list[float]:
    if not losses:
        return []
    chunks = np.array_split(np.asarray(losses), min(LOSS_CURVE_POINTS, len(losses)))
    return [round(float(c.mean()), 5) for c in chunks]
