"""``lengthbench perf``: how fast training and evaluation run on this machine.

One command, one run, every figure measured in it: the fp32 matmul peak;
then, for the reference configuration of the randomized-PE paper's code (5
layers, d=64, 8 heads, FFN 256, batch 128, reverse_string 1..40, RoPE) and
for ``quick``'s copy model:

* ``plain loop``: the baseline, the same model trained by the few lines a
  user would write (one padded batch per step, made once, mean loss, AdamW);
* ``solo``: lengthbench's trainer on one run (fresh data every step, length
  buckets, warmup/cosine, clipping), as a grid trains every run;

with ``--bf16``, the trainer again under bfloat16 autocast, and an accuracy
check: the ``smoke`` grid trained in fp32 and in bf16, its OOD metrics
compared; all sides interleaved (A B C A B C), medians; on CUDA when
present; each as run-steps/s, real (non-padding) tokens/s, useful GFLOP/s
(the FLOPs of real tokens only) and its share of the matmul peak, and its
padding share;
the data-generation share of a solo step; and evaluation seconds and peak memory at task lengths 100 and
500 (512 samples, the paper's protocol), each in a fresh process. With ``--methods``, each method's
training step at ``quick``'s shapes against the rotary transformer's (a new mechanism or family states its
cost there).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from lengthbench.benchmark.batching import length_buckets, packed_groups
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.device import default_device, device_description
from lengthbench.benchmark.evaluate import evaluate_length
from lengthbench.benchmark.flops import training_flops
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.runner import execute_run
from lengthbench.benchmark.train import batch_tensors, train_run
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES, ModelSize, family_entry
from lengthbench.tasks import IGNORE, get_task, make_batch
from lengthbench.tasks.cells import method_parts, transformer_method

DEVICE = default_device()
MATMUL_SHAPES = ((128 * 82, 64, 192), (128 * 82, 256, 64), (2048, 2048, 2048))


def median_seconds(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def perf_configs() -> dict[str, RunConfig]:
    quick = get_preset("quick")
    reference = replace(quick.run_config("reverse_string", "rope", 0), train_length=40, batch_size=128,
                        model=ModelSize(d_model=64, n_layers=5, n_heads=8, d_ff=256), warmup_steps=10)
    # protocol v2's shapes: d 64 x 2 layers, batch 64, lengths 1..16 (copy: the longest sequences of its core tasks)
    horizon = get_preset("horizon-pilot").run_config("copy", "rope", 100)
    return {"reference": reference, "quick": quick.run_config("copy", "rope", 0), "horizon": horizon}


def matmul_peak(repeats: int = 5) -> float:
    """Best fp32 GFLOP/s over a few matmul shapes (the model's own among them)."""
    best = 0.0
    for m, k, n in MATMUL_SHAPES:
        a, b = torch.randn(m, k, device=DEVICE), torch.randn(k, n, device=DEVICE)
        a @ b
        best = max(best, 2 * m * k * n / median_seconds(lambda: synced(a @ b), repeats) / 1e9)
    return best


def _sample_lengths(config: RunConfig, task, rng) -> np.ndarray:
    return rng.integers(task.min_length, config.train_length + 1, size=config.batch_size)


def plain_loop_seconds(config: RunConfig, steps: int) -> float:
    """Seconds per step of the baseline loop on one fixed padded batch."""
    task = get_task(config.task)
    model = config.build_model(task.vocab_size).to(DEVICE).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    t = batch_tensors(make_batch(task, np.random.default_rng(0), _sample_lengths(
        config, task, np.random.default_rng(0))), DEVICE)

    def step():
        positions = model.positions(t["tokens"], t["position_ids"], t["seq_lens"], None)
        logits = model(t["tokens"], positions)
        loss = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(), ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        synced(loss)

    step()
    return median_seconds(step, steps)


def synced(value=None):
    """``value``, after the device has finished its queued work (for timing)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)
    return value


def precision(bf16: bool):
    """bfloat16 autocast (matmuls and attention in bf16, losses in fp32), or fp32."""
    return torch.autocast(DEVICE.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def trainer_seconds(config: RunConfig, steps: int, bf16: bool = False) -> float:
    """Seconds per step of ``train_run`` (data generation included); a first
    one-step run is warm-up."""
    task = get_task(config.task)
    model = config.build_model(task.vocab_size).to(DEVICE)
    with precision(bf16):
        train_run(model, task, replace(config, steps=1), DEVICE)
        start = time.perf_counter()
        synced(train_run(model, task, replace(config, steps=steps), DEVICE))
    return (time.perf_counter() - start) / steps


def bf16_accuracy_check() -> dict:
    """The ``smoke`` grid trained and evaluated in fp32 and under bf16
    autocast: how far the bf16 OOD metrics land from the fp32 ones."""
    configs = grid_configs(get_preset("smoke"))
    summaries = {}
    for bf16 in (False, True):
        with precision(bf16):
            records = [r for r in (execute_run(c, DEVICE) for c in configs) if r.status == "ok"]
        summaries[bf16] = {r.run_id: r.summary for r in records}
    common = sorted(set(summaries[False]) & set(summaries[True]))
    report = {"cells": len(common), "failed_in_bf16": len(summaries[False]) - len(common)}
    for metric in ("ood_exact_match", "ood_token_accuracy"):
        diffs = [abs(summaries[True][c][metric] - summaries[False][c][metric]) for c in common]
        report[f"{metric}_max_abs_diff"] = max(diffs, default=0.0)
        report[f"{metric}_mean_abs_diff"] = float(np.mean(diffs)) if diffs else 0.0
    return report


def batch_shape(config: RunConfig, samples: int = 20) -> dict:
    """Per step: real tokens, useful FLOPs and data-generation seconds;
    padding shares of one padded batch and of what the trainer computes
    (packed rows for a model that packs sequences, else length buckets)."""
    task = get_task(config.task)
    packs = config.build_model(task.vocab_size).packs_sequences
    rng = np.random.default_rng(1)
    real, padded_whole, computed, gen_seconds, flops = [], [], [], [], []
    for _ in range(samples):
        start = time.perf_counter()
        batch = make_batch(task, rng, _sample_lengths(config, task, rng))
        whole = batch_tensors(batch, DEVICE)
        gen_seconds.append(time.perf_counter() - start)
        real.append(int(batch.seq_lens.sum()))
        padded_whole.append(whole["tokens"].numel())
        computed.append(sum(p.source.size for p in packed_groups(batch.seq_lens, batch.tokens.shape[1])) if packs else
                        sum((hi - lo) * int(batch.seq_lens[hi - 1]) for lo, hi in length_buckets(batch.seq_lens)))
        flops.append(training_flops(batch.seq_lens, config.model, task.vocab_size))
    return {"real_tokens_per_step": float(np.mean(real)),
            "padding_share_padded_batch": 1 - sum(real) / sum(padded_whole),
            "padding_share_trainer": 1 - sum(real) / sum(computed),
            "data_seconds_per_step": statistics.median(gen_seconds),
            "useful_flops_per_step": float(np.mean(flops))}


def _eval_in_child(config: RunConfig, length: int, queue) -> None:
    task = get_task(config.task)
    model = config.build_model(task.vocab_size).to(DEVICE)
    start = time.perf_counter()
    synced(evaluate_length(model, task, length, config, DEVICE))
    queue.put((time.perf_counter() - start, peak_rss_mb()))


def peak_rss_mb() -> float:
    """This process's peak resident memory. ``VmHWM`` where Linux has it:
    ``ru_maxrss`` survives the exec of a spawned child, so it would report
    the parent's peak when that was higher."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def eval_seconds(config: RunConfig, length: int, samples: int = 512) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of evaluating one length, in a fresh process."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_eval_in_child, args=(replace(config, eval_samples=samples), length, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def check_request(configs, methods) -> None:
    """Refuse, before anything is timed, an empty or unknown configuration and a method whose family and encoding
    do not go together (``transformer`` takes one, ``lstm`` none)."""
    if not configs:
        raise InputError(f"--configs: the list is empty; give some of {', '.join(perf_configs())}")
    for name in configs:
        if name not in perf_configs():
            raise UnknownNameError("perf configuration", name, perf_configs())
    for method in methods:
        family, encoding = method_parts(method)
        FAMILIES[family]
        if family_entry(family).takes_encoding != bool(encoding):
            raise InputError(f"--methods: {method!r}: " + (f"family {family!r} takes an encoding "
                             f"({family}/ENCODING)" if encoding == "" else f"family {family!r} takes no encoding"))
        if encoding:
            ENCODINGS[encoding]


def measure(configs: list[str], steps: int, eval_lengths: tuple[int, ...], bf16: bool = False,
            rounds: int = 2, methods: tuple[str, ...] = ()) -> dict:
    report = {"torch": torch.__version__, "device": device_description(DEVICE),
              "threads": torch.get_num_threads(), "matmul_peak_gflops": matmul_peak(), "configs": {}}
    if methods:
        report["methods"] = method_step_ratios(list(methods), steps)
    peak = report["matmul_peak_gflops"]
    for name in configs:
        config = perf_configs()[name]
        shape = batch_shape(config)
        sides = {"plain_loop": [], "solo": []} | ({"solo_bf16": []} if bf16 else {})
        for _ in range(rounds):  # interleaved: A B C A B C
            sides["plain_loop"].append(plain_loop_seconds(config, steps))
            sides["solo"].append(trainer_seconds(config, steps))
            if bf16:
                sides["solo_bf16"].append(trainer_seconds(config, steps, bf16=True))
        entry = {"task": config.task, "encoding": config.encoding, "batch_size": config.batch_size,
                 "train_length": config.train_length, "model": vars(config.model), **shape}
        for side, seconds in sides.items():
            step = statistics.median(seconds)
            flops = shape["useful_flops_per_step"] / step / 1e9
            entry[side] = {"seconds_per_run_step": step, "run_steps_per_s": 1 / step,
                           "real_tokens_per_s": shape["real_tokens_per_step"] / step,
                           "useful_gflops": flops, "share_of_peak": flops / peak}
        entry["solo_trainer_vs_plain_loop"] = entry["solo"]["run_steps_per_s"] / entry["plain_loop"]["run_steps_per_s"]
        entry["data_share_of_trainer_step"] = shape["data_seconds_per_step"] / entry["solo"]["seconds_per_run_step"]
        if name == "reference":
            entry["eval"] = {str(n): dict(zip(("seconds", "peak_rss_mb"), eval_seconds(config, n)))
                             for n in eval_lengths}
        report["configs"][name] = entry
    if bf16:
        report["bf16_accuracy_check"] = bf16_accuracy_check()
    return report


PERF_BASELINE = transformer_method("rope")  # what ``--methods`` times each method against


def method_config(method: str) -> RunConfig:
    """``quick``'s copy run (its model, batch and lengths) with another method."""
    family, encoding = method_parts(method)
    return get_preset("quick").run_config("copy", encoding, 0, family)


def method_step_ratios(methods: list[str], steps: int, rounds: int = 3) -> dict:
    """Seconds per training step (``train_run``, data included) of each
    method at ``quick``'s shapes beside ``PERF_BASELINE``'s, interleaved (A B
    A B), medians; the ratio is the method's step time over the baseline's."""
    sides = dict.fromkeys([PERF_BASELINE, *methods])
    seconds = {m: [] for m in sides}
    for _ in range(rounds):
        for method in sides:
            seconds[method].append(trainer_seconds(method_config(method), steps))
    base = statistics.median(seconds[PERF_BASELINE])
    return {m: {"seconds_per_step": statistics.median(s), "vs_baseline": statistics.median(s) / base}
            for m, s in seconds.items()}


def format_report(report: dict) -> str:
    lines = [f"fp32 matmul peak: {report['matmul_peak_gflops']:.0f} GFLOP/s "
             f"(torch {report['torch']}, {report['device']})", ""]
    for name, e in report["configs"].items():
        lines.append(f"{name}: {e['task']} / {e['encoding']}, batch {e['batch_size']}, lengths "
                     f"1..{e['train_length']}, d={e['model']['d_model']} x {e['model']['n_layers']} layers")
        lines.append(f"  {'':17s} {'run-steps/s':>11s} {'tokens/s':>9s} {'GFLOP/s':>8s} {'of peak':>8s} "
                     f"{'padding':>8s}")
        for side in [k for k in ("plain_loop", "solo", "solo_bf16") if k in e]:
            s = e[side]
            padding = e["padding_share_padded_batch"] if side == "plain_loop" else e["padding_share_trainer"]
            label = {"plain_loop": "plain loop", "solo": "solo trainer", "solo_bf16": "solo trainer bf16"}[side]
            lines.append(f"  {label:17s} {s['run_steps_per_s']:11.2f} {s['real_tokens_per_s']:9.0f} "
                         f"{s['useful_gflops']:8.1f} {100 * s['share_of_peak']:7.1f}% {100 * padding:7.1f}%")
        lines.append(f"  solo trainer / plain loop: {e['solo_trainer_vs_plain_loop']:.2f}x; "
                     f"data generation {100 * e['data_share_of_trainer_step']:.1f}% of a solo step")
        for length, ev in e.get("eval", {}).items():
            lines.append(f"  eval 512 samples at length {length}: {ev['seconds']:.1f} s, "
                         f"peak RSS {ev['peak_rss_mb']:.0f} MB")
        lines.append("")
    if "methods" in report:
        lines.append(f"training step at quick's shapes (copy 1..8, batch 64, d=64 x 2 layers) against "
                     f"{PERF_BASELINE}, interleaved, medians:")
        lines += [f"  {m:32s} {1000 * e['seconds_per_step']:8.1f} ms/step  {e['vs_baseline']:5.2f}x"
                  for m, e in report["methods"].items()]
        lines.append("")
    check = report.get("bf16_accuracy_check")
    if check:
        lines.append(f"bf16 autocast vs fp32 on smoke ({check['cells']} cells, {check['failed_in_bf16']} "
                     f"failed in bf16): OOD exact match differs by {100 * check['ood_exact_match_mean_abs_diff']:.2f} "
                     f"points on average (max {100 * check['ood_exact_match_max_abs_diff']:.2f}), OOD token "
                     f"accuracy by {100 * check['ood_token_accuracy_mean_abs_diff']:.2f} "
                     f"(max {100 * check['ood_token_accuracy_max_abs_diff']:.2f})")
    return "\n".join(lines)
