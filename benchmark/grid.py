"""The grid runner: expands a preset into runs, skips finished ones, forms
stacked groups of the rest, runs them serially, in a process pool or on a
Ray cluster (``ray_executor``), and writes each record as soon as its run
ends (an interrupted grid keeps every finished run). A run is claimed before
it trains (``claims``), so drivers sharing a results folder split the grid;
runs another driver holds are collected at the end.

Interrupts: Ctrl-C (SIGINT) stops the grid within a few seconds. Pool
workers ignore SIGINT (the driver alone decides), the driver kills them,
keeps every record finished before the interrupt and raises
``GridInterrupted``. Workers also exit on their own when the driver dies
(``kill -9``), so no orphan keeps training.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from lengthbench.benchmark.config import Preset, RunConfig
from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S, remove_finished
from lengthbench.benchmark.claims import Heartbeat, claim_path, held_elsewhere, release, release_abandoned, try_claim
from lengthbench.benchmark.ray_executor import run_on_ray
from lengthbench.benchmark.records import load_finished, record_path, stale_records, stored_record, write_record
from lengthbench.benchmark.runner import error_record, execute_group
from lengthbench.benchmark.train import group_key
from lengthbench.tasks.base import InputError

log = logging.getLogger(__name__)

PARENT_POLL_S = 0.5  # how often a worker checks that the driver is alive
CLAIM_POLL_S = 1.0  # how often a driver looks for records of runs another process claimed
GROUP_SIZE_CUDA = 32


class GridInterrupted(Exception):
    """The grid was interrupted; every record finished before it is on disk."""

    def __init__(self, finished: int, total: int, finished_now: int):
        super().__init__(f"interrupted: {finished} of {total} runs have records "
                         f"({finished_now} finished in this invocation), {total - finished} pending; "
                         "rerun the same command to resume")
        self.finished, self.total, self.finished_now = finished, total, finished_now


def auto_workers() -> int:
    """Small models use one core well, so on CPU one process per core (with
    one thread each) beats one process with many threads; on CUDA one."""
    if default_device().type == "cuda":
        return 1
    return max(1, min(8, os.cpu_count() or 1))


def resolve_workers(requested: int) -> int:
    """``0`` means auto; more processes than CPU cores only slow each other
    down, so a larger request is capped, with a warning."""
    if requested == 0:
        return auto_workers()
    cores = os.cpu_count() or 1
    if requested > cores:
        log.warning("--workers %d capped at %d, the number of CPU cores here", requested, cores)
        return cores
    return requested


def grid_configs(preset: Preset) -> list[RunConfig]:
    configs = [preset.run_config(t, e, s, f) for t in preset.tasks for f, e in preset.methods()
               for s in preset.seeds]
    seen = set()
    for config in configs:
        if config.run_id in seen:
            raise InputError(f"run {config.run_id} appears twice in preset {preset.name!r}; "
                             "a grid holds every (task, method, seed) once")
        seen.add(config.run_id)
    return configs


def _bar_factory(position: int):
    def make(total, desc):
        return tqdm(total=total, desc=desc, leave=False, position=position, dynamic_ncols=True)
    return make


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_init(threads: int, plugins: tuple, parent: int) -> None:
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    torch.set_num_threads(threads)
    from lengthbench.models.plugins import load_plugins  # re-register third-party encodings in the child
    load_plugins(plugins)


def claim_group(group: list[RunConfig], results_dir: Path, force: bool) -> tuple[list[RunConfig], list[str]]:
    """(the runs of ``group`` this process claimed and must train, the run ids
    another process holds or has just finished)."""
    mine, elsewhere = [], []
    for config in group:
        if not try_claim(results_dir, config.run_id):
            elsewhere.append(config.run_id)
        elif not force and load_finished(results_dir, config.run_id, set_aside=False) is not None:
            release(results_dir, config.run_id)  # finished by another driver since this one started
            elsewhere.append(config.run_id)
        else:
            mine.append(config)
    return mine, elsewhere


def run_claimed(group: list[RunConfig], results_dir: Path, force: bool, progress_factory=None,
                checkpoint_every: float = CHECKPOINT_EVERY_S) -> tuple[list[dict], list[str]]:
    """Claim, train and evaluate a group: (records of the runs trained here,
    ids of runs left to another process). Claims stay fresh while it works."""
    mine, elsewhere = claim_group(group, results_dir, force)
    if not mine:
        return [], elsewhere
    with Heartbeat([claim_path(results_dir, c.run_id) for c in mine]):
        return execute_group(mine, default_device(), progress_factory, results_dir, checkpoint_every), elsewhere


class _SigintIgnored:
    """Ignore SIGINT while worker processes start: they inherit the ignored
    disposition (Python keeps it, instead of raising KeyboardInterrupt), so
    a terminal's Ctrl-C reaches the driver alone, even during their import."""

    def __enter__(self):
        self.active = threading.current_thread() is threading.main_thread()
        if self.active:
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc):
        if self.active:
            signal.signal(signal.SIGINT, self.previous)


# Worker processes start by importing the main script; one that starts a grid at its top level
# (no ``if __name__ == "__main__":``) makes every worker die at start.
UNGUARDED_SCRIPT_HINT = ("If the grid was started from a Python script, worker processes import that script: "
                         "call lengthbench.run under `if __name__ == \"__main__\":`, or pass workers=1.")


def _run_pool(todo: list[list[RunConfig]], workers: int, plugins: tuple, results_dir: Path, force: bool,
              checkpoint_every: float, finish, leave) -> None:
    threads = max(1, torch.get_num_threads() // workers)
    ctx = multiprocessing.get_context("spawn")
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(threads, tuple(plugins), os.getpid()))
    try:
        with _SigintIgnored():
            futures = {pool.submit(run_claimed, g, results_dir, force, None, checkpoint_every): g for g in todo}
        for future in as_completed(futures):
            try:
                records, elsewhere = future.result()
            except Exception as err:  # noqa: BLE001  (a worker died: record it, go on)
                if isinstance(err, BrokenProcessPool) and getattr(sys.modules["__main__"], "__file__", None):
                    err = BrokenProcessPool(f"{err} {UNGUARDED_SCRIPT_HINT}")
                records, elsewhere = [error_record(c, default_device(), err) for c in futures[future]], []
            for record in records:
                finish(record)
            leave(elsewhere)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in set(multiprocessing.active_children()) - before:
            process.kill()
            process.join(PARENT_POLL_S * 4)
        raise
    pool.shutdown()


def _collect_elsewhere(pending: list[RunConfig], results_dir: Path, force: bool, since: float,
                       checkpoint_every: float, finish) -> None:
    """Wait for the records of runs another process claimed (any record
    written since ``since``, this grid's start); train any whose claim went
    away without one (its owner stopped, or gave up on it)."""
    pending = list(pending)
    if pending:
        log.info("waiting for %d runs claimed by another process", len(pending))
    while pending:
        for config in list(pending):
            if held_elsewhere(results_dir, config.run_id):  # the claim first: a record comes before its release
                continue
            stored = stored_record(results_dir, config.run_id)
            if stored is not None and record_path(results_dir, config.run_id).stat().st_mtime >= since:
                finish(stored, trained_here=False)
                pending.remove(config)
                continue
            done, _ = run_claimed([config], results_dir, force, checkpoint_every=checkpoint_every)
            for record in done:
                finish(record)
                pending.remove(config)
        if pending:
            time.sleep(CLAIM_POLL_S)


def form_groups(todo: list[RunConfig], group_size: int) -> list[list[RunConfig]]:
    """Runs that can share a stacked model (equal ``group_key``: same task,
    shape and schedule), in grid order, cut into groups of at most
    ``group_size``."""
    by_key: dict[str, list[RunConfig]] = {}
    for config in todo:
        by_key.setdefault(group_key(config), []).append(config)
    groups = []
    for members in by_key.values():
        n_groups = -(-len(members) // group_size)
        sizes = [len(members) // n_groups + (i < len(members) % n_groups) for i in range(n_groups)]
        starts = np.cumsum([0] + sizes)
        groups += [members[a:b] for a, b in zip(starts[:-1], starts[1:])]
    return groups


def auto_group_size(todo: list[RunConfig], workers: int) -> int:
    """On CUDA, large groups fill the device (bounded by a quarter of its free
    memory and by one group per worker). On CPU, runs train alone: stacking
    gains ~15% on quick-sized models and loses ~8% on the reference model
    (attention dominates; ``lengthbench perf``), and a run trained alone
    rounds exactly as a plain model, so its record does not depend on which
    other runs were still to do. ``--group-size`` stacks on CPU too."""
    if default_device().type != "cuda" or not todo:
        return 1
    budget = torch.cuda.mem_get_info()[0] / 4
    by_memory = max(1, int(budget // max(activation_bytes(c) for c in todo)))
    per_worker = -(-len(todo) // max(1, workers))
    return max(1, min(GROUP_SIZE_CUDA, by_memory, per_worker))


def activation_bytes(config: RunConfig) -> float:
    """Rough float32 activation memory of one run's training step: per token
    and layer ~32 d_model-wide tensors, plus the attention scores."""
    m, width = config.model, 2 * config.train_length + 3
    tokens = config.batch_size * width
    return 4.0 * m.n_layers * (tokens * (32 * m.d_model + 4 * m.d_ff) + config.batch_size * m.n_heads * width ** 2)


def resolve_group_size(requested: int, todo: list[RunConfig], workers: int) -> int:
    """``0`` means auto (``auto_group_size``)."""
    return requested or auto_group_size(todo, workers)


EXECUTORS = ("local", "ray")


def run_grid(preset: Preset, results_dir: Path, *, force: bool = False, workers: int = 1,
             group_size: int = 0, plugins: tuple = (), progress: bool = True,
             checkpoint_every: float = CHECKPOINT_EVERY_S, executor: str = "local",
             address: str | None = None) -> list[dict]:
    """Run (or load) every cell of ``preset``; returns the records in grid order.

    Groups run in this process or a local pool (``executor="local"``), or as
    tasks of a Ray cluster (``"ray"``, at ``address``; None starts a local one).
    Runs are trained in stacked groups of at most ``group_size`` (0: auto),
    checkpointed every ``checkpoint_every`` seconds (``checkpoints``).

    ``plugins`` are ``models.plugins.PluginFile``s that pool workers load.
    Raises ``GridInterrupted`` on Ctrl-C, after saving what finished."""
    if executor not in EXECUTORS:
        raise InputError(f"executor {executor!r} is not known; valid: {', '.join(EXECUTORS)}")
    configs = grid_configs(preset)
    started = time.time()
    Path(results_dir).mkdir(parents=True, exist_ok=True)
    records: dict[str, dict] = {}
    todo = []
    for config in configs:
        stored = None if force else load_finished(results_dir, config.run_id)
        if stored is not None:
            records[config.run_id] = stored
        else:
            todo.append(config)
    stored_count = len(records)
    log.info("%d runs in grid, %d stored, %d to run", len(configs), stored_count, len(todo))
    stale = [path.name for config in todo for path in stale_records(results_dir, config)]
    if stale:
        log.warning("%d records were made by other code versions (stale), so their cells run again: %s%s",
                    len(stale), ", ".join(stale[:3]), ", ..." if len(stale) > 3 else "")
    outer = tqdm(total=len(configs), initial=len(records), desc=f"grid {preset.name}",
                 disable=not progress, dynamic_ncols=True)

    elsewhere: list[str] = []
    trained = []

    def finish(record, trained_here=True):
        if trained_here:
            trained.append(record["run_id"])
            write_record(results_dir, record)
            release(results_dir, record["run_id"])
        records[record["run_id"]] = record
        remove_finished(results_dir, set(records))
        outer.set_postfix_str(f"{record['task']}/{record['method']}: {record['status']}")
        outer.update(1)

    groups = form_groups(todo, resolve_group_size(group_size, todo, workers))
    try:
        if executor == "ray":
            run_on_ray(groups, results_dir, force, checkpoint_every, plugins, address, finish, elsewhere.extend,
                       lambda config, err: error_record(config, default_device(), err))
        elif workers <= 1 or len(groups) <= 1:
            for group in groups:
                done, left = run_claimed(group, results_dir, force, _bar_factory(1) if progress else None,
                                         checkpoint_every)
                for record in done:
                    finish(record)
                elsewhere.extend(left)
        else:
            _run_pool(groups, min(workers, len(groups)), plugins, results_dir, force, checkpoint_every, finish,
                      elsewhere.extend)
        by_id = {c.run_id: c for c in configs}
        _collect_elsewhere([by_id[r] for r in elsewhere], results_dir, force, started, checkpoint_every, finish)
        log.info("%d runs trained here, %d by another process, %d reused", len(trained),
                 len(todo) - len(trained), stored_count)
    except KeyboardInterrupt:
        release_abandoned(results_dir)
        raise GridInterrupted(len(records), len(configs), len(records) - stored_count) from None
    finally:
        outer.close()
    return [records[c.run_id] for c in configs]
