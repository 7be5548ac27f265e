"""Evaluation: one teacher-forced forward pass per chunk per length, for
every run of a group at once.

Teacher-forced argmax exact match equals greedy-decoding exact match (a
greedy decoder emits the same tokens as long as every earlier one was right,
and an example counts only if all are). Metrics use output symbols only.
"""

from __future__ import annotations

import numpy as np
import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.seeding import eval_streams, fit_check_streams
from lengthbench.benchmark.train import batch_tensors
from lengthbench.models.encodings import PositionsOutOfRange
from lengthbench.models.families import RunStack
from lengthbench.tasks import Task, make_batch

ATTENTION_BUDGET_BYTES = 1 << 28  # per chunk, for the (B, H, T, T) score/bias tensors
FIT_CHECK_SAMPLES = 64  # per trained length, at each in-training fit check


def chunk_size(total: int, seq_len: int, n_heads: int, n_runs: int = 1) -> int:
    per_example = 4 * n_heads * seq_len * seq_len * 3 * n_runs
    return max(1, min(total, ATTENTION_BUDGET_BYTES // per_example))


def _unsupported(length: int, reason: str) -> dict:
    return {"length": length, "status": "unsupported", "reason": reason,
            "token_accuracy": 0.0, "exact_match": 0.0, "n_samples": 0}


@torch.no_grad()
def _score(model: RunStack, t: dict, positions: dict, runs: list[int], n_heads: int):
    """Per run: per-example token accuracy and exact match, and how many
    examples had a non-finite logit at a scored position (those count as
    wrong, whatever their argmax), one pass per chunk."""
    total, seq_len = t["tokens"].shape
    step = chunk_size(total, seq_len, n_heads, len(runs))
    token_acc, exact, nonfinite = [[] for _ in runs], [[] for _ in runs], [0 for _ in runs]
    for lo in range(0, total, step):
        sl = slice(lo, lo + step)
        tokens = t["tokens"][sl].expand(len(runs), -1, -1)
        pos = [positions[r][sl] if positions[r].shape[0] > 1 else positions[r] for r in runs]
        scored = t["scored"][sl]
        logits = model(tokens, pos, runs)
        broken = (~torch.isfinite(logits).all(-1) & scored).any(-1)  # (R, B): a scored prediction is not a number
        correct = (logits.argmax(-1) == t["targets"][sl]) & scored & ~broken[..., None]
        right, n_scored = correct.sum(2), scored.sum(1)
        for i in range(len(runs)):
            token_acc[i].append((right[i] / n_scored).cpu())
            exact[i].append((right[i] == n_scored).cpu())
            nonfinite[i] += int(broken[i].sum())
    return {r: (torch.cat(a).float().mean(), torch.cat(e).float().mean(), n)
            for r, a, e, n in zip(runs, token_acc, exact, nonfinite)}


@torch.no_grad()
def evaluate_length(model: RunStack, task: Task, length: int, config: RunConfig,
                    device: torch.device, runs: list[int] | None = None,
                    streams=eval_streams, n_samples: int | None = None) -> dict[int, dict]:
    """Metrics of each of ``runs`` (default: all) at one task length, on the
    fixed evaluation stream (``streams``; ``n_samples`` examples, default the
    config's); every run sees the same examples and draws its eval-time
    positions from a fresh copy of the same stream, as if alone."""
    runs = list(range(model.n_runs)) if runs is None else list(runs)
    n_samples = config.eval_samples if n_samples is None else n_samples
    model.eval()
    rng, _ = streams(config.eval_seed, length, device)
    t = batch_tensors(make_batch(task, rng, np.full(n_samples, length)), device)
    results, positions = {}, {}
    for r in runs:
        try:
            positions[r] = model.positions(r, t["tokens"], t["position_ids"], t["seq_lens"],
                                           streams(config.eval_seed, length, device)[1])
        except PositionsOutOfRange as err:
            results[r] = _unsupported(length, str(err))
    able = [r for r in runs if r in positions]
    try:
        scores = _score(model, t, positions, able, config.model.n_heads) if able else {}
    except PositionsOutOfRange:  # some run cannot take this length: find which, one by one
        scores = {}
        for r in able:
            try:
                scores.update(_score(model, t, positions, [r], config.model.n_heads))
            except PositionsOutOfRange as err:
                results[r] = _unsupported(length, str(err))
    for r, (token_acc, exact, nonfinite) in scores.items():
        results[r] = {"length": length, "status": "ok", "token_accuracy": round(float(token_acc), 6),
                      "exact_match": round(float(exact), 6), "n_samples": n_samples}
        if nonfinite:  # only then: the records of runs with finite outputs stay as they were
            results[r]["nonfinite"] = nonfinite
    return results


def evaluate(model: RunStack, task: Task, config: RunConfig, device: torch.device,
             runs: list[int] | None = None, progress=None) -> dict[int, list[dict]]:
    """Every evaluated length (``config.eval_lengths``) for each of ``runs``."""
    runs = list(range(model.n_runs)) if runs is None else list(runs)
    per_run: dict[int, list[dict]] = {r: [] for r in runs}
    for length in config.eval_lengths():
        for r, row in evaluate_length(model, task, length, config, device, runs).items():
            per_run[r].append(row)
        if progress is not None:
            progress.update(1)
    return per_run


def held_out_fit(model: RunStack, task: Task, config: RunConfig, device: torch.device,
                 runs: list[int]) -> dict[int, float]:
    """Each run's mean exact match over its trained lengths, on held-out
    examples (``seeding.fit_check_streams``): the in-training fit check."""
    lengths = [n for n in config.eval_lengths() if config.split(n) == "id"]
    scores: dict[int, list[float]] = {r: [] for r in runs}
    for length in lengths:
        for r, row in evaluate_length(model, task, length, config, device, runs, fit_check_streams,
                                      FIT_CHECK_SAMPLES).items():
            scores[r].append(row["exact_match"])
    return {r: float(np.mean(values)) for r, values in scores.items()}
