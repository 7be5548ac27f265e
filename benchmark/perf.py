"""``lengthbench perf``: how fast training and evaluation run on this machine.

One command, one run, every figure measured in it: the fp32 matmul peak;
then, for the reference configuration of the randomized-PE paper's code (5
layers, d=64, 8 heads, FFN 256, batch 128, reverse_string 1..40, RoPE) and
for ``quick``'s copy model:

* ``plain loop``: the baseline, the same model trained by the few lines a
  user would write (one padded batch per step, made once, mean loss, AdamW);
* ``trainer``: lengthbench's trainer (fresh data every step, length buckets,
  warmup/cosine, clipping), the two sides interleaved (A B A B), medians;

each as steps/s, real (non-padding) tokens/s, useful GFLOP/s (the FLOPs of
real tokens only) and its share of the matmul peak; the padding share of a
padded batch and of the trainer's buckets; the data-generation share of a
trainer step; and evaluation seconds and peak memory at task lengths 100 and
500 (512 samples, the paper's protocol), each in a fresh process.
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import time
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F

from benchmark.batching import training_batches
from benchmark.bench_generation import median_seconds
from benchmark.config import RunConfig
from benchmark.files import write_json
from benchmark.flops import training_flops
from benchmark.presets import get_preset
from benchmark.train import batch_tensors, build_model, train
from models.transformer import ModelSize
from tasks import IGNORE, get_task, make_batch

CPU = torch.device("cpu")
MATMUL_SHAPES = ((128 * 82, 64, 192), (128 * 82, 256, 64), (2048, 2048, 2048))


def perf_configs() -> dict[str, RunConfig]:
    quick = get_preset("quick")
    reference = replace(quick.run_config("reverse_string", "rope", 0), train_length=40, batch_size=128,
                        model=ModelSize(d_model=64, n_layers=5, n_heads=8, d_ff=256), warmup_steps=10)
    return {"reference": reference, "quick": quick.run_config("copy", "rope", 0)}


def matmul_peak(repeats: int = 5) -> float:
    """Best fp32 GFLOP/s over a few matmul shapes (the model's own among them)."""
    best = 0.0
    for m, k, n in MATMUL_SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        best = max(best, 2 * m * k * n / median_seconds(lambda: a @ b, repeats) / 1e9)
    return best


def _sample_lengths(config: RunConfig, task, rng) -> np.ndarray:
    return rng.integers(task.min_length, config.train_length + 1, size=config.batch_size)


def plain_loop_seconds(config: RunConfig, steps: int) -> float:
    """Seconds per step of the baseline loop on one fixed padded batch."""
    task = get_task(config.task)
    model = build_model(config, task, CPU).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    t = batch_tensors(make_batch(task, np.random.default_rng(0), _sample_lengths(
        config, task, np.random.default_rng(0))), CPU)

    def step():
        logits = model(t["tokens"], t["position_ids"], t["seq_lens"])
        loss = F.cross_entropy(logits.flatten(0, 1), t["targets"].flatten(), ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step()
    return median_seconds(step, steps)


def trainer_seconds(config: RunConfig, steps: int) -> float:
    """Seconds per step of ``train`` (data generation included)."""
    task = get_task(config.task)
    model = build_model(config, task, CPU)
    train(model, task, replace(config, steps=1), CPU)
    start = time.perf_counter()
    train(model, task, replace(config, steps=steps), CPU)
    return (time.perf_counter() - start) / steps


def batch_shape(config: RunConfig, samples: int = 20) -> dict:
    """Real tokens per step, padding shares and data-generation seconds."""
    task = get_task(config.task)
    rng = np.random.default_rng(1)
    real, padded_whole, padded_buckets, gen_seconds, tokens = [], [], [], [], []
    for _ in range(samples):
        lengths = _sample_lengths(config, task, rng)
        whole = make_batch(task, np.random.default_rng(2), lengths)
        start = time.perf_counter()
        buckets = [batch_tensors(b, CPU) for b in training_batches(task, rng, lengths)]
        gen_seconds.append(time.perf_counter() - start)
        real.append(int(whole.seq_lens.sum()))
        tokens.append(whole.seq_lens)
        padded_whole.append(whole.tokens.size)
        padded_buckets.append(sum(b["tokens"].numel() for b in buckets))
    return {"real_tokens_per_step": float(np.mean(real)),
            "padding_share_padded_batch": 1 - sum(real) / sum(padded_whole),
            "padding_share_buckets": 1 - sum(real) / sum(padded_buckets),
            "data_seconds_per_step": statistics.median(gen_seconds),
            "useful_flops_per_step": float(np.mean([training_flops(t, config.model, task.vocab_size)
                                                    for t in tokens]))}


def _eval_in_child(config: RunConfig, length: int, queue) -> None:
    from benchmark.evaluate import evaluate_length

    task = get_task(config.task)
    model = build_model(config, task, CPU).eval()
    start = time.perf_counter()
    evaluate_length(model, task, length, config, CPU)
    queue.put((time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def eval_seconds(config: RunConfig, length: int, samples: int = 512) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of evaluating one length, in a fresh process."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_eval_in_child, args=(replace(config, eval_samples=samples), length, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def measure(configs: list[str], steps: int, eval_lengths: tuple[int, ...], rounds: int = 2) -> dict:
    report = {"torch": torch.__version__, "threads": torch.get_num_threads(),
              "matmul_peak_gflops": matmul_peak(), "configs": {}}
    peak = report["matmul_peak_gflops"]
    for name in configs:
        config = perf_configs()[name]
        shape = batch_shape(config)
        sides = {"plain_loop": [], "trainer": []}
        for _ in range(rounds):  # interleaved: A B A B
            sides["plain_loop"].append(plain_loop_seconds(config, steps))
            sides["trainer"].append(trainer_seconds(config, steps))
        entry = {"task": config.task, "encoding": config.encoding, "batch_size": config.batch_size,
                 "train_length": config.train_length, "model": vars(config.model), **shape}
        for side, seconds in sides.items():
            step = statistics.median(seconds)
            flops = shape["useful_flops_per_step"] / step / 1e9
            entry[side] = {"seconds_per_step": step, "steps_per_s": 1 / step,
                           "real_tokens_per_s": shape["real_tokens_per_step"] / step,
                           "useful_gflops": flops, "share_of_peak": flops / peak}
        entry["trainer_vs_plain_loop"] = entry["trainer"]["steps_per_s"] / entry["plain_loop"]["steps_per_s"]
        entry["data_share_of_trainer_step"] = shape["data_seconds_per_step"] / entry["trainer"]["seconds_per_step"]
        if name == "reference":
            entry["eval"] = {str(n): dict(zip(("seconds", "peak_rss_mb"), eval_seconds(config, n)))
                             for n in eval_lengths}
        report["configs"][name] = entry
    return report


def format_report(report: dict) -> str:
    lines = [f"fp32 matmul peak: {report['matmul_peak_gflops']:.0f} GFLOP/s "
             f"(torch {report['torch']}, {report['threads']} threads)", ""]
    for name, e in report["configs"].items():
        lines.append(f"{name}: {e['task']} / {e['encoding']}, batch {e['batch_size']}, lengths "
                     f"1..{e['train_length']}, d={e['model']['d_model']} x {e['model']['n_layers']} layers")
        lines.append(f"  {'':12s} {'steps/s':>8s} {'tokens/s':>9s} {'GFLOP/s':>8s} {'of peak':>8s}")
        for side in ("plain_loop", "trainer"):
            s = e[side]
            lines.append(f"  {side:12s} {s['steps_per_s']:8.2f} {s['real_tokens_per_s']:9.0f} "
                         f"{s['useful_gflops']:8.1f} {100 * s['share_of_peak']:7.1f}%")
        lines.append(f"  trainer / plain loop: {e['trainer_vs_plain_loop']:.2f}x; padding: "
                     f"{100 * e['padding_share_padded_batch']:.1f}% of a padded batch, "
                     f"{100 * e['padding_share_buckets']:.1f}% in buckets; data generation "
                     f"{100 * e['data_share_of_trainer_step']:.1f}% of a trainer step")
        for length, ev in e.get("eval", {}).items():
            lines.append(f"  eval 512 samples at length {length}: {ev['seconds']:.1f} s, "
                         f"peak RSS {ev['peak_rss_mb']:.0f} MB")
        lines.append("")
    return "\n".join(lines)


def main(configs, steps: int, eval_lengths, out) -> dict:
    report = measure(configs, steps, tuple(eval_lengths))
    print(format_report(report))
    if out:
        print(f"wrote {write_json(out, report)}")
    return report

