"""A folder of run records as a reader asks for it: validated, narrowed to a
preset's grid, or as one long frame (run x evaluated length).

The readers of the API (``load_records``, ``load_leaderboard``,
``write_leaderboard``, ``reproduce``) all come through here, so a folder
that is not one, or holds no record, is refused the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lengthbench.benchmark.config import dotted
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.core.errors import InputError

PathLike = str | Path


def of_preset(records: list[RunRecord], preset: str | None, where: PathLike) -> list[RunRecord]:
    """The records of ``preset``'s grid cells only (all with None): a preset
    whose cells are another's (``suite`` in ``full``) is built from its records.
    A cell is matched whatever code version made its record (``RunConfig.cell_key``),
    so a folder of records stays readable as its preset after a version bump
    (where a run has records of several code versions, a board counts the
    latest code's: ``distinct_runs``)."""
    if preset is None:
        return records
    cells = {config.cell_key() for config in grid_configs(PRESETS[preset])}
    mine = [r for r in records if r.config.cell_key() in cells]
    if not mine:
        raise InputError(f"{str(where)!r} holds no record of the grid of preset {preset!r}; run "
                         f"`lengthbench run --preset {preset}` (or give the folder of a preset that contains it)")
    return mine


def records_of(results: PathLike, preset: str | None = None, flag: str = "results") -> list[RunRecord]:
    """Every validated record in the folder ``results`` (of ``preset``'s grid
    only, when given); refused with one line, naming ``flag``, when it is not
    a folder of records."""
    folder = Path(results)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise InputError(f"{flag} {str(results)!r} {what}; give the folder that holds the run records (*.json)")
    records = ResultsFolder(folder).records()
    if not records:
        raise InputError(f"{flag} {str(results)!r} holds no run records "
                         "(<task>__<encoding>__seed<k>__<hash>.json); run `lengthbench run` first")
    return of_preset(records, preset, results)


IDENTITY = ["run_id", "task", "method", "family", "encoding", "seed", "status"]
PER_RUN = ["wall_time_s", "n_parameters", "final_loss", "error"]
PER_LENGTH = ["length", "split", "length_status", "exact_match", "token_accuracy", "n_samples"]


def records_frame(records: list[RunRecord]) -> pd.DataFrame:
    """``records`` in long format: one row per run x evaluated length, with
    the run's identity, every config field as a column (nested ones dotted:
    ``model.d_model``), its per-run figures and the length's scores. A run
    without lengths (error, n/a) is one row with ``length`` NaN, so no run is
    silently missing."""
    rows = []
    for record in records:
        config = record.config.to_dict()
        base = {"run_id": record.run_id, "task": record.task, "method": record.method,
                "family": record.config.family, "encoding": record.encoding, "seed": record.seed,
                "status": record.status,
                **dotted({k: v for k, v in config.items() if k not in ("task", "seed", "encoding", "family")}),
                "wall_time_s": record.wall_time_s, "n_parameters": record.n_parameters,
                "final_loss": (record.training or {}).get("final_loss"), "error": record.error}
        for entry in record.length_rows() or [{}]:
            rows.append({**base, "length": entry.get("length"), "split": entry.get("split"),
                         "length_status": entry.get("status"), "exact_match": entry.get("exact_match"),
                         "token_accuracy": entry.get("token_accuracy"), "n_samples": entry.get("n_samples")})
    frame = pd.DataFrame(rows)
    config = sorted(set(frame.columns) - set(IDENTITY + PER_LENGTH + PER_RUN))
    frame = frame[IDENTITY + config + PER_RUN + PER_LENGTH]
    return frame.astype({"length": "Int64", "n_samples": "Int64"})
