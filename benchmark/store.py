"""One results folder and everything a grid keeps in it.

A folder holds one record per run (``<run_id>.json``, ``records``), the
claims of runs being trained (``<run_id>.claim``, ``claims``), the
checkpoints of unfinished runs (``checkpoints/``, ``checkpoints``) and, for
``run --select``, the candidates' grids (``selection/``). ``ResultsFolder``
is the one place that knows these names: the grid, the runner, the
executors, the planner and the selection hand it around instead of a bare
path, and ask it for a run's record, claim or checkpoint, or for the
records of the same cell made with other settings (stale code versions, a
superseded selection).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lengthbench.benchmark import claims
from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S, Checkpoint, remove_finished
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.files import file_problem, json_text, write_json, write_text
from lengthbench.benchmark.predictions import PREDICTIONS_FOLDER, predictions_problem, write_predictions
from lengthbench.benchmark.records import MAX_RECORD_BYTES, QUARANTINE_SUFFIX, RecordError, RunRecord, read_record

log = logging.getLogger(__name__)

MODELS_FOLDER = "models"  # run --save-models writes each trained model to <results>/models/<run id>/
SELECTION_FOLDER = "selection"  # run --select trains each candidate value's grid in a folder under here


class ResultsFolder:
    """A results folder: its records, claims and checkpoints, by run id."""

    def __init__(self, path):
        self.path = path.path if isinstance(path, ResultsFolder) else Path(path)

    def __repr__(self) -> str:
        return f"ResultsFolder({str(self.path)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ResultsFolder) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def create(self) -> "ResultsFolder":
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def subfolder(self, name: str) -> "ResultsFolder":
        return ResultsFolder(self.path / name)

    # records

    def record_path(self, run_id: str) -> Path:
        return self.path / f"{run_id}.json"

    def write(self, record: RunRecord) -> Path:
        """Temp file + rename: a reader never sees a half-written record.
        Predictions the record carries (``run --save-predictions``) are
        written first, so a record never names predictions that are missing."""
        self.create()
        if record.predictions is not None:
            write_predictions(self.predictions_path(record.run_id), record, record.predictions)
        return write_json(self.record_path(record.run_id), record.to_json())

    def adopt(self, run_id: str, source: "ResultsFolder") -> bool:
        """Copy ``source``'s finished record of this run here when this folder
        has none (the same run id: the same config and code versions, so the
        same record); whether it did."""
        if self.record_path(run_id).exists() or source.finished(run_id, set_aside=False) is None:
            return False
        self.create()
        write_text(self.record_path(run_id), source.record_path(run_id).read_text(encoding="utf-8"))
        return True

    def set_aside_damaged_predictions(self, run_id: str) -> str | None:
        """When the run's saved predictions are damaged (truncated, corrupted), move them and the run's record
        to ``<file>.invalid`` (kept for inspection) so that the run trains again and writes both whole; returns
        what was wrong, or None."""
        problem = predictions_problem(self.predictions_path(run_id))
        if problem is not None:
            for path in (self.predictions_path(run_id), self.record_path(run_id)):
                path.replace(path.with_name(path.name + QUARANTINE_SUFFIX))
        return problem

    def predictions_path(self, run_id: str) -> Path:
        return self.path / PREDICTIONS_FOLDER / f"{run_id}.npz"

    def model_path(self, run_id: str) -> Path:
        return self.path / MODELS_FOLDER / run_id

    def finished(self, run_id: str, set_aside: bool = True) -> RunRecord | None:
        """The stored record of a finished run, or None if it must (re)run.

        An invalid record is reported and, with ``set_aside``, moved aside to
        ``<file>.invalid`` (kept for inspection, never read again) so that its
        run is redone."""
        path = self.record_path(run_id)
        if not path.exists():
            return None
        try:
            record = read_record(path)
        except RecordError as err:
            if not set_aside:
                log.warning("invalid record %s; it would be rerun", err)
                return None
            aside = path.with_name(path.name + QUARANTINE_SUFFIX)
            path.replace(aside)
            log.warning("invalid record %s; moved to %s and rerunning its cell", err, aside.name)
            return None
        return record if record.finished else None

    def stored(self, run_id: str) -> RunRecord | None:
        """The valid record of a run in any status, or None (absent or invalid)."""
        path = self.record_path(run_id)
        try:
            return read_record(path) if path.exists() else None
        except RecordError:
            return None

    def records(self) -> list[RunRecord]:
        """Every record in the folder, each validated: one invalid file stops
        the load with a one-line error that names it and says how to fix it."""
        records = []
        for path in sorted(self.path.glob("*__seed*__*.json")):
            try:
                records.append(read_record(path))
            except RecordError as err:
                raise RecordError(f"{err}; move the file out of the folder (or rerun its cell with "
                                  "`lengthbench run`, which sets invalid records aside)") from None
        return records

    def same_cell(self, config: RunConfig, ignoring: str) -> list[Path]:
        """Records of ``config``'s cell and seed, other than its own, whose
        settings differ from its own in ``ignoring`` alone."""
        own = config.to_dict()
        own.pop(ignoring, None)
        found = []
        for path in self.path.glob(f"{config.task}__{config.file_method}__seed{config.seed}__*.json"):
            if path.stem == config.run_id or file_problem(path, MAX_RECORD_BYTES):
                continue
            try:
                other = dict(json.loads(path.read_text())["config"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            other.pop(ignoring, None)
            if other == own:
                found.append(path)
        return found

    def stale(self, config: RunConfig) -> list[Path]:
        """Records of the same cell and settings made by other code versions
        (``RunConfig.code_versions``): kept on disk, never reused."""
        return self.same_cell(config, "code_versions")

    def replace_superseded(self, record: RunRecord, field: str) -> Path:
        """Write ``record``, deleting the records of its cell and seed that
        differ from it only in ``field`` (an earlier selection chose another
        value); a record already stored as it is is left untouched (a
        repeated selection rewrites nothing)."""
        for path in self.same_cell(record.config, field):
            path.unlink()
            self.predictions_path(path.stem).unlink(missing_ok=True)
        path = self.record_path(record.run_id)
        if path.is_file() and path.read_text() == json_text(record.to_json()):
            return path
        return self.write(record)

    # claims

    def claim_path(self, run_id: str) -> Path:
        return self.path / f"{run_id}{claims.CLAIM_SUFFIX}"

    def claim(self, run_id: str) -> bool:
        """Claim a run for this process; False when a live owner holds it."""
        return claims.try_claim(self.claim_path(run_id))

    def held_elsewhere(self, run_id: str) -> bool:
        """True while another live process holds the run's claim."""
        return claims.held_elsewhere(self.claim_path(run_id))

    def release(self, run_id: str) -> None:
        claims.release(self.claim_path(run_id))

    def release_abandoned(self) -> None:
        """Remove the claims of this process and of dead processes on this host."""
        claims.release_abandoned(self.path.glob(f"*{claims.CLAIM_SUFFIX}"))

    # checkpoints

    def checkpoint(self, run_id: str, every_s: float = CHECKPOINT_EVERY_S) -> Checkpoint:
        return Checkpoint(self.path, run_id, every_s)

    def remove_finished_checkpoints(self, finished: set[str]) -> None:
        remove_finished(self.path, finished)
