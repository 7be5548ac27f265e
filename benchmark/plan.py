"""``lengthbench run --plan``: what a grid will cost, before anything trains.

For the runs still to do (stored records are reused) it counts the useful
FLOPs of training (real tokens of sampled batches, times the steps) and of
evaluation (every evaluated length, times the samples), and calibrates this
machine: for each distinct training shape (task, model, batch, lengths, and
whether the encoding adds an attention bias, which makes attention slower;
or the model family)
it times a few trainer steps of one run alone (the median counts) and two
small evaluations with the threads one worker process gets. The wall-time
estimate is the calibrated seconds summed over the runs and shared by the
worker processes. Nothing is written.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from lengthbench.benchmark.applicable import not_applicable
from lengthbench.benchmark.config import Preset, RunConfig
from lengthbench.benchmark.device import available_memory, default_device
from lengthbench.benchmark.evaluate import evaluate_length
from lengthbench.benchmark.flops import forward_flops, training_flops
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.benchmark.train import train_run
from lengthbench.core.errors import InputError
from lengthbench.models.families import family_entry
from lengthbench.models.transformer import transformer_flops
from lengthbench.tasks import get_task, make_batch
from lengthbench.tasks.cells import PLAIN, method_name, split_label
from lengthbench.tasks.formats import label_not_applicable

CALIBRATION_STEPS = 5  # timed one at a time; the median counts
CALIBRATION_SAMPLES = 8  # evaluation samples timed per calibrated length
FLOP_SAMPLES = 4  # examples per evaluated length used to count tokens


@dataclass
class Estimate:
    """Per distinct training shape: how many runs, and what one costs."""

    task: str
    model: str  # "transformer", "transformer + attention bias" or the family
    runs: int
    steps: int
    train_flops: float  # per run
    eval_flops: float  # per run
    train_seconds: float  # per run, on one worker
    eval_seconds: float  # per run, on one worker


def kind_of(config: RunConfig) -> str | None:
    """The calibrated kind of model: the family's name, with " + attention
    bias" for a family whose encoding adds a logit bias (attention with one
    is slower), or None for an n/a cell, which is recorded without training."""
    if not_applicable(config) is not None:
        return None
    if config.encoding and "bias" in config.make_encoding().hooks_used():
        return f"{config.family} + attention bias"
    return config.family


def _token_lengths(config: RunConfig, lengths: np.ndarray, seed: int = 0) -> np.ndarray:
    return make_batch(get_task(config.task), np.random.default_rng(seed), lengths).seq_lens


# A training step's memory, per token of its batch: the activations kept for the backward pass and their
# gradients (float32), per layer the residual stream and its projections, the feed-forward's hidden units and a
# row of attention scores per head, and the logits. Measured on `quick`'s copy with rope (one thread): a step of
# batch 2048 raised the process's peak by 211 MB, of batch 8192 by 744 MB; this prices them at 221 and 883 MB
# (5% and 19% above), so a refusal never rests on a figure below the real one there.
def training_step_bytes(config: RunConfig) -> tuple[float, int]:
    """A training step's memory (bytes, about) and its longest sequence (tokens)."""
    task = get_task(config.task)
    lengths = np.random.default_rng(0).integers(task.min_length, config.train_length + 1, size=256)
    mean_tokens = float(_token_lengths(config, lengths).mean())
    longest = int(_token_lengths(config, np.array([config.train_length]))[0])
    m = config.model
    per_token = 2 * 4 * (m.n_layers * (4 * m.d_model + m.d_ff + m.n_heads * longest) + 2 * task.vocab_size)
    return mean_tokens * config.batch_size * per_token, longest


def check_training_memory(configs: list[RunConfig]) -> None:
    """Refuse, before any run, a grid whose training step cannot fit in the
    memory this process may still allocate (``device.available_memory``),
    naming the batch size, the estimate and the largest batch that fits."""
    have = available_memory()
    shapes = {(c.task, c.model, c.batch_size, c.train_length): c for c in configs
              if label_not_applicable(c.task) is None}  # a format that cannot write its task trains nothing
    priced = [(*training_step_bytes(c), c) for c in shapes.values()]
    need, longest, config = max(priced, key=lambda p: p[0], default=(0.0, 0, None))
    if config is None or need <= have:
        return
    fits = int(config.batch_size * have / need)
    raise InputError(f"batch size {config.batch_size}: a training step of {config.task} would need about "
                     f"{need / 1e9:.1f} GB ({config.batch_size} sequences of up to {longest} tokens, d_model "
                     f"{config.model.d_model}, {config.model.n_layers} layers), and {have / 1e9:.1f} GB is "
                     f"available here; a batch of at most about {fits} fits (--set batch_size=...)")


def check_evaluation_memory(configs: list[RunConfig]) -> None:
    """Refuse, before any run, a grid one of whose evaluated sequences cannot
    be attended over here: evaluation splits a length's examples into chunks,
    but one sequence's attention needs at least a float32 score per head per
    pair of its positions (``evaluate.chunk_size``), whatever the chunk."""
    have = available_memory()
    for config in {(c.task, c.model.n_heads, c.test_length): c for c in configs
                   if label_not_applicable(c.task) is None and attends(c.family)}.values():
        def tokens(length: int) -> int:
            return int(_token_lengths(config, np.array([length]))[0])

        need = 4 * config.model.n_heads * tokens(config.test_length) ** 2
        if need <= have:
            continue
        low, high = config.train_length, config.test_length  # the longest length that fits, by bisection
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if 4 * config.model.n_heads * tokens(middle) ** 2 <= have else (low, middle)
        raise InputError(f"test_length {config.test_length}: one evaluated sequence of {config.task} has "
                         f"{tokens(config.test_length)} tokens, and attention over it needs about {need / 1e9:.1f} GB "
                         f"({config.model.n_heads} heads); {have / 1e9:.1f} GB is available here; the longest test "
                         f"length that fits is about {low} (--set test_length=...)")


def attends(family: str) -> bool:
    """Whether a family's model attends over its whole sequence (its cost grows with its square)."""
    entry = family_entry(family)
    return entry.takes_encoding or entry.flops is transformer_flops


def check_buildable(configs: list[RunConfig]) -> None:
    """Refuse, before any run, a model its settings cannot build (a head count
    that does not divide the width, an encoding setting out of its range):
    each distinct model of the grid is built once, here."""
    seen = set()
    for config in configs:
        if label_not_applicable(config.task) is not None:
            continue  # a format that cannot write its task builds nothing
        vocab = get_task(config.task).vocab_size
        key = (config.family, config.encoding, repr(sorted(config.encoding_params.items())), config.model, vocab)
        if key in seen:
            continue
        seen.add(key)
        try:
            if not_applicable(config) is None:  # nor does a cell its family or encoding cannot run
                config.build_model(vocab)
        except (ValueError, TypeError, ZeroDivisionError, RuntimeError, AssertionError) as err:
            m = config.model
            raise InputError(f"{config.method} cannot be built at d_model {m.d_model}, {m.n_heads} heads, "
                             f"{m.n_layers} layers{' with ' + str(config.encoding_params) if config.encoding_params else ''}: "
                             f"{err}; nothing was run") from None


def check_fits(configs: list[RunConfig]) -> None:
    """Everything sized before any run, by ``run`` and ``--plan`` alike: each model builds, a training step and
    the longest evaluated sequence fit in memory."""
    check_buildable(configs)
    check_training_memory(configs)
    check_evaluation_memory(configs)


def _flops(config: RunConfig) -> tuple[float, float]:
    task = get_task(config.task)
    rng = np.random.default_rng(0)
    steps = [training_flops(_token_lengths(config, rng.integers(task.min_length, config.train_length + 1,
                                                                size=config.batch_size)),
                            config.model, task.vocab_size, config.family) for _ in range(4)]
    evaluation = sum(forward_flops(_token_lengths(config, np.full(FLOP_SAMPLES, n)), config.model,
                                   task.vocab_size, config.family) * config.eval_samples / FLOP_SAMPLES
                     for n in config.eval_lengths())
    return float(np.mean(steps)) * config.steps, evaluation


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def calibrate(config: RunConfig) -> tuple[float, float]:
    """(train seconds, eval seconds) of one run of ``config`` on one worker."""
    task, device = get_task(config.task), default_device()
    one_step = replace(config, steps=1)
    model = one_step.build_model(task.vocab_size).to(device)
    train_run(model, task, one_step, device)
    per_step = float(np.median([_timed(lambda: train_run(model, task, one_step, device))
                                for _ in range(CALIBRATION_STEPS)]))
    lengths = config.eval_lengths()
    probe = replace(config, eval_samples=CALIBRATION_SAMPLES)
    short, long = lengths[len(lengths) // 2], lengths[-1]
    evaluate_length(model, task, short, probe, device)
    t_short, t_long = (_timed(lambda n=n: evaluate_length(model, task, n, probe, device)) for n in (short, long))
    w_short, w_long = (float(_token_lengths(config, np.full(1, n)).max()) for n in (short, long))
    # per-sample cost grows between linearly (projections) and quadratically (attention) in width
    power = 1.5 if w_long == w_short else float(np.clip(np.log(max(t_long, 1e-9) / max(t_short, 1e-9))
                                                        / np.log(w_long / w_short), 1.0, 2.0))
    per_sample = t_long / CALIBRATION_SAMPLES
    eval_seconds = sum(per_sample * (float(_token_lengths(config, np.full(1, n)).max()) / w_long) ** power
                       for n in lengths) * config.eval_samples
    return per_step * config.steps, eval_seconds


def shape_key(config: RunConfig) -> tuple | None:
    """What a run's cost depends on (task, model, batch, lengths, steps,
    evaluation, kind of model), or None for an n/a cell."""
    kind = kind_of(config)
    if kind is None:
        return None
    return (config.task, config.model, config.batch_size, config.train_length, config.test_length,
            config.steps, config.eval_samples, config.eval_stride, kind)


def training_shapes(configs: list[RunConfig]) -> dict[tuple, list[RunConfig]]:
    """The trainable ``configs`` by ``shape_key``, in first-seen order."""
    shapes: dict[tuple, list[RunConfig]] = defaultdict(list)
    for config in configs:
        key = shape_key(config)
        if key is not None:
            shapes[key].append(config)
    return shapes


@contextmanager
def worker_threads(workers: int, runs: int):
    """Torch threads set to what one of ``workers`` worker processes gets."""
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads // max(1, min(workers, runs))))
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def estimate(preset: Preset, results: Path | ResultsFolder, workers: int,
             force: bool = False) -> tuple[list[Estimate], int, int]:
    """(one Estimate per training shape of the runs to do, runs in grid, runs
    stored); with ``force`` every run is to do, stored or not."""
    configs = grid_configs(preset)
    folder = ResultsFolder(results)
    todo = [c for c in configs if force or folder.finished(c.run_id, set_aside=False) is None]
    check_fits(todo)
    estimates = []
    with worker_threads(workers, len(todo)):
        for key, group in training_shapes(todo).items():
            train_flops, eval_flops = _flops(group[0])
            train_seconds, eval_seconds = calibrate(group[0])
            estimates.append(Estimate(group[0].task, key[-1], len(group), group[0].steps, train_flops,
                                      eval_flops, train_seconds, eval_seconds))
    return estimates, len(configs), len(configs) - len(todo)


def _load_while() -> str:
    """The machine's load during calibration (the 1-minute load average just
    after it), which slows the timed steps as it will slow the grid."""
    if not hasattr(os, "getloadavg"):
        return "; other load on the machine makes the grid longer"
    return (f" at a load average of {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; the estimate assumes that "
            "load throughout: more makes the grid longer, less shorter")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172800 else f"{seconds / 86400:.1f} days"


def protocol_lines(preset: Preset) -> list[str]:
    """The length bands of each task and the training budget rule, as ``--plan`` prints them."""
    by_rule: dict[str, list[str]] = {}
    for task in preset.grid_tasks():
        for family, encoding in preset.methods():
            c = preset.run_config(task, encoding or "nope", preset.seeds[0], family)
            bands = (f"train 1..{c.train_length}, validation {c.train_length + 1}..{c.validation_length}, "
                     f"test {c.test_start}..{c.test_length}" if c.validation_length else
                     f"train 1..{c.train_length}, test {c.test_start}..{c.test_length} (no validation band)")
            budget = (f"until fit (held-out ID exact match >= {c.fit_threshold:g} at {c.fit_patience} checks in a "
                      f"row, every {c.fit_check_every} steps), at most {c.steps} steps" if c.fit_patience
                      else f"{c.steps} steps" + (f" (the fit logged every {c.fit_check_every}, never stopping a run)"
                                                 if c.fit_check_every else ""))
            tasks = by_rule.setdefault(f"{bands}; budget: {budget}", [])
            if task not in tasks:
                tasks.append(task)
    if len(by_rule) == 1:
        return [f"lengths: {next(iter(by_rule))}"]
    return [f"lengths: {rule} ({', '.join(tasks)})" for rule, tasks in by_rule.items()]


def planned_seconds(estimates: list[Estimate], workers: int) -> tuple[float, float, int]:
    """(run time on one worker, wall time, worker processes side by side) of the estimated runs."""
    serial = sum(e.runs * (e.train_seconds + e.eval_seconds) for e in estimates)
    parallel = max(1, min(workers, sum(e.runs for e in estimates)))
    return serial, serial / parallel, parallel


def format_plan(preset: Preset, estimates: list[Estimate], total: int, stored: int, workers: int,
                calibration_seconds: float, force: bool = False) -> str:
    todo = sum(e.runs for e in estimates)
    serial, wall, parallel = planned_seconds(estimates, workers)
    flops = sum(e.runs * (e.train_flops + e.eval_flops) for e in estimates)
    tasks = preset.grid_tasks()
    cut = len(tasks) * len(preset.methods()) * len(preset.seeds) - total
    cells = [split_label(t) for t in tasks]
    written = [t for t, f in cells if f != PLAIN]
    labels = (f"{len(tasks)} task labels ({len({t for t, _ in cells})} tasks, {len(written)} of the labels a task "
              "in another format than plain)" if written else f"{len(tasks)} tasks")
    lines = [
        f"plan for preset {preset.name!r}: {labels} x {len(preset.methods())} methods x "
        f"{len(preset.seeds)} seeds" + (f", less {cut} cut" if cut else "") + f" = {total} runs; "
        + ("--force: every run is run again, none reused" if force else f"{stored} stored (reused)")
        + f", {total - stored} to run ({total - stored - todo} of them n/a: recorded without training)",
        *(f"cut: {c.describe()}" for c in preset.cuts
          if any(c.covers(t, method_name(f, e)) for t in tasks for f, e in preset.methods())),
        f"{parallel} worker process(es) side by side, each training one run at a time",
        *protocol_lines(preset),
    ]
    if not todo:
        return "\n".join(lines + ["", "nothing to train: every run of the grid is stored"
                                   + (" or not applicable" if total > stored else "")
                                   + " (run builds its leaderboard from the records; --force trains them again)"])
    lines += [
        "",
        "| task | model | runs | steps | train TFLOP/run | eval TFLOP/run | train/run | eval/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in sorted(estimates, key=lambda e: (e.task, e.model)):
        lines.append(f"| {e.task} | {e.model} | {e.runs} | {e.steps} | "
                     f"{e.train_flops / 1e12:.3f} | {e.eval_flops / 1e12:.3f} | "
                     f"{_duration(e.train_seconds)} | {_duration(e.eval_seconds)} |")
    until_fit = any(preset.run_config(t, e or "nope", 0, f).fit_patience
                    for t in tasks for f, e in preset.methods())
    lines += [
        "",
        f"useful work: {flops / 1e12:.2f} TFLOP; run time on one worker: {_duration(serial)}"
        + (" (at most: runs that fit stop early)" if until_fit else ""),
        f"estimated wall time on this machine: {_duration(wall)} with {parallel} worker(s) "
        f"(calibrated from {CALIBRATION_STEPS} steps per shape in {calibration_seconds:.0f} s{_load_while()})",
    ]
    return "\n".join(lines)
