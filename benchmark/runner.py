"""Executing grid cells into run records; never raises for a bad cell.

``run_claimed`` is the unit of work every executor runs: claim one run
(``claims``), train and evaluate it (``execute_run``) and return its record,
or nothing when another process holds it.
"""

from __future__ import annotations

import logging
import time

import torch

from lengthbench.benchmark.applicable import not_applicable
from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S, Checkpoint
from lengthbench.benchmark.claims import Heartbeat
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.evaluate import evaluate, held_out_fit
from lengthbench.benchmark.live_log import open_live_log
from lengthbench.benchmark.records import RunRecord, summarize
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.benchmark.train import train_run
from lengthbench.benchmark.unseen import drawn_before_training, drawn_prompts
from lengthbench.models.families import n_parameters
from lengthbench.models.saved_model import SAVED_FAMILIES, save_model_folder
from lengthbench.tasks import get_task
from lengthbench.tasks.cells import cell_name

log = logging.getLogger(__name__)


def error_record(config: RunConfig, err: BaseException) -> RunRecord:
    """The record of a run that failed outside ``execute_run`` (a dead worker)."""
    record = RunRecord.start(config, default_device()).record_error(err)
    record.wall_time_s = 0.0
    return record


def execute_run(config: RunConfig, device: torch.device, progress_factory=None,
                checkpoints: ResultsFolder | None = None, checkpoint_every: float = CHECKPOINT_EVERY_S,
                save_predictions: bool = False, live_log: str | None = None, save_model: bool = False) -> RunRecord:
    """Train and evaluate one cell into its record; an error becomes an
    ``error`` record. With ``checkpoints`` (a results folder), training
    state is saved there every ``checkpoint_every`` s and an interrupted run
    resumes from it. With ``save_predictions``, the record carries its
    predictions per length (written beside it: ``benchmark.predictions``).
    With ``save_model`` and ``checkpoints``, a trained ``transformers`` model
    (the ``hf-*`` families) is saved under the folder's ``models/`` with its
    task's tokenizer (``models.saved_model``).
    With ``live_log`` (a kind of ``benchmark.live_log``) and ``checkpoints``,
    the run's training is written under the folder's ``logs/`` as it runs."""
    record = RunRecord.start(config, device)
    start = time.perf_counter()
    try:
        reason = not_applicable(config)
        if reason is not None:
            record.status, record.reason, record.wall_time_s = "not_applicable", reason, 0.0
            return record
        checkpoint = checkpoints.checkpoint(config.run_id, checkpoint_every) if checkpoints is not None else None
        live = open_live_log(live_log, checkpoints.path, config.run_id) if checkpoints is not None else None
        try:
            model = _train_and_evaluate(config, record, device, progress_factory, checkpoint, save_predictions, live)
            if save_model and checkpoints is not None and record.status == "ok" and config.family in SAVED_FAMILIES:
                _save_model(model, config, checkpoints)
        finally:
            if live is not None:
                live.close()
    except Exception as err:  # noqa: BLE001  (one bad cell must not stop the grid)
        record.record_error(err)
    record.wall_time_s = round(time.perf_counter() - start, 3)
    return record


def _train_and_evaluate(config: RunConfig, record: RunRecord, device: torch.device, progress_factory,
                        checkpoint: Checkpoint | None, save_predictions: bool, live_log=None):
    """Train and evaluate into ``record``; returns the trained model."""
    task = get_task(config.task)
    drawn = drawn_before_training(task, config)  # a fit that cannot be judged is refused before training
    model = config.build_model(task.vocab_size).to(device)
    record.n_parameters = n_parameters(model)
    bar = progress_factory(config.steps, _label("train", config)) if progress_factory else None
    result = train_run(model, task, config, device, bar, checkpoint,
                       fit_check=lambda: held_out_fit(model, task, config, device), live_log=live_log)
    if bar is not None:
        bar.close()
    record.training = {"steps_done": result.steps_done, "stopped": result.stopped,
                       "final_loss": result.final_loss, "loss_curve": result.loss_curve}
    if result.fit_checks is not None:
        record.training["fit_checks"] = result.fit_checks
    if result.diverged:
        record.status = "diverged"
        return model
    bar = progress_factory(len(config.eval_lengths()), _label("eval", config)) if progress_factory else None
    predictions = {} if save_predictions else None
    if config.fit_unseen and drawn is None:  # a run that may stop at fit: what it drew, known only now
        drawn = drawn_prompts(task, config, result.steps_done)
    record.per_length = evaluate(model, task, config, device, bar, predictions, drawn)
    if bar is not None:
        bar.close()
    record.status, record.summary, record.predictions = "ok", summarize(record.per_length, config), predictions
    if live_log is not None:
        live_log.finished(result.steps_done, record.summary)
    return model


def _save_model(model, config: RunConfig, folder: ResultsFolder) -> None:
    """Save the run's model; a folder that cannot be written costs the model, never the run's record."""
    path = folder.model_path(config.run_id)
    try:
        save_model_folder(model, get_task(config.task), path,
                          {"run_id": config.run_id, "family": config.family, "seed": config.seed})
    except OSError as err:
        log.warning("%s: its model cannot be saved to %s (%s); its record is kept", config.run_id, path, err)


def _label(stage: str, config: RunConfig) -> str:
    return f"{stage} {cell_name(config.task, config.method)}"


def _claim(config: RunConfig, folder: ResultsFolder, force: bool) -> bool:
    """Whether this process claimed ``config``'s run and must train it (not
    when another process holds it or has just finished it)."""
    if not folder.claim(config.run_id):
        return False
    if not force and folder.finished(config.run_id, set_aside=False) is not None:
        folder.release(config.run_id)  # finished by another driver since this one started
        return False
    return True


def run_claimed(config: RunConfig, folder: ResultsFolder, force: bool, progress_factory=None,
                checkpoint_every: float = CHECKPOINT_EVERY_S, save_predictions: bool = False,
                live_log: str | None = None, save_model: bool = False) -> RunRecord | None:
    """Claim, train and evaluate one run: its record, or ``None`` when the
    run is left to another process. The claim stays fresh while it works."""
    if not _claim(config, folder, force):
        return None
    with Heartbeat([folder.claim_path(config.run_id)]):
        return execute_run(config, default_device(), progress_factory, folder, checkpoint_every, save_predictions,
                           live_log, save_model)
