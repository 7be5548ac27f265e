"""Executing one grid cell into a run record; never raises for a bad cell."""

from __future__ import annotations

import platform
import time
import traceback
from datetime import datetime, timezone

import torch

from benchmark.config import RunConfig
from benchmark.device import device_description
from benchmark.evaluate import evaluate, summarize
from benchmark.records import RECORD_SCHEMA_VERSION
from benchmark.train import build_model, train
from benchmark.version import code_version
from tasks import get_task


def base_record(config: RunConfig, device: torch.device) -> dict:
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "run_id": config.run_id,
        "task": config.task,
        "encoding": config.encoding,
        "seed": config.seed,
        "config_hash": config.config_hash(),
        "config": config.to_dict(),
        "code_version": code_version(),
        "torch_version": torch.__version__,
        "device": device_description(device),
        "host": {"python": platform.python_version(), "machine": platform.machine()},
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _error_fields(err: BaseException) -> dict:
    return {"status": "error", "error": f"{type(err).__name__}: {err}",
            "traceback": "".join(traceback.format_exception(err, limit=8))}


def error_record(config: RunConfig, device: torch.device, err: BaseException) -> dict:
    """The record of a run that failed outside ``execute_run`` (a dead worker)."""
    return {**base_record(config, device), **_error_fields(err), "wall_time_s": 0.0}


def execute_run(config: RunConfig, device: torch.device, progress_factory=None) -> dict:
    """Train and evaluate one cell. Errors become an ``error`` record."""
    record = base_record(config, device)
    start = time.perf_counter()
    try:
        task = get_task(config.task)
        model = build_model(config, task, device)
        if model.encoding.uses_task_positions and not task.has_coupled_ids:
            record.update(status="not_applicable",
                          reason=f"{config.encoding} needs coupled position ids; {config.task} has none")
            return record
        record["n_parameters"] = sum(p.numel() for p in model.parameters())
        bar = progress_factory(config.steps, "train") if progress_factory else None
        result = train(model, task, config, device, bar)
        if bar is not None:
            bar.close()
        record["training"] = {
            "steps_done": result.steps_done, "final_loss": result.final_loss,
            "loss_curve": result.loss_curve,
        }
        if result.diverged:
            record["status"] = "diverged"
            return record
        bar = progress_factory(len(config.eval_lengths()), "eval") if progress_factory else None
        per_length = evaluate(model, task, config, device, bar)
        if bar is not None:
            bar.close()
        record.update(status="ok", per_length=per_length,
                      summary=summarize(per_length, config.train_length))
    except Exception as err:  # noqa: BLE001  (one bad cell must not stop the grid)
        record.update(_error_fields(err))
    finally:
        record["wall_time_s"] = round(time.perf_counter() - start, 3)
    return record
