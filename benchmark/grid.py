"""The grid runner: expands a preset into runs, skips finished ones, hands
the rest to an executor (``EXECUTORS``: this
machine or a Ray cluster) and writes each record as soon as its run ends (an
interrupted grid keeps every finished run). A run is claimed before it
trains (``claims``), so drivers sharing a results folder split the grid;
runs another driver holds are collected at the end. Ctrl-C (SIGINT) stops
the grid within a few seconds and raises ``GridInterrupted``, after every
record finished before it is on disk.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm.auto import tqdm

from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S
from lengthbench.benchmark.config import Preset, RunConfig
from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.executors import Executor, RunJob, local_executor
from lengthbench.benchmark.live_log import check_live_log
from lengthbench.benchmark.ray_executor import RayExecutor, require_ray
from lengthbench.benchmark.records import RunRecord, UnreadableRecord
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.core.errors import InputError
from lengthbench.core.registry import Registry
from lengthbench.models.families import family_entry
from lengthbench.models.saved_model import SAVED_FAMILIES
from lengthbench.tasks.cells import cell_name, method_name

log = logging.getLogger(__name__)

CLAIM_POLL_S = 1.0  # how often a driver looks for records of runs another process claimed


@dataclass(frozen=True)
class ExecutorEntry:
    """``make(job, workers=, n_runs=, progress=, address=)`` builds the
    executor; ``check()`` refuses (an ``InputError``) when it cannot run here."""

    make: Callable[..., Executor]
    description: str
    check: Callable[[], object] = lambda: None
    rank: float | None = None  # its place in `--executor`'s choices (None: after the ranked)


EXECUTORS: Registry[ExecutorEntry] = Registry("executor", rank=lambda entry: entry.rank)
EXECUTORS.add("local", ExecutorEntry(local_executor, "this machine: in this process, or one process per worker",
                                     rank=10))
EXECUTORS.add("ray", ExecutorEntry(RayExecutor, "a Ray cluster (--address; default: a local one)", require_ray,
                                   rank=20))


class GridInterrupted(Exception):
    """The grid was interrupted; every record finished before it is on disk."""

    def __init__(self, finished: int, total: int, finished_now: int, records: list[RunRecord] = ()):
        super().__init__(f"interrupted: {finished} of {total} runs have records "
                         f"({finished_now} finished in this invocation), {total - finished} pending; "
                         "rerun the same command to resume")
        self.finished, self.total, self.finished_now = finished, total, finished_now
        self.records = list(records)  # the grid's records on disk when it stopped (for the sitting's provenance)


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
    """Every run of the preset's grid (its cuts left out), in grid order."""
    preset.check_cuts()
    configs = [preset.run_config(t, e, s, f) for t in preset.grid_tasks() for f, e in preset.methods()
               if preset.cut_reason(t, method_name(f, e)) is None for s in preset.seeds]
    seen = set()
    for config in configs:
        if config.run_id in seen:
            raise InputError(f"run {config.run_id} appears twice in preset {preset.name!r}; "
                             "a grid holds every (task, method, seed) once")
        seen.add(config.run_id)
    return configs


def _collect_elsewhere(pending: list[RunConfig], folder: ResultsFolder, since: float, job: RunJob,
                       finish) -> None:
    """Wait for the records of runs another process claimed (any record
    written since ``since``, this grid's start); train any whose claim went
    away without one (its owner stopped, or gave up on it)."""
    pending = list(pending)
    if pending:
        log.info("waiting for %d runs claimed by another process", len(pending))
    while pending:
        for config in list(pending):
            if folder.held_elsewhere(config.run_id):  # the claim first: a record comes before its release
                continue
            stored = folder.stored(config.run_id)
            if stored is not None and folder.record_path(config.run_id).stat().st_mtime >= since:
                finish(stored, trained_here=False)
                pending.remove(config)
                continue
            record = job(config).record
            if record is not None:
                finish(record)
                pending.remove(config)
        if pending:
            time.sleep(CLAIM_POLL_S)


def run_grid(preset: Preset, results: Path | ResultsFolder, *, force: bool = False, workers: int = 1,
             plugins: tuple = (), progress: bool = True,
             checkpoint_every: float = CHECKPOINT_EVERY_S, executor: str = "local",
             address: str | None = None, save_predictions: bool = False,
             live_log: str | None = None, save_models: bool = False) -> list[RunRecord]:
    """Run (or load) every cell of ``preset`` into the folder ``results``;
    returns the records in grid order.

    Runs go to ``executor`` (an ``EXECUTORS`` name; ``address`` is a Ray
    cluster's) one by one, checkpointed every ``checkpoint_every`` seconds
    (``checkpoints``).
    ``plugins`` are ``models.plugins.PluginFile``s that workers load. With
    ``save_predictions``, each run trained here keeps its predictions
    beside its record (``benchmark.predictions``); with ``save_models``, its
    ``transformers`` model with its tokenizer (``models.saved_model``).
    Raises ``GridInterrupted`` on Ctrl-C, after saving what finished."""
    entry = EXECUTORS[executor]
    configs = grid_configs(preset)
    started = time.time()
    folder = ResultsFolder(results).create()
    records: dict[str, RunRecord] = {}
    todo = []
    unreadable = []
    for config in configs:
        try:
            stored = None if force else folder.finished(config.run_id)
        except UnreadableRecord as err:
            unreadable.append(str(err))
            continue
        if stored is not None and save_predictions and (problem := folder.set_aside_damaged_predictions(
                config.run_id)) is not None:
            log.warning("the saved predictions of %s are damaged (%s): they and the run's record are moved aside "
                        "(.invalid) and the run trains again to write them whole", config.run_id, problem)
            stored = None
        if stored is not None:
            records[config.run_id] = stored
        else:
            todo.append(config)
    if unreadable:
        raise InputError(f"{len(unreadable)} record(s) cannot be read, so their cells can be neither reused nor "
                         f"safely rerun ({'; '.join(unreadable[:3])}{'; ...' if len(unreadable) > 3 else ''}); make "
                         "them readable regular files, move them out of the folder, or use another --results")
    stored_count = len(records)
    log.info("%d runs in grid, %d stored, %d to run", len(configs), stored_count, len(todo))
    stale = [path.name for config in todo for path in folder.stale(config)]
    if stale:
        log.warning("%d records were made by other code versions (stale), so their cells run again: %s%s",
                    len(stale), ", ".join(stale[:3]), ", ..." if len(stale) > 3 else "")
    check_live_log(live_log, folder.path)
    missing = sorted({why for config in todo if (why := family_entry(config.family).missing()) is not None})
    if missing:
        raise InputError(f"{'; '.join(missing)} (nothing was run)")
    outer = tqdm(total=len(configs), initial=len(records), desc=f"grid {preset.name}",
                 disable=not progress, dynamic_ncols=True)

    elsewhere: list[RunConfig] = []
    trained = []

    def finish(record: RunRecord, trained_here=True):
        if trained_here:
            trained.append(record.run_id)
            folder.write(record)
            folder.release(record.run_id)
        records[record.run_id] = record
        folder.remove_finished_checkpoints(set(records))
        outer.set_postfix_str(f"{cell_name(record.task, record.method)}: {record.status}")
        outer.update(1)

    job = RunJob(folder, force, checkpoint_every, tuple(plugins), save_predictions, live_log, save_models)
    try:
        with entry.make(job, workers=workers, n_runs=len(todo), progress=progress, address=address) as runner:
            runner.submit(todo)
            for outcome in runner.completed():
                if outcome.record is None:
                    elsewhere.append(outcome.config)
                else:
                    finish(outcome.record)
        _collect_elsewhere(elsewhere, folder, started, job, finish)
        log.info("%d runs trained here, %d by another process, %d reused", len(trained),
                 len(todo) - len(trained), stored_count)
    except KeyboardInterrupt:
        folder.release_abandoned()
        for run_id in trained:  # an interrupt inside finish, after its write: the record is on disk and counts
            if run_id not in records and (stored := folder.stored(run_id)) is not None:
                records[run_id] = stored
        raise GridInterrupted(len(records), len(configs), len(records) - stored_count,
                              list(records.values())) from None
    finally:
        outer.close()
    finished = [r for r in records.values() if r.status == "ok"]
    if save_predictions:
        _report_missing("predictions", "--save-predictions",
                        [r.run_id for r in finished if not folder.predictions_path(r.run_id).exists()])
    if save_models:
        _report_missing("model", "--save-models", [r.run_id for r in finished if r.config.family in SAVED_FAMILIES
                                                   and not (folder.model_path(r.run_id) / "config.json").is_file()])
    return [records[c.run_id] for c in configs]


def _report_missing(what: str, flag: str, missing: list[str]) -> None:
    """Predictions and models are kept only by the run that trains them (a record keeps no model to evaluate
    again): say which finished runs have none."""
    if missing:
        log.warning("%d of the grid's finished runs have no saved %s (trained before, without %s; a record keeps "
                    "no model to evaluate again): %s%s; --force retrains them", len(missing), what, flag,
                    ", ".join(missing[:3]), ", ..." if len(missing) > 3 else "")
