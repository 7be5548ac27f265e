"""The fit judged on inputs the run never trained on (``RunConfig.fit_unseen``).

At short lengths a task's input space can be small enough that training
draws much of it: over protocol v2's 4000 steps of 64 examples at lengths
1..16, a run sees about 86% of the 8,192 binary strings of length 13, and
every input of ``missing_duplicate_string`` at 13..16. Scoring the fit on
fresh draws from the evaluation stream then scores memorized strings too.
With ``fit_unseen``, each length the fit is judged on is scored on
evaluation-stream examples whose prompt the run's training stream (replayed
from its seed: no state is kept while training) never drew; where fewer
than ``eval_samples`` of the candidates are unseen, on the task's whole
input space at that length (``Task.whole_space``), every input once, and the
record says which (``examples``: "unseen" or "whole space").
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import EXAMPLE_KINDS
from lengthbench.benchmark.seeding import data_rng, eval_streams
from lengthbench.benchmark.train import training_batch
from lengthbench.core.errors import InputError
from lengthbench.tasks import SEP, Batch, Task, assemble_batch, get_task, make_batch

CANDIDATES_PER_SAMPLE = 16  # evaluation-stream candidates drawn per example wanted
UNSEEN, WHOLE_SPACE = EXAMPLE_KINDS  # a per-length row's ``examples``


def prompts(batch: Batch) -> list[bytes]:
    """Each row's prompt (``BOS input SEP``, the tokens the answer depends on) as bytes."""
    ends = (batch.tokens == SEP).argmax(1)
    return [row[: end + 1].tobytes() for row, end in zip(batch.tokens, ends)]


def drawn_prompts(task: Task, config: RunConfig, steps: int) -> dict[int, set[bytes]]:
    """The prompts the run's first ``steps`` training batches held, by task
    length, for the lengths its fit is judged on (the data stream replayed)."""
    lengths = set(config.fit_lengths())
    drawn: dict[int, set[bytes]] = {n: set() for n in lengths}
    rng = data_rng(config.seed)
    for _ in range(steps):
        batch = training_batch(task, config, rng)
        for n, prompt in zip(batch.lengths.tolist(), prompts(batch)):
            if n in lengths:
                drawn[n].add(prompt)
    return drawn


def rows_of(batch: Batch, rows: np.ndarray) -> Batch:
    """The batch's ``rows``, in that order, its columns cut to the longest of them."""
    width = int(batch.seq_lens[rows].max())
    return Batch(*(getattr(batch, name)[rows, :width] for name in ("tokens", "targets", "scored", "position_ids")),
                 batch.seq_lens[rows], batch.lengths[rows])


def unseen_batch(task: Task, length: int, rng: np.random.Generator, n_samples: int,
                 drawn: set[bytes]) -> tuple[Batch, str]:
    """``n_samples`` examples of ``length`` from the stream ``rng`` whose prompt
    is not in ``drawn`` (the first unseen of ``CANDIDATES_PER_SAMPLE`` times
    as many candidates), "unseen"; where too few are, the task's whole space
    at that length, "whole space". Refuses (ValueError) a task that cannot
    list it."""
    candidates = make_batch(task, rng, np.full(CANDIDATES_PER_SAMPLE * n_samples, length))
    fresh = np.flatnonzero([prompt not in drawn for prompt in prompts(candidates)])
    if len(fresh) >= n_samples:
        return rows_of(candidates, fresh[:n_samples]), UNSEEN
    space = task.whole_space(length)
    if space is None:
        raise ValueError(f"only {len(fresh)} of {len(candidates.tokens)} candidates of {task.name} at length {length} "
                         f"are unseen in training (fewer than eval_samples {n_samples}), and the task cannot list "
                         "its inputs to score them all; lower eval_samples or drop fit_unseen for this task")
    return assemble_batch([(length, space)]), WHOLE_SPACE


def drawn_before_training(task: Task, config: RunConfig) -> dict[int, set[bytes]] | None:
    """For a run with a fixed budget (no stop at fit), what its whole training will draw, replayed before it
    trains, with each fit length's unseen draw made now as its evaluation will make it: a task that cannot list
    its inputs and would have too few unseen ones left raises the evaluation's ValueError here, before hours of
    training, not after them (the fit pilot's 16000-step runs did). None where the run may stop early."""
    if not config.fit_unseen or config.fit_patience:
        return None
    drawn = drawn_prompts(task, config, config.steps)
    for n in config.fit_lengths():
        unseen_batch(task, n, eval_streams(config.eval_seed, n, torch.device("cpu"))[0], config.eval_samples,
                     drawn[n])
    return drawn


def drawn_shares(task_label: str, config: RunConfig) -> dict[int, float]:
    """At each fit length, the share of the evaluation stream's first
    ``eval_samples`` examples whose prompt the run's training (``config.steps``) drew."""
    task = get_task(task_label)
    drawn = drawn_prompts(task, config, config.steps)
    shares = {}
    for n in config.fit_lengths():
        rng, _ = eval_streams(config.eval_seed, n, torch.device("cpu"))
        sample = prompts(make_batch(task, rng, np.full(config.eval_samples, n)))
        shares[n] = sum(prompt in drawn[n] for prompt in sample) / len(sample)
    return shares


def main(argv: list[str] | None = None) -> int:
    """``python -m lengthbench.benchmark.unseen --preset P``: per task, how much
    of what its fit is scored on seed 0's training drew (the evidence for ``fit_unseen``)."""
    parser = argparse.ArgumentParser(prog="python -m lengthbench.benchmark.unseen", description=main.__doc__)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--tasks", help="comma-separated subset of the preset's tasks")
    args = parser.parse_args(argv)
    try:
        preset = get_preset(args.preset)
        tasks = args.tasks.split(",") if args.tasks else preset.grid_tasks()
        unknown = sorted(set(tasks) - set(preset.grid_tasks()))
        if unknown:
            raise InputError(f"{', '.join(unknown)} not in preset {args.preset!r}; its tasks: "
                             f"{', '.join(preset.grid_tasks())}")
    except InputError as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return 2
    print("| task | fit_unseen | share of the fit's examples drawn in training, by length |\n|---|---|---|")
    for label in tasks:
        config = preset.run_config(label, preset.encodings[0], 0)
        shares = drawn_shares(label, config)
        print(f"| {label} | {'yes' if config.fit_unseen else 'no'} | "
              + ", ".join(f"{n}: {100 * s:.0f}%" for n, s in shares.items()) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
