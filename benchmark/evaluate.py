"""Evaluation: one teacher-forced forward pass per chunk per length.

Teacher-forced argmax exact match equals greedy-decoding exact match (a
greedy decoder emits the same tokens as long as every earlier one was right,
and an example counts only if all are). Metrics use output symbols only.
"""

from __future__ import annotations

import numpy as np
import torch

from benchmark.config import RunConfig
from benchmark.seeding import eval_streams
from benchmark.train import batch_tensors
from models import Transformer
from models.encodings import PositionsOutOfRange
from tasks import Task, make_batch

ATTENTION_BUDGET_BYTES = 1 << 28  # per chunk, for the (B, H, T, T) score/bias tensors


def chunk_size(total: int, seq_len: int, n_heads: int) -> int:
    per_example = 4 * n_heads * seq_len * seq_len * 3
    return max(1, min(total, ATTENTION_BUDGET_BYTES // per_example))


@torch.no_grad()
def evaluate_length(model: Transformer, task: Task, length: int, config: RunConfig,
                    device: torch.device) -> dict:
    """Metrics at one task length on the fixed evaluation stream."""
    rng, gen = eval_streams(config.eval_seed, length, device)
    batch = make_batch(task, rng, np.full(config.eval_samples, length))
    t = batch_tensors(batch, device)
    token_acc, exact = [], []
    step = chunk_size(config.eval_samples, t["tokens"].shape[1], config.model.n_heads)
    try:
        for lo in range(0, config.eval_samples, step):
            sl = slice(lo, lo + step)
            logits = model(t["tokens"][sl], t["position_ids"][sl], t["seq_lens"][sl], gen)
            scored = t["scored"][sl]
            correct = (logits.argmax(-1) == t["targets"][sl]) & scored
            n_scored = scored.sum(1)
            token_acc.append((correct.sum(1) / n_scored).cpu())
            exact.append((correct.sum(1) == n_scored).cpu())
    except PositionsOutOfRange as err:
        return {"length": length, "status": "unsupported", "reason": str(err),
                "token_accuracy": 0.0, "exact_match": 0.0, "n_samples": 0}
    return {
        "length": length,
        "status": "ok",
        "token_accuracy": round(float(torch.cat(token_acc).float().mean()), 6),
        "exact_match": round(float(torch.cat(exact).float().mean()), 6),
        "n_samples": config.eval_samples,
    }


def evaluate(model: Transformer, task: Task, config: RunConfig, device: torch.device,
             progress=None) -> list[dict]:
    model.eval()
    results = []
    for length in config.eval_lengths():
        results.append(evaluate_length(model, task, length, config, device))
        if progress is not None:
            progress.update(1)
    return results


def summarize(per_length: list[dict], train_length: int) -> dict:
    """In-distribution (length <= L_train) and out-of-distribution means.

    A length the encoding cannot run at counts as 0 (it cannot solve it).
    Every OOD length is included, the first one too.
    """
    out = {}
    for split, keep in (("id", lambda n: n <= train_length), ("ood", lambda n: n > train_length)):
        rows = [r for r in per_length if keep(r["length"])]
        for metric in ("exact_match", "token_accuracy"):
            out[f"{split}_{metric}"] = (
                round(float(np.mean([r[metric] for r in rows])), 6) if rows else None
            )
        out[f"{split}_unsupported_lengths"] = sum(r["status"] == "unsupported" for r in rows)
    return out
