"""Evaluation: one teacher-forced forward pass per chunk per length.

Teacher-forced argmax exact match equals greedy-decoding exact match (a
greedy decoder emits the same tokens as long as every earlier one was right,
and an example counts only if all are). Metrics use output symbols only.
A data format whose extra output symbols are the model's own work (a
scratchpad: ``Format.decodes``) is the exception: there the true steps,
teacher-forced, would hand the model the answer, so its outputs are decoded
greedily from the prompt (one pass per output position) and the answer's
symbols among them scored.
"""

from __future__ import annotations

import numpy as np
import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.seeding import eval_streams, fit_check_streams
from lengthbench.benchmark.train import batch_tensors
from lengthbench.benchmark.unseen import unseen_batch
from lengthbench.models.encodings import PositionsOutOfRange
from lengthbench.models.families import RunModel
from lengthbench.tasks import IGNORE, SEP, Task, make_batch
from lengthbench.tasks.base import N_SPECIAL

ATTENTION_BUDGET_BYTES = 1 << 28  # per chunk, for the (B, H, T, T) score/bias tensors
FIT_CHECK_SAMPLES = 64  # per trained length, at each in-training fit check


def chunk_size(total: int, seq_len: int, n_heads: int) -> int:
    per_example = 4 * n_heads * seq_len * seq_len * 3
    return max(1, min(total, ATTENTION_BUDGET_BYTES // per_example))


def _unsupported(length: int, reason: str) -> dict:
    return {"length": length, "status": "unsupported", "reason": reason,
            "token_accuracy": 0.0, "exact_match": 0.0, "n_samples": 0}


def _teacher_forced(model: RunModel, tokens: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor):
    """Each position's argmax and whether its logits are all finite, from one pass over the true sequence."""
    logits = model(tokens, positions)
    return logits.argmax(-1), torch.isfinite(logits).all(-1)


def _greedy(model: RunModel, tokens: torch.Tensor, positions: torch.Tensor, targets: torch.Tensor):
    """``_teacher_forced``'s answer when the model writes its own output: from
    ``<sep>`` on, each output token is the model's argmax at the position
    before (one pass per output position over the prefix so far)."""
    written, predicted = tokens.clone(), torch.zeros_like(tokens)
    finite = torch.ones(tokens.shape, dtype=torch.bool, device=tokens.device)
    outputs = (targets != IGNORE) & ((tokens == SEP).cumsum(1) > 0)  # from SEP on (not an input's own target);
    # position p predicts token p + 1
    for p in outputs.any(0).nonzero().flatten().tolist():
        logits = model(written[:, :p + 1], positions[..., :p + 1])[:, p]
        predicted[:, p], finite[:, p] = logits.argmax(-1), torch.isfinite(logits).all(-1)
        if p + 1 < tokens.shape[1]:
            written[:, p + 1] = torch.where(outputs[:, p], predicted[:, p], written[:, p + 1])
    return predicted, finite


@torch.no_grad()
def _score(model: RunModel, t: dict, positions: torch.Tensor, n_heads: int, deltas: list | None = None,
           decode: bool = False):
    """Per-example token accuracy and exact match, and how many examples had
    a non-finite logit at a scored position (those count as wrong, whatever
    their argmax), one pass per chunk (with ``decode``, greedy decoding:
    ``_greedy``). With ``deltas``, each chunk's
    predictions minus answers at the scored positions, row by row, are
    appended to it (-1 predicted throughout an example with a non-finite
    logit: ``predictions``)."""
    total, seq_len = t["tokens"].shape
    step = chunk_size(total, seq_len, n_heads)
    token_acc, exact, nonfinite = [], [], 0
    for lo in range(0, total, step):
        sl = slice(lo, lo + step)
        scored = t["scored"][sl]
        predicted, finite = (_greedy if decode else _teacher_forced)(
            model, t["tokens"][sl], positions[sl] if positions.shape[0] > 1 else positions, t["targets"][sl])
        broken = (~finite & scored).any(-1)  # (B,): a scored prediction is not a number
        correct = (predicted == t["targets"][sl]) & scored & ~broken[:, None]
        if deltas is not None:
            predicted = predicted.masked_fill(broken[:, None], -1)
            deltas.append((predicted - t["targets"][sl])[scored].cpu().numpy().astype(np.int16))
        right, n_scored = correct.sum(1), scored.sum(1)
        token_acc.append((right / n_scored).cpu())
        exact.append((right == n_scored).cpu())
        nonfinite += int(broken.sum())
    return torch.cat(token_acc).float().mean(), torch.cat(exact), nonfinite


def _slices(task: Task, tokens: np.ndarray, exact: np.ndarray) -> dict | None:
    """Exact match by the task's example slices (``Task.example_slices``) of
    one length's examples, each with its count; None for a task without."""
    ends = (tokens == SEP).argmax(1)
    if not (ends == ends[0]).all():
        return None
    labels = task.example_slices(tokens[:, 1 : ends[0]] - N_SPECIAL)
    if labels is None:
        return None
    return {str(label): {"exact_match": round(float(exact[labels == label].mean()), 6), "n": int((labels == label).sum())}
            for label in sorted(set(labels.tolist()))}


def evaluate_length(model: RunModel, task: Task, length: int, config: RunConfig, device: torch.device,
                    streams=eval_streams, n_samples: int | None = None, predictions: dict | None = None,
                    drawn: set[bytes] | None = None) -> dict:
    """The run's metrics at one task length, on the fixed evaluation stream
    (``streams``; ``n_samples`` examples, default the config's), its
    eval-time positions drawn from that stream's generator; with ``drawn``
    (the prompts training drew at this length), on unseen ones (``unseen``)."""
    n_samples = config.eval_samples if n_samples is None else n_samples
    return evaluate_at(model, task, length, config.eval_seed, n_samples, config.model.n_heads, device, streams,
                       predictions, drawn)


@torch.no_grad()
def evaluate_at(model: RunModel, task: Task, length: int, eval_seed: int, n_samples: int, n_heads: int,
                device: torch.device, streams=eval_streams, predictions: dict | None = None,
                drawn: set[bytes] | None = None) -> dict:
    """Metrics at one task length on ``n_samples`` examples of the stream
    ``streams(eval_seed, length)``, in chunks sized for ``n_heads`` heads:
    the one evaluation, of a run (``evaluate_length``) or of any model
    (``evaluate_any``). With ``predictions`` (a dict), the length's
    predictions minus answers are stored in it under ``length``
    (``benchmark.predictions``); an unsupported length has none. With
    ``drawn``, the examples are those of ``unseen.unseen_batch`` and the
    row says which (``examples``)."""
    model.eval()
    rng, generator = streams(eval_seed, length, device)
    if drawn is None:
        batch, examples = make_batch(task, rng, np.full(n_samples, length)), None
    else:
        batch, examples = unseen_batch(task, length, rng, n_samples, drawn)
        n_samples = len(batch.tokens)
    t = batch_tensors(batch, device)
    deltas = [] if predictions is not None else None
    try:
        positions = model.positions(t["tokens"], t["position_ids"], t["seq_lens"], generator)
        decode = getattr(getattr(task, "format", None), "decodes", False)
        token_acc, exact, nonfinite = _score(model, t, positions, n_heads, deltas, decode)
    except PositionsOutOfRange as err:
        return _unsupported(length, str(err))
    if deltas is not None:
        predictions[length] = np.concatenate(deltas)
    result = {"length": length, "status": "ok", "token_accuracy": round(float(token_acc), 6),
              "exact_match": round(float(exact.float().mean()), 6), "n_samples": n_samples}
    if nonfinite:  # only then: the records of runs with finite outputs stay as they were
        result["nonfinite"] = nonfinite
    slices = _slices(task, batch.tokens, exact.numpy())
    if slices is not None:  # only then: the records of tasks that slice nothing stay as they were
        result["slices"] = slices
    if examples is not None:
        result["examples"] = examples
    return result


def evaluate(model: RunModel, task: Task, config: RunConfig, device: torch.device, progress=None,
             predictions: dict | None = None, drawn: dict[int, set[bytes]] | None = None) -> list[dict]:
    """Every evaluated length (``config.eval_lengths``); with ``predictions``,
    each length's predictions too (``evaluate_at``); with ``drawn`` (the
    prompts training drew, by length: ``unseen.drawn_prompts``), its lengths on unseen examples."""
    rows = []
    for length in config.eval_lengths():
        rows.append(evaluate_length(model, task, length, config, device, predictions=predictions,
                                    drawn=(drawn or {}).get(length)))
        if progress is not None:
            progress.update(1)
    return rows


def held_out_fit(model: RunModel, task: Task, config: RunConfig, device: torch.device) -> float:
    """The in-training fit check on held-out examples
    (``seeding.fit_check_streams``): exact match over the lengths the fit
    is judged on (``RunConfig.fit_lengths``), their mean, or with
    ``fit_from`` their minimum (every one of them must reach the threshold)."""
    scores = [evaluate_length(model, task, n, config, device, fit_check_streams, FIT_CHECK_SAMPLES)["exact_match"]
              for n in config.fit_lengths()]
    return float(min(scores) if config.fit_from else np.mean(scores))
