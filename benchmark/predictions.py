"""A run's raw predictions, kept beside its record (``run --save-predictions``).

At each evaluated length, the token the model predicts at every position of
every answer: the argmax of the teacher-forced pass the record's metrics come
from, or -1 throughout an example with a non-finite logit (which the harness
scores wrong). A reference can so publish what its models answered, and
anyone can rescore it (``lengthbench score TASK FILE.npz`` reads the file as
it reads generated instances with a prediction: the record's numbers come
back exactly).

The file, ``predictions/<run_id>.npz`` in the results folder, is a
compressed NumPy archive: ``meta`` (JSON: the run, task, task version,
evaluation seed and samples, lengths) and per length ``delta_<L>``, the
predictions minus the answers' token ids over every answer position, example
after example (int16). Where a model is right the difference is 0, so the
lengths it solves cost almost nothing; the answers themselves are not
stored, since the evaluation stream regenerates them
(``instances.evaluation_instances``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from lengthbench.benchmark.files import atomic_path
from lengthbench.benchmark.instances import evaluation_instances
from lengthbench.errors import InputError
from lengthbench.tasks import get_task

PREDICTIONS_FOLDER = "predictions"
FORMAT = 1


def write_predictions(path: Path, record, deltas: dict[int, np.ndarray]) -> Path:
    """Write one run's predictions (``deltas``: length -> the predictions
    minus the answers, as ``evaluate.evaluate`` keeps them) atomically."""
    config = record.config
    meta = {"format": FORMAT, "run_id": record.run_id, "task": config.task, "method": config.method,
            "seed": config.seed, "eval_seed": config.eval_seed, "n_samples": config.eval_samples,
            "task_version": _task_version(config.task), "lengths": sorted(deltas)}
    arrays = {f"delta_{length}": deltas[length] for length in sorted(deltas)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temp:
        np.savez_compressed(temp, meta=np.array(json.dumps(meta)), **arrays)
    return path


def _task_version(task: str) -> int:
    return get_task(task).version


def read_predictions(path: str | Path) -> tuple[dict, list[dict]]:
    """(the file's ``meta``, one line per instance as ``score`` reads them:
    the instance's fields, its ``answer_ids`` and the ``prediction_ids``).
    A file that is not a predictions file, or whose answers the task no
    longer generates, is refused naming it."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"]))
            deltas = {length: archive[f"delta_{length}"] for length in meta["lengths"]}
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as err:
        raise InputError(f"{path} is not a predictions file written by run --save-predictions ({err})") from None
    if meta.get("format") != FORMAT:
        raise InputError(f"{path}: predictions format {meta.get('format')!r}; this lengthbench reads {FORMAT}")
    if meta["task_version"] != _task_version(meta["task"]):
        raise InputError(f"{path}: made with version {meta['task_version']} of task {meta['task']!r}, which now "
                         f"generates other answers (version {_task_version(meta['task'])})")
    lines = []
    for length, delta in deltas.items():
        instances = evaluation_instances(meta["task"], [length], meta["n_samples"], meta["eval_seed"])
        answers = np.concatenate([np.asarray(i["answer_ids"], dtype=np.int64) for i in instances])
        if answers.size != delta.size:
            raise InputError(f"{path}: {delta.size} predicted tokens at length {length}, where the task's "
                             f"{meta['n_samples']} answers have {answers.size}")
        predicted = (answers + delta).tolist()
        start = 0
        for instance in instances:
            end = start + len(instance["answer_ids"])
            lines.append({**instance, "prediction_ids": predicted[start:end]})
            start = end
    return meta, lines
