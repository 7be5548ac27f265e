"""``lengthbench bench-generation``: how fast each task makes a batch.

For every task and length it prints, in one run on this machine:

* ``vectorized``: median time of ``make_batch`` for a batch (default 128);
* ``per example``: the baseline, median time to make the same batch one
  example at a time (the sampler called with batch size 1 in a Python loop,
  plus the pure-Python oracle ``Task.solve`` for each target), which is how
  the reference implementations' pure-Python samplers work; and the ratio;
* ``of step``: the vectorized time as a fraction of one training step of
  the ``quick`` model on a batch of that task at its quick training lengths.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.tools.perf import median_seconds, plain_loop_seconds
from lengthbench.core.errors import InputError
from lengthbench.tasks import TASKS, get_task, make_batch, task_names


def train_step_time(task_name: str, batch_size: int, repeats: int = 3) -> float:
    """Seconds for one forward/backward/AdamW step of the quick model (``perf``'s plain loop)."""
    config = get_preset("quick").run_config(task_name, "rope", 0)
    return plain_loop_seconds(replace(config, batch_size=batch_size), repeats)


def bench(lengths=(40, 500), batch_size: int = 128, repeats: int = 5, tasks=None):
    """Yields one result dict per (task, length)."""
    for name in tasks or task_names():
        task = get_task(name)
        step = train_step_time(name, batch_size)
        for length in lengths:
            if task.max_length is not None and length > task.max_length:
                continue
            lens = np.full(batch_size, length)
            vectorized = median_seconds(lambda: make_batch(task, np.random.default_rng(0), lens), repeats)

            def per_example():
                rng = np.random.default_rng(0)
                for _ in range(batch_size):
                    task.solve(task.sample(rng, length, 1).inputs[0].tolist())

            baseline = median_seconds(per_example, max(1, repeats // 2))
            yield {"task": name, "length": length, "batch": batch_size, "vectorized_ms": 1e3 * vectorized,
                   "per_example_ms": 1e3 * baseline, "speedup": baseline / vectorized,
                   "fraction_of_train_step": vectorized / step}


def table_lines(lengths, batch_size, tasks=None):
    """The printed table, a line at a time as each (task, length) is measured; ``tasks`` (default all) are
    checked by name before anything is timed."""
    if tasks is not None:
        if not tasks:
            raise InputError("--tasks: the list is empty; give task names, or leave it out for all")
        for name in tasks:
            TASKS[name]
    return _lines(lengths, batch_size, tasks)


def _lines(lengths, batch_size, tasks):
    yield (f"{'task':30s} {'length':>6s} {'vectorized ms':>14s} {'per-example ms':>15s} "
           f"{'speedup':>8s} {'of step':>8s}")
    for r in bench(lengths, batch_size, tasks=tasks):
        yield (f"{r['task']:30s} {r['length']:6d} {r['vectorized_ms']:14.2f} {r['per_example_ms']:15.2f} "
               f"{r['speedup']:7.1f}x {r['fraction_of_train_step']:8.2f}")
