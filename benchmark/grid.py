"""The grid runner: expands a preset into runs, skips finished ones, runs
the rest serially or in a process pool, and writes each record as soon as
its run ends (an interrupted grid keeps every finished run)."""

from __future__ import annotations

import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch
from tqdm.auto import tqdm

from benchmark.config import Preset, RunConfig
from benchmark.device import default_device
from benchmark.records import load_finished, write_record
from benchmark.runner import error_record, execute_run

log = logging.getLogger(__name__)


def auto_workers() -> int:
    """Small models use one core well, so on CPU one process per core (with
    one thread each) beats one process with many threads; on CUDA one."""
    if default_device().type == "cuda":
        return 1
    return max(1, min(8, os.cpu_count() or 1))


def grid_configs(preset: Preset) -> list[RunConfig]:
    return [preset.run_config(t, e, s) for t in preset.tasks for e in preset.encodings
            for s in preset.seeds]


def _bar_factory(position: int):
    def make(total, desc):
        return tqdm(total=total, desc=desc, leave=False, position=position, dynamic_ncols=True)
    return make


def _worker_init(threads: int, plugin_paths: tuple[str, ...]) -> None:
    torch.set_num_threads(threads)
    from models.plugins import load_plugins  # re-register third-party encodings in the child
    load_plugins(plugin_paths)


def _run_in_worker(config: RunConfig) -> dict:
    return execute_run(config, default_device())


def run_grid(preset: Preset, results_dir: Path, *, force: bool = False, workers: int = 1,
             plugin_paths: tuple[str, ...] = (), progress: bool = True) -> list[dict]:
    """Run (or load) every cell of ``preset``; returns the records in grid order."""
    configs = grid_configs(preset)
    records: dict[str, dict] = {}
    todo = []
    for config in configs:
        stored = None if force else load_finished(results_dir, config.run_id)
        if stored is not None:
            records[config.run_id] = stored
        else:
            todo.append(config)
    log.info("%d runs in grid, %d stored, %d to run", len(configs), len(records), len(todo))
    outer = tqdm(total=len(configs), initial=len(records), desc=f"grid {preset.name}",
                 disable=not progress, dynamic_ncols=True)

    def finish(record):
        write_record(results_dir, record)
        records[record["run_id"]] = record
        outer.set_postfix_str(f"{record['task']}/{record['encoding']}: {record['status']}")
        outer.update(1)

    if workers <= 1 or len(todo) <= 1:
        device = default_device()
        for config in todo:
            finish(execute_run(config, device, _bar_factory(1) if progress else None))
    else:
        workers = min(workers, len(todo))
        threads = max(1, torch.get_num_threads() // workers)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                 initargs=(threads, tuple(plugin_paths))) as pool:
            futures = {pool.submit(_run_in_worker, c): c for c in todo}
            for future in as_completed(futures):
                try:
                    record = future.result()
                except Exception as err:  # noqa: BLE001  (a worker died: record it, go on)
                    record = error_record(futures[future], default_device(), err)
                finish(record)
    outer.close()
    return [records[c.run_id] for c in configs]
