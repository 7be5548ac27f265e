"""Run records: one JSON file per run, written atomically, validated on read.

``RunRecord`` is the one type of a record: ``RunRecord.start`` makes it
(identity, code and machine), the runner fills in its outcome, ``to_json``
is what its file holds and ``read_record`` reads and validates it (a
results folder, ``store.ResultsFolder``, writes, finds and scans them). File name:
``<task>__<encoding>__seed<k>__<config hash>.json``. Statuses: ``ok``,
``diverged`` (non-finite training loss), ``error`` (the run raised; the
message is kept), ``not_applicable`` (the method cannot run on the task,
e.g. ``coupled`` on ``parity_check``).

A stored record is reused or aggregated only after validation against its
file name, its config hash and every field the leaderboard reads: a record
copied over another cell's file, edited by hand, or written by another
schema version is never silently used.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import traceback
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.device import cpu_capability, device_description
from lengthbench.benchmark.files import file_problem
from lengthbench.benchmark.version import code_version
from lengthbench.core.errors import InputError
from lengthbench.core.registry import name_problem
from lengthbench.tasks.cells import Cell

# A per-length row's ``examples`` where the run chose them (``benchmark.unseen``): inputs training never
# drew, or the whole input space of that length; absent: the evaluation stream's first ``n_samples``.
EXAMPLE_KINDS = ("unseen", "whole space")

RECORD_SCHEMA_VERSION = 1
STATUSES = ("ok", "diverged", "error", "not_applicable")
FINISHED = ("ok", "diverged", "not_applicable")  # a rerun skips these; errors are retried
METRICS = ("exact_match", "token_accuracy")
SPLITS = ("id", "val", "ood")  # trained lengths, the validation band, the reported test band
SUMMARY_FIELDS = tuple(f"{split}_{metric}" for split in SPLITS for metric in METRICS)
OPTIONAL_SPLITS = ("val",)  # a run without a validation band has no val_* summary fields
LENGTH_STATUSES = ("ok", "unsupported")
QUARANTINE_SUFFIX = ".invalid"

class RecordError(InputError):
    """A record file that is not a valid run record for its file name."""


class UnreadableRecord(InputError):
    """A record file this process cannot or must not read: another user's, a
    FIFO, a device, a folder, or one far larger than any record. Never taken
    for an invalid record, so never set aside nor retrained."""


MAX_RECORD_BYTES = 4 << 20  # a record is a few kB (a 500-length evaluation ~100 kB)


@dataclass
class RunRecord:
    """One run: its configuration (which fixes its identity), where and by
    what code it ran, and its outcome. ``per_length`` rows hold ``length``,
    ``status`` (ok / unsupported), ``exact_match``, ``token_accuracy`` and
    ``n_samples``; ``summary`` the means over the in-distribution lengths,
    the validation band and the test band (``ood``)."""

    config: RunConfig
    code_version: str
    torch_version: str
    device: str
    host: dict
    started_at: str
    status: str = "error"
    wall_time_s: float | None = None
    n_parameters: int | None = None
    training: dict | None = None  # steps_done, stopped, final_loss, loss_curve (and fit_checks)
    per_length: list[dict] | None = None
    summary: dict | None = None
    error: str | None = None
    traceback: str | None = None
    reason: str | None = None  # why a cell is not applicable
    selection: dict | None = None  # the setting chosen on the validation band and its evidence (``selection``)
    schema_version: int = RECORD_SCHEMA_VERSION
    # the run's predictions per length, kept only while the record travels to its folder (``run
    # --save-predictions``: ``benchmark.predictions``); never in the record's file
    predictions: dict | None = field(default=None, repr=False, compare=False)

    @classmethod
    def start(cls, config: RunConfig, device: torch.device) -> "RunRecord":
        """The record of a run about to start here (the one constructor)."""
        return cls(config=config, code_version=code_version(), torch_version=torch.__version__,
                   device=device_description(device),
                   host={"python": platform.python_version(), "machine": platform.machine(),
                         "name": socket.gethostname(), "pid": os.getpid(), "cpu_capability": cpu_capability()},
                   started_at=datetime.now(timezone.utc).isoformat(timespec="microseconds"))

    def record_error(self, err: BaseException) -> "RunRecord":
        """This record, as the run's error."""
        self.status, self.error = "error", f"{type(err).__name__}: {err}"
        self.traceback = "".join(traceback.format_exception(err, limit=8))
        return self

    @property
    def run_id(self) -> str:
        return self.config.run_id

    @property
    def task(self) -> str:
        return self.config.task

    @property
    def encoding(self) -> str:
        return self.config.encoding

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def cell(self) -> Cell:
        return self.config.cell

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def failed(self) -> bool:
        """The method failed on this seed: its training diverged, or it gave
        non-finite outputs at some evaluated length. A leaderboard scores such
        a seed 0 (``leaderboard.aggregate``)."""
        return self.status == "diverged" or bool((self.summary or {}).get("nonfinite_lengths"))

    def to_json(self) -> dict:
        """What the record file holds: every field that is set, the identity spelled out."""
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None and f.name != "predictions"}
        data["config"] = self.config.to_dict()
        data.update(run_id=self.run_id, task=self.task, encoding=self.encoding, method=self.method, seed=self.seed,
                    config_hash=self.config.config_hash())
        return data

    def length_rows(self) -> list[dict]:
        """One row per evaluated length, with its ``split`` (``id``/``val``/``ood``,
        ``RunConfig.split``); empty for a run without metrics."""
        return [{**row, "split": self.config.split(row["length"])} for row in self.per_length or []]


def summarize(per_length: list[dict], config: RunConfig) -> dict:
    """Means of each metric over the in-distribution lengths, the validation
    band (when the run has one) and the test band (``RunConfig.split`` decides
    which is which). A length the encoding cannot run at counts as 0 (it
    cannot solve it); every test length is included, the first one too.
    With ``fit_from``, ``fit_exact_match`` is the least exact match over the
    lengths the fit is judged on."""
    out = {}
    for split in SPLITS:
        if split in OPTIONAL_SPLITS and not config.validation_length:
            continue
        rows = [r for r in per_length if config.split(r["length"]) == split]
        for metric in METRICS:
            out[f"{split}_{metric}"] = round(float(np.mean([r[metric] for r in rows])), 6) if rows else None
        out[f"{split}_unsupported_lengths"] = sum(r["status"] == "unsupported" for r in rows)
    if config.fit_from:  # the fit is judged on these lengths, each of them (only then: older summaries unchanged)
        fit = [r["exact_match"] for r in per_length if r["length"] in config.fit_lengths()]
        out["fit_exact_match"] = round(float(min(fit)), 6) if fit else None
    nonfinite = sum(bool(r.get("nonfinite")) for r in per_length)
    if nonfinite:  # only then, so that the summaries of runs with finite outputs stay as they were
        out["nonfinite_lengths"] = nonfinite
    return out


def _fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _slices_valid(slices, n_samples: int) -> bool:
    """A per-length row's ``slices``: per label, an exact match and a count, the counts summing to its samples."""
    return (isinstance(slices, dict) and all(isinstance(v, dict) and _fraction(v.get("exact_match")) and _count(v.get("n"))
                                             for v in slices.values())
            and sum(v["n"] for v in slices.values()) == n_samples)


def _problem(data, path: Path) -> str | None:
    """What makes the JSON ``data`` invalid as the record at ``path``, or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not a run record object"
    version = data.get("schema_version")
    if version != RECORD_SCHEMA_VERSION or isinstance(version, bool):
        return f"schema_version {version!r}; this lengthbench reads version {RECORD_SCHEMA_VERSION}"
    missing = [k for k in ("run_id", "task", "encoding", "seed", "config_hash", "config", "status") if k not in data]
    if missing:
        return f"lacks {', '.join(missing)}"
    if data["status"] not in STATUSES:
        return f"status {data['status']!r}; valid: {', '.join(STATUSES)}"
    try:
        config = RunConfig.from_dict(data["config"])
        config_hash = config.config_hash()
    except (TypeError, ValueError, AttributeError) as err:
        return f"its config is not a run configuration ({err})"
    if data["config_hash"] != config_hash:
        return f"config_hash {data['config_hash']!r} does not match its config (hash {config_hash})"
    for what, name in (("task", config.task), ("encoding", config.encoding), ("family", config.family)):
        problem = name_problem(name) if name or what != "encoding" else None
        if problem is not None:
            return f"its {what} name {problem}"
    stated = (data["task"], data["encoding"], data["seed"])
    if stated != (config.task, config.encoding, config.seed) or data["run_id"] != config.run_id:
        return f"task/encoding/seed/run_id disagree with its config (run {config.run_id})"
    if data.get("method", config.method) != config.method:  # records made before families have none
        return f"method {data['method']!r} disagrees with its config ({config.method})"
    if path.stem != config.run_id:
        return f"holds the record of run {config.run_id}, not of the run its file name names"
    selection = data.get("selection")
    if selection is not None and not (isinstance(selection, dict) and {"field", "values", "chosen"} <= set(selection)
                                      and selection["chosen"] == data["config"].get(selection["field"])):
        return f"selection {selection!r} is not a choice of this run's own setting"
    if data["status"] == "ok":
        return _metrics_problem(data)
    if data["status"] == "error" and not isinstance(data.get("error"), str):
        return "an error record without its error message"
    return None


def _metrics_problem(data: dict) -> str | None:
    summary = data.get("summary")
    if not isinstance(summary, dict):
        return "status ok but no summary"
    for name in SUMMARY_FIELDS:
        if name not in summary and name.split("_")[0] in OPTIONAL_SPLITS:
            continue
        if name not in summary or not (summary[name] is None or _fraction(summary[name])):
            return f"summary field {name} is {summary.get(name)!r}, not a fraction in [0, 1]"
    per_length = data.get("per_length")
    if not isinstance(per_length, list) or not per_length:
        return "status ok but no per_length metrics"
    for row in per_length:
        if not isinstance(row, dict) or not _count(row.get("length")) or not _count(row.get("n_samples")):
            return f"per_length entry {row!r} lacks an integer length or n_samples"
        if row.get("status") not in LENGTH_STATUSES:
            return f"per_length status {row.get('status')!r} at length {row['length']}; valid: ok, unsupported"
        for metric in METRICS:
            if not _fraction(row.get(metric)):
                return f"{metric} {row.get(metric)!r} at length {row['length']} is not a fraction in [0, 1]"
        if "nonfinite" in row and not (_count(row["nonfinite"]) and row["nonfinite"] <= row["n_samples"]):
            return f"nonfinite {row['nonfinite']!r} at length {row['length']} is not a count of its samples"
        if "slices" in row and not _slices_valid(row["slices"], row["n_samples"]):
            return f"slices {row['slices']!r} at length {row['length']} are not exact matches and counts of its samples"
        if "examples" in row and row["examples"] not in EXAMPLE_KINDS:
            return (f"examples {row['examples']!r} at length {row['length']}; valid: {', '.join(EXAMPLE_KINDS)} "
                    "(or none: drawn from the evaluation stream)")
    return None


_STORED = tuple(f.name for f in fields(RunRecord) if f.name != "config")


def read_record(path: Path) -> RunRecord:
    """Load and validate one record file (the one reader); ``RecordError`` names the file."""
    path = Path(path)
    problem = file_problem(path, MAX_RECORD_BYTES)
    if problem is not None and problem != "no such file":
        raise UnreadableRecord(f"{path}: {problem}")
    try:
        raw = path.read_bytes()
    except PermissionError as err:
        raise UnreadableRecord(f"{path}: {err.strerror or err}") from None
    except OSError as err:
        raise RecordError(f"{path}: not a readable run record ({err})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: not a readable run record ({err})") from None
    problem = _problem(data, path)
    if problem:
        raise RecordError(f"{path}: {problem}")
    return RunRecord(config=RunConfig.from_dict(data["config"]), **{k: data.get(k) for k in _STORED})


def distinct_runs(records: list[RunRecord]) -> list[RunRecord]:
    """Each run once: a record listed twice must not count as two seeds, and
    a run recorded by several code versions (a version bump, its cell rerun
    beside the old records) counts once, by the latest code's record."""
    latest: dict[str, RunRecord] = {}
    for r in records:
        key = r.config.cell_key()
        if key not in latest or r.config.version_rank() > latest[key].config.version_rank():
            latest[key] = r
    return list(latest.values())


def superseded_runs(records: list[RunRecord]) -> list[RunRecord]:
    """The records ``distinct_runs`` leaves out for a later code version's
    record of the same run (kept on disk, never counted)."""
    kept = {r.run_id for r in distinct_runs(records)}
    return [r for r in records if r.run_id not in kept]


LENGTH_COLUMNS = ["task", "method", "seed", "train_length", "length", "split", "status", "token_accuracy",
                  "exact_match", "n_samples"]


def length_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Long table of every evaluated length of every finished (``ok``) run,
    each with its ``split``."""
    rows = [{"task": r.task, "method": r.method, "seed": r.seed, "train_length": r.config.train_length, **row}
            for r in distinct_runs(records) if r.status == "ok" for row in r.length_rows()]
    return pd.DataFrame(rows, columns=LENGTH_COLUMNS + (["reason"] if any("reason" in x for x in rows) else []))
