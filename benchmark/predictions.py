"""A run's raw predictions, kept beside its record (``run --save-predictions``).

At each evaluated length, the token the model predicts at every position of
every answer: the argmax of the teacher-forced pass the record's metrics come
from, or -1 throughout an example with a non-finite logit (which the harness
scores wrong). A reference can so publish what its models answered, and
anyone can rescore it (``lengthbench score TASK FILE.npz`` reads the file as
it reads generated instances with a prediction: the record's numbers come
back exactly).

The file, ``predictions/<run_id>.npz`` in the results folder, is a NumPy
archive of two arrays: ``meta`` (JSON: the run, task, task version,
evaluation seed and samples, the lengths and how many answer tokens each
has) and ``deltas``, the predictions minus the answers' token ids over
every answer position, length after length, example after example (int8,
or int16 for a vocabulary past 127 tokens), compressed as one xz stream.
Where a model is right the difference is 0, so the lengths it solves cost
almost nothing; the answers themselves are not stored, since the
evaluation stream regenerates them (``instances.evaluation_instances``).
Measured on ``quick``'s 57 trained runs with 3 seeds (16 lengths, 256
examples each): 7.8 kB a run on average, where deflate
(``np.savez_compressed``) of the same values as int16 took 12.7 kB.
"""

from __future__ import annotations

import json
import lzma
import zipfile
from pathlib import Path

import numpy as np

from lengthbench.benchmark.files import atomic_path
from lengthbench.benchmark.instances import evaluation_instances, scored_positions
from lengthbench.core.errors import InputError
from lengthbench.tasks.cells import PLAIN, split_label
from lengthbench.tasks.formats import label_versions

PREDICTIONS_FOLDER = "predictions"
FORMAT = 1
# xz with a dictionary no larger than any run's predictions: the strongest setting at little memory
XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "dict_size": 1 << 20}]


def write_predictions(path: Path, record, deltas: dict[int, np.ndarray]) -> Path:
    """Write one run's predictions (``deltas``: length -> the predictions
    minus the answers, as ``evaluate.evaluate`` keeps them) atomically."""
    config = record.config
    lengths = sorted(deltas)
    flat = np.concatenate([deltas[n] for n in lengths]) if lengths else np.zeros(0, dtype=np.int16)
    dtype = "int8" if flat.size == 0 or np.abs(flat).max() < 128 else "int16"
    meta = {"format": FORMAT, "run_id": record.run_id, "task": config.task, "method": config.method,
            "seed": config.seed, "eval_seed": config.eval_seed, "n_samples": config.eval_samples,
            **_versions(config.task), "lengths": lengths,
            "sizes": [int(deltas[n].size) for n in lengths], "dtype": dtype}
    blob = lzma.compress(flat.astype(dtype).tobytes(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                         filters=XZ_FILTERS)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temp:
        np.savez(temp, meta=np.array(json.dumps(meta)), deltas=np.frombuffer(blob, dtype=np.uint8))
    return path


def _versions(task: str) -> dict[str, int]:
    """The task's version, and its format's for a task in a format: what decides the answers."""
    versions = label_versions(task)
    return {"task_version": versions["task"], **({"format_version": versions["format"]}
                                                  if split_label(task)[1] != PLAIN else {})}


def _unpacked(path: Path) -> tuple[dict, dict]:
    """(``meta``, length -> predicted-minus-answer token deltas) of a predictions file, or an ``InputError``
    naming it when it is not one whole (truncated, corrupted, another kind of file)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"]))
            flat = np.frombuffer(lzma.decompress(archive["deltas"].tobytes()), dtype=meta["dtype"])
        if flat.size != sum(meta["sizes"]):
            raise ValueError(f"{flat.size} predicted tokens where the lengths' sizes add up to {sum(meta['sizes'])}")
        return meta, dict(zip(meta["lengths"], np.split(flat.astype(np.int64), np.cumsum(meta["sizes"])[:-1])))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, lzma.LZMAError, EOFError) as err:
        raise InputError(f"{path} is not a predictions file written by run --save-predictions ({err})") from None


def predictions_problem(path: str | Path) -> str | None:
    """Why the predictions file at ``path`` cannot be read (damaged), or None (whole, or absent)."""
    if not Path(path).exists():
        return None
    try:
        _unpacked(Path(path))
    except InputError as err:
        return str(err).rpartition("(")[2].rstrip(")") or str(err)
    return None


def read_predictions(path: str | Path) -> tuple[dict, list[dict]]:
    """(the file's ``meta``, one line per instance as ``score`` reads them:
    the instance's fields, its ``answer_ids`` and the ``prediction_ids``).
    A file that is not a predictions file, or whose answers the task no
    longer generates, is refused naming it."""
    path = Path(path)
    meta, deltas = _unpacked(path)
    if meta.get("format") != FORMAT:
        raise InputError(f"{path}: predictions format {meta.get('format')!r}; this lengthbench reads {FORMAT}")
    now = _versions(meta["task"])
    made = {key: meta.get(key, 1) for key in now}
    if made != now:
        raise InputError(f"{path}: made with {made} of task {meta['task']!r}, which now generates other answers "
                         f"({now})")
    lines = []
    for length, delta in deltas.items():
        instances = evaluation_instances(meta["task"], [length], meta["n_samples"], meta["eval_seed"])
        answers = np.concatenate([np.asarray(i["answer_ids"], dtype=np.int64)[scored_positions(i)]
                                  for i in instances])
        if answers.size != delta.size:
            raise InputError(f"{path}: {delta.size} predicted tokens at length {length}, where the task's "
                             f"{meta['n_samples']} answers have {answers.size}")
        predicted = (answers + delta).tolist()
        start = 0
        for instance in instances:  # a format's given symbols (not scored) predicted as given
            prediction, scored = list(instance["answer_ids"]), scored_positions(instance)
            for i, value in zip(scored, predicted[start:start + len(scored)]):
                prediction[i] = value
            lines.append({**instance, "prediction_ids": prediction})
            start += len(scored)
    return meta, lines
