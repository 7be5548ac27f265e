"""Training a group of runs on one task, as one stacked model.

Each step every run draws its own batch (task lengths uniform in
1..L_train, every batch mixing lengths) from its own data stream; AdamW
with warmup + cosine decay and gradient clipping, per run. The step's
examples are processed as a few length buckets (``batching``) whose token
losses add up to the loss of each run's whole batch. A group of one is a
solo run, and a run trains the same in any group: its data, positions and
update never depend on the other runs."""

from __future__ import annotations

import copy
import json
import logging
import math
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from lengthbench.benchmark.batching import group_buckets
from lengthbench.benchmark.checkpoints import Checkpoint
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.seeding import data_rng, position_generator
from lengthbench.models.families import FAMILIES, RunStack
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


def widen(batch: Batch, width: int) -> Batch:
    """``batch`` padded on the right to ``width`` tokens (so that the batches
    of a group stack); padding is never attended to nor scored."""
    extra = width - batch.tokens.shape[1]
    if extra == 0:
        return batch

    def pad(array, value=None):
        mode = {"mode": "edge"} if value is None else {"constant_values": value}
        return np.pad(array, ((0, 0), (0, extra)), **mode)

    return replace(batch, tokens=pad(batch.tokens, PAD), targets=pad(batch.targets, IGNORE),
                   scored=pad(batch.scored, False), position_ids=pad(batch.position_ids))


def lr_at(step: int, config: RunConfig) -> float:
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return config.lr * 0.5 * (1 + math.cos(math.pi * progress))


def group_key(config: RunConfig) -> str:
    """Runs with equal keys share a task, a model family and shape and a
    training and evaluation schedule, so they can be trained as one stacked
    model: only the seed and the encoding differ. A run with dropout trains
    alone (its masks come from the process-wide random stream), so its key
    is its own."""
    shared = config.to_dict()
    if not config.model.dropout:
        for own in ("seed", "encoding", "encoding_params", "encoding_source", "code_versions"):
            shared.pop(own, None)
    return json.dumps(shared, sort_keys=True)


def build_group(configs: list[RunConfig], task: Task, device: torch.device) -> RunStack:
    """Each run's model, initialised exactly as a solo run's, stacked by its family."""
    if len({group_key(c) for c in configs}) != 1:
        raise ValueError("runs of one group must differ only in seed and encoding")
    family = FAMILIES[configs[0].family]
    return family.build(task.vocab_size, configs[0].model, [c.run_init() for c in configs]).to(device)


def train_group(model: RunStack, task: Task, configs: list[RunConfig], device: torch.device,
                progress=None, checkpoint: Checkpoint | None = None, fit_check=None) -> list[TrainResult]:
    """Train the stacked runs in place, each on its own data and position
    streams with its own loss, clipping and (elementwise) AdamW state. A
    run whose loss turns non-finite stops there (``diverged``); the others
    go on. With a budget until fit (``RunConfig.fit_check_every``),
    ``fit_check(runs) -> {run: held-out ID exact match}`` is called every
    that many steps and a run that fit at ``fit_patience`` checks in a row
    stops there: its weights are kept as they were, whatever the group does
    next. With a ``checkpoint``, training resumes from its saved state and
    saves its state whenever the checkpoint is due."""
    schedule = configs[0]
    every = schedule.fit_check_every if fit_check is not None else 0
    rngs = [data_rng(c.seed) for c in configs]
    gens = [position_generator(c.seed, device) for c in configs]
    optimizer = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=schedule.weight_decay)
    model.train()
    losses: list[list[float]] = [[] for _ in configs]
    diverged_at: dict[int, int] = {}
    fit_at: dict[int, int] = {}
    fit_checks: list[list] = [[] for _ in configs]
    active = list(range(len(configs)))
    start = 0
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        fresh = copy.deepcopy(model.state_dict())
        try:
            if not _same_shapes(model, saved["model"]):
                raise ValueError("a model of another layout (saved by other code)")
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            for rng, state in zip(rngs, saved["data_rngs"], strict=True):
                rng.bit_generator.state = state
            for gen, state in zip(gens, saved["position_rngs"], strict=True):
                gen.set_state(state)
            losses, start = [list(map(float, run)) for run in saved["losses"]], int(saved["step"])
            diverged_at = {int(r): int(at) for r, at in saved["diverged_at"].items()}
            fit_at = {int(r): int(at) for r, at in saved.get("fit_at", {}).items()}
            fit_checks = saved.get("fit_checks", fit_checks)
            if len(losses) != len(configs) or not 0 < start < schedule.steps:
                raise ValueError(f"{len(losses)} runs at step {start}")
        except Exception as err:  # noqa: BLE001  (a damaged state: start over, never lose the run)
            checkpoint.set_aside(f"its state does not load: {type(err).__name__}: {err}")
            model.load_state_dict(fresh)
            optimizer = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=schedule.weight_decay)
            rngs = [data_rng(c.seed) for c in configs]
            gens = [position_generator(c.seed, device) for c in configs]
            losses, start, diverged_at, fit_at = [[] for _ in configs], 0, {}, {}
            fit_checks = [[] for _ in configs]
            saved = None
    if saved is not None:
        active = [r for r in active if r not in diverged_at and r not in fit_at]
        log.info("%s: resumed %d run(s) from their checkpoint at step %d of %d", schedule.task, len(configs),
                 start, schedule.steps)
        if progress is not None:
            progress.update(start)
    frozen = {r: [p.detach().clone() for p in model.run_parameters(r)] for r in fit_at}
    for step in range(start, schedule.steps):
        if not active:
            break
        batches = [make_batch(task, rngs[r], rngs[r].integers(task.min_length, schedule.train_length + 1,
                                                              size=schedule.batch_size)) for r in active]
        width = max(b.tokens.shape[1] for b in batches)
        batches = [widen(b, width) for b in batches]
        n_targets = torch.tensor([float((b.targets != IGNORE).sum()) for b in batches], device=device)
        tensors = [batch_tensors(b, device) for b in batches]
        positions = [model.positions(r, t["tokens"], t["position_ids"], t["seq_lens"], gens[r])
                     for r, t in zip(active, tensors)]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, schedule)
        optimizer.zero_grad(set_to_none=False)
        run_loss = torch.zeros(len(active), device=device)
        for lo, hi, width in group_buckets([b.seq_lens for b in batches]):
            tokens = torch.stack([t["tokens"][lo:hi, :width] for t in tensors])
            targets = torch.stack([t["targets"][lo:hi, :width] for t in tensors])
            logits = model(tokens, [p[lo:hi, :width] if p.shape[0] > 1 else p[:, :width] for p in positions],
                           active)
            part = torch.stack([F.cross_entropy(a.flatten(0, 1), b.flatten(), ignore_index=IGNORE, reduction="sum")
                                for a, b in zip(logits.unbind(), targets.unbind())]) / n_targets  # per run
            part.sum().backward()
            run_loss += part.detach()
        values = run_loss.tolist()
        for r, value in zip(active, values):
            if math.isfinite(value):
                losses[r].append(value)
            else:  # its update below touches its own slices only; it is left out from now on
                diverged_at[r] = step
        clip_per_run(model, schedule.grad_clip)
        optimizer.step()
        _restore(model, frozen)
        active = [r for r in active if r not in diverged_at]
        if every and (step + 1) % every == 0 and step + 1 < schedule.steps and active:
            for r in _fitted(model, fit_check, active, fit_checks, step + 1, schedule):
                fit_at[r] = step + 1
                frozen[r] = [p.detach().clone() for p in model.run_parameters(r)]
            active = [r for r in active if r not in fit_at]
        if checkpoint is not None and checkpoint.due() and step + 1 < schedule.steps:
            checkpoint.save({"step": step + 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                             "data_rngs": [rng.bit_generator.state for rng in rngs],
                             "position_rngs": [gen.get_state() for gen in gens], "losses": losses,
                             "diverged_at": {str(r): at for r, at in diverged_at.items()},
                             "fit_at": {str(r): at for r, at in fit_at.items()}, "fit_checks": fit_checks})
        if progress is not None:
            progress.update(1)
            if step % 50 == 0 and active:
                progress.set_postfix(loss=f"{losses[active[0]][-1]:.3f}")
    results = []
    for r in range(len(configs)):
        checks = fit_checks[r] if every else None
        if r in diverged_at:
            results.append(TrainResult(diverged_at[r], True, _curve(losses[r]), float("nan"), losses[r],
                                       "diverged", checks))
        else:
            tail = losses[r][-max(1, len(losses[r]) // LOSS_CURVE_POINTS):]
            stopped = "fit" if r in fit_at else "max_steps"
            results.append(TrainResult(fit_at.get(r, schedule.steps), False, _curve(losses[r]), float(np.mean(tail)),
                                       losses[r], stopped, checks))
    return results


def _fitted(model: RunStack, fit_check, active: list[int], fit_checks: list[list], step: int,
            schedule: RunConfig) -> list[int]:
    """Run the fit check on the active runs, log it, and return those that
    fit at their last ``fit_patience`` checks."""
    scores = fit_check(active)
    model.train()
    done = []
    for r in active:
        fit_checks[r].append([step, round(scores[r], 6)])
        recent = [score for _, score in fit_checks[r][-schedule.fit_patience:]]
        if len(recent) == schedule.fit_patience and min(recent) >= schedule.fit_threshold:
            done.append(r)
    return done


@torch.no_grad()
def _restore(model: RunStack, frozen: dict[int, list[torch.Tensor]]) -> None:
    """Put back the weights of the runs that stopped (a group's optimizer
    step still moves them: momentum and weight decay)."""
    for r, saved in frozen.items():
        torch._foreach_copy_(model.run_parameters(r), saved)


def _same_shapes(model: RunStack, state) -> bool:
    own = model.state_dict()
    return (isinstance(state, dict) and set(own) == set(state)
            and all(isinstance(state[k], torch.Tensor) and own[k].shape == state[k].shape for k in own))


def clip_per_run(model: RunStack, max_norm: float) -> None:
    """``clip_grad_norm_`` for every run on its own, computed exactly as for
    its solo model (the norm of per-tensor norms, in its parameter order)."""
    for run in range(model.n_runs):
        grads = model.run_gradients(run)
        scale = (max_norm / (torch.nn.utils.get_total_norm(grads) + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, scale)  # as clip_grad_norm_ does


def _curve(losses: list[float]) -> list[float]:
    if not losses:
        return []
    chunks = np.array_split(np.asarray(losses), min(LOSS_CURVE_POINTS, len(losses)))
    return [round(float(c.mean()), 5) for c in chunks]
