"""A model lengthbench does not train, against a preset's test instances:
which instances (``evaluation_settings``: the lengths, samples and seed a
run of the preset is scored on, each unless given), its predictions read
and scored from a file (``score_file``: JSON Lines, an exported Parquet
split or a run's saved ``.npz``), or the model evaluated directly
(``evaluate_model``: a callable, or a ``save_pretrained`` folder).
"""

from __future__ import annotations

import logging
import os

import pandas as pd

from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.files import check_input_file
from lengthbench.benchmark.instances import (
    MAX_PREDICTIONS_BYTES,
    evaluate_any,
    read_jsonl,
    read_parquet_rows,
    score_predictions,
)
from lengthbench.benchmark.predictions import read_predictions
from lengthbench.benchmark.presets import PRESETS
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.models.huggingface import load_saved_model
from lengthbench.models.saved_model import check_folder_tokenizer
from lengthbench.tasks import get_task

log = logging.getLogger(__name__)


def evaluation_settings(task: str, preset: str, lengths=None, samples=None, seed=None) -> tuple[list[int], int, int]:
    """The lengths, samples per length and evaluation seed a run of
    ``preset`` evaluates ``task`` at, each unless given."""
    if preset not in PRESETS:
        raise UnknownNameError("preset", preset, PRESETS)
    if lengths is not None and not len(lengths):
        raise InputError("lengths: the list is empty; give task lengths (e.g. [8, 16]), or None for the preset's")
    config = PRESETS[preset].evaluation_config(task)
    return (list(config.eval_lengths()) if lengths is None else list(lengths),
            config.eval_samples if samples is None else samples, config.eval_seed if seed is None else seed)


def score_file(task: str, predictions, preset: str) -> pd.DataFrame:
    """Per-length scores of the predictions file ``predictions`` (each line
    checked against the instance it answers); warns where it leaves out
    whole lengths of ``preset``'s instances."""
    path = check_input_file(predictions, "predictions", MAX_PREDICTIONS_BYTES)
    if path.suffix == ".npz":
        rows = list(enumerate(read_predictions(path)[1], 1))
    elif path.suffix == ".parquet":
        rows = read_parquet_rows(path, str(predictions))
    else:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"predictions {str(predictions)!r} cannot be read ({err})") from None
        rows = read_jsonl(text, str(predictions))
    table = pd.DataFrame(score_predictions(task, rows, str(predictions)))
    _warn_missing_lengths(task, preset, table, str(predictions))
    return table


def _warn_missing_lengths(task: str, preset: str, table: pd.DataFrame, where: str) -> None:
    """Predictions of ``preset``'s instances (its samples and seed) that leave whole lengths out: say which, since
    every per-length and band score is then over the lengths present only."""
    lengths, samples, seed = evaluation_settings(task, preset)
    ours = table[(table.n_instances == samples) & (table.eval_seed == seed)]
    missing = sorted(set(lengths) - set(ours.length))
    if len(ours) and set(ours.length) <= set(lengths) and missing:
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        log.warning("%s: predictions for %d of the %d lengths preset %s evaluates %s at; none for %s, so no score "
                    "there and every band score is over the lengths present only", where, len(ours), len(lengths),
                    preset, task, shown)


def evaluate_model(model, task: str, lengths: list[int], samples: int, seed: int, heads: int) -> pd.DataFrame:
    """Per-length metrics of ``model`` (a callable from token ids to logits,
    or a ``save_pretrained`` folder, loaded from local files only and moved
    where a run's model would train; one lengthbench saved must hold
    ``task``'s tokenizer) by the harness's own evaluation."""
    if isinstance(model, (str, os.PathLike)):
        check_folder_tokenizer(model, get_task(task))
        model = load_saved_model(model).to(default_device())  # CUDA where there is one, as a run's model
    return pd.DataFrame([flat_slices(row) for row in evaluate_any(model, task, lengths, samples, seed, heads)])


def flat_slices(row: dict) -> dict:
    """A per-length row with its example slices (``Task.example_slices``) as
    columns, ``exact_match <label>`` and ``n <label>``, for a flat table."""
    row = dict(row)
    for label, value in row.pop("slices", {}).items():
        row[f"exact_match {label}"], row[f"n {label}"] = value["exact_match"], value["n"]
    return row
