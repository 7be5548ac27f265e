"""Executing a group of grid cells into run records; never raises for a bad cell."""

from __future__ import annotations

import os
import platform
import socket
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import torch

from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S, Checkpoint
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.device import device_description
from lengthbench.benchmark.evaluate import evaluate, summarize
from lengthbench.benchmark.records import RECORD_SCHEMA_VERSION
from lengthbench.benchmark.train import build_group, train_group
from lengthbench.benchmark.version import code_version
from lengthbench.models import build_encoding
from lengthbench.tasks import get_task


def base_record(config: RunConfig, device: torch.device) -> dict:
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "run_id": config.run_id,
        "task": config.task,
        "encoding": config.encoding,
        "method": config.method,
        "seed": config.seed,
        "config_hash": config.config_hash(),
        "config": config.to_dict(),
        "code_version": code_version(),
        "torch_version": torch.__version__,
        "device": device_description(device),
        "host": {"python": platform.python_version(), "machine": platform.machine(),
                 "name": socket.gethostname(), "pid": os.getpid()},
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _error_fields(err: BaseException) -> dict:
    return {"status": "error", "error": f"{type(err).__name__}: {err}",
            "traceback": "".join(traceback.format_exception(err, limit=8))}


def error_record(config: RunConfig, device: torch.device, err: BaseException) -> dict:
    """The record of a run that failed outside ``execute_group`` (a dead worker)."""
    return {**base_record(config, device), **_error_fields(err), "wall_time_s": 0.0}


def not_applicable_reason(config: RunConfig) -> str | None:
    """Why a cell has no result to compute (an encoding the task cannot feed)."""
    if not config.encoding:
        return None
    encoding = build_encoding(config.encoding, config.model.d_model, config.model.n_heads, config.encoding_params)
    reason = encoding.not_applicable(get_task(config.task))
    return None if reason is None else f"{config.encoding} {reason}"


def execute_group(configs: list[RunConfig], device: torch.device, progress_factory=None,
                  checkpoints: Path | None = None, checkpoint_every: float = CHECKPOINT_EVERY_S) -> list[dict]:
    """Train and evaluate a group of cells (``train.group_key`` equal) as one
    stacked model; one record per cell, in order. Errors become ``error``
    records: when a group fails, each of its runs is retried alone, so the
    error lands on the cell that caused it. With ``checkpoints`` (a results
    folder), training state is saved there every ``checkpoint_every`` s and
    an interrupted group resumes from it."""
    records = [base_record(c, device) for c in configs]
    start = time.perf_counter()
    todo = []
    for i, config in enumerate(configs):
        try:
            reason = not_applicable_reason(config)
        except Exception as err:  # noqa: BLE001  (one bad cell must not stop the grid)
            records[i].update(_error_fields(err), wall_time_s=0.0)
            continue
        if reason is None:
            todo.append(i)
        else:
            records[i].update(status="not_applicable", reason=reason, wall_time_s=0.0)
    if not todo:
        return records
    try:
        checkpoint = (Checkpoint(checkpoints, [configs[i].run_id for i in todo], checkpoint_every)
                      if checkpoints is not None else None)
        _train_and_evaluate([configs[i] for i in todo], [records[i] for i in todo], device, progress_factory,
                            checkpoint)
    except Exception as err:  # noqa: BLE001
        if len(todo) == 1:
            records[todo[0]].update(_error_fields(err))
        else:
            for i in todo:
                records[i] = execute_group([configs[i]], device, progress_factory, checkpoints, checkpoint_every)[0]
            return records
    share = round((time.perf_counter() - start) / len(todo), 3)
    for i in todo:
        records[i].update(wall_time_s=share, group_size=len(todo))
    return records


def _train_and_evaluate(configs: list[RunConfig], records: list[dict], device: torch.device,
                        progress_factory, checkpoint: Checkpoint | None) -> None:
    task = get_task(configs[0].task)
    model = build_group(configs, task, device)
    for r, record in enumerate(records):
        record["n_parameters"] = sum(p.numel() for p in model.weights.values()) // model.n_runs + sum(
            p.numel() for p in model.run_parameters(r))
    bar = progress_factory(configs[0].steps, _label("train", configs)) if progress_factory else None
    results = train_group(model, task, configs, device, bar, checkpoint)
    if bar is not None:
        bar.close()
    for record, result in zip(records, results):
        record["training"] = {"steps_done": result.steps_done, "final_loss": result.final_loss,
                              "loss_curve": result.loss_curve}
        if result.diverged:
            record["status"] = "diverged"
    alive = [r for r, result in enumerate(results) if not result.diverged]
    if not alive:
        return
    bar = progress_factory(len(configs[0].eval_lengths()), _label("eval", configs)) if progress_factory else None
    per_run = evaluate(model, task, configs[0], device, alive, bar)
    if bar is not None:
        bar.close()
    for r in alive:
        records[r].update(status="ok", per_length=per_run[r],
                          summary=summarize(per_run[r], configs[r].train_length))


def _label(stage: str, configs: list[RunConfig]) -> str:
    first = configs[0]
    return f"{stage} {first.task}/{first.method}" + (f" +{len(configs) - 1}" if len(configs) > 1 else "")
