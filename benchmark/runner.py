"""Executing a group of grid cells into run records; never raises for a bad cell.

``run_claimed`` is the unit of work every executor runs: claim the group's
runs (``claims``), train and evaluate the claimed ones as one stacked model
(``execute_group``), return their records and the ids another process holds.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S, Checkpoint
from lengthbench.benchmark.claims import Heartbeat, claim_path, release, try_claim
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.evaluate import evaluate, held_out_fit
from lengthbench.benchmark.records import RunRecord, load_finished, summarize
from lengthbench.benchmark.train import build_group, train_group
from lengthbench.tasks import get_task


def error_record(config: RunConfig, err: BaseException) -> RunRecord:
    """The record of a run that failed outside ``execute_group`` (a dead worker)."""
    record = RunRecord.start(config, default_device()).record_error(err)
    record.wall_time_s = 0.0
    return record


def execute_group(configs: list[RunConfig], device: torch.device, progress_factory=None,
                  checkpoints: Path | None = None, checkpoint_every: float = CHECKPOINT_EVERY_S) -> list[RunRecord]:
    """Train and evaluate a group of cells (``train.group_key`` equal) as one
    stacked model; one record per cell, in order. Errors become ``error``
    records: when a group fails, each of its runs is retried alone, so the
    error lands on the cell that caused it. With ``checkpoints`` (a results
    folder), training state is saved there every ``checkpoint_every`` s and
    an interrupted group resumes from it."""
    records = [RunRecord.start(c, device) for c in configs]
    start = time.perf_counter()
    todo = []
    for i, config in enumerate(configs):
        try:
            reason = config.not_applicable()
        except Exception as err:  # noqa: BLE001  (one bad cell must not stop the grid)
            records[i].record_error(err).wall_time_s = 0.0
            continue
        if reason is None:
            todo.append(i)
        else:
            records[i].status, records[i].reason, records[i].wall_time_s = "not_applicable", reason, 0.0
    if not todo:
        return records
    try:
        checkpoint = (Checkpoint(checkpoints, [configs[i].run_id for i in todo], checkpoint_every)
                      if checkpoints is not None else None)
        _train_and_evaluate([configs[i] for i in todo], [records[i] for i in todo], device, progress_factory,
                            checkpoint)
    except Exception as err:  # noqa: BLE001
        if len(todo) == 1:
            records[todo[0]].record_error(err)
        else:
            for i in todo:
                records[i] = execute_group([configs[i]], device, progress_factory, checkpoints, checkpoint_every)[0]
            return records
    share = round((time.perf_counter() - start) / len(todo), 3)
    for i in todo:
        records[i].wall_time_s, records[i].group_size = share, len(todo)
    return records


def _train_and_evaluate(configs: list[RunConfig], records: list[RunRecord], device: torch.device,
                        progress_factory, checkpoint: Checkpoint | None) -> None:
    task = get_task(configs[0].task)
    model = build_group(configs, task, device)
    for r, record in enumerate(records):
        record.n_parameters = model.n_parameters(r)
    bar = progress_factory(configs[0].steps, _label("train", configs)) if progress_factory else None
    results = train_group(model, task, configs, device, bar, checkpoint,
                          fit_check=lambda runs: held_out_fit(model, task, configs[0], device, runs))
    if bar is not None:
        bar.close()
    for record, result in zip(records, results):
        record.training = {"steps_done": result.steps_done, "stopped": result.stopped,
                           "final_loss": result.final_loss, "loss_curve": result.loss_curve}
        if result.fit_checks is not None:
            record.training["fit_checks"] = result.fit_checks
        if result.diverged:
            record.status = "diverged"
    alive = [r for r, result in enumerate(results) if not result.diverged]
    if not alive:
        return
    bar = progress_factory(len(configs[0].eval_lengths()), _label("eval", configs)) if progress_factory else None
    per_run = evaluate(model, task, configs[0], device, alive, bar)
    if bar is not None:
        bar.close()
    for r in alive:
        records[r].status, records[r].per_length = "ok", per_run[r]
        records[r].summary = summarize(per_run[r], configs[r])


def _label(stage: str, configs: list[RunConfig]) -> str:
    first = configs[0]
    return f"{stage} {first.task}/{first.method}" + (f" +{len(configs) - 1}" if len(configs) > 1 else "")


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
                checkpoint_every: float = CHECKPOINT_EVERY_S) -> tuple[list[RunRecord], list[str]]:
    """Claim, train and evaluate a group: (records of the runs trained here,
    ids of runs left to another process). Claims stay fresh while it works."""
    mine, elsewhere = claim_group(group, results_dir, force)
    if not mine:
        return [], elsewhere
    with Heartbeat([claim_path(results_dir, c.run_id) for c in mine]):
        return execute_group(mine, default_device(), progress_factory, results_dir, checkpoint_every), elsewhere
