"""Run records: one JSON file per run, written atomically, validated on read.

File name: ``<task>__<encoding>__seed<k>__<config hash>.json``. Statuses:
``ok``, ``diverged`` (non-finite training loss), ``error`` (the run raised;
the message is kept), ``not_applicable`` (the encoding needs structure the
task does not have, e.g. ``coupled`` on ``parity_check``).

A stored record is reused or aggregated only after ``validate_record`` has
checked it against its file name, its config hash and every field the
leaderboard reads: a record copied over another cell's file, edited by hand,
or written by another schema version is never silently used.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.files import write_json
from lengthbench.models.families import TRANSFORMER, method_name
from lengthbench.tasks.base import InputError

RECORD_SCHEMA_VERSION = 1
STATUSES = ("ok", "diverged", "error", "not_applicable")
FINISHED = ("ok", "diverged", "not_applicable")  # a rerun skips these; errors are retried
SUMMARY_FIELDS = tuple(f"{split}_{metric}" for split in ("id", "ood")
                       for metric in ("exact_match", "token_accuracy"))
LENGTH_STATUSES = ("ok", "unsupported")
QUARANTINE_SUFFIX = ".invalid"

log = logging.getLogger(__name__)


class RecordError(InputError):
    """A record file that is not a valid run record for its file name."""


def record_path(results_dir: Path, run_id: str) -> Path:
    return Path(results_dir) / f"{run_id}.json"


def write_record(results_dir: Path, record: dict) -> Path:
    """Temp file + rename: a reader never sees a half-written record."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    return write_json(record_path(results_dir, record["run_id"]), record)


def _fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _problem(record, path: Path) -> str | None:
    """What makes ``record`` invalid at ``path``, or None."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not a run record object"
    version = record.get("schema_version")
    if version != RECORD_SCHEMA_VERSION or isinstance(version, bool):
        return (f"schema_version {version!r}; this lengthbench reads version {RECORD_SCHEMA_VERSION}")
    missing = [k for k in ("run_id", "task", "encoding", "seed", "config_hash", "config", "status")
               if k not in record]
    if missing:
        return f"lacks {', '.join(missing)}"
    if record["status"] not in STATUSES:
        return f"status {record['status']!r}; valid: {', '.join(STATUSES)}"
    try:
        config = RunConfig.from_dict(record["config"])
        config_hash = config.config_hash()
    except (TypeError, ValueError, AttributeError) as err:
        return f"its config is not a run configuration ({err})"
    if record["config_hash"] != config_hash:
        return f"config_hash {record['config_hash']!r} does not match its config (hash {config_hash})"
    stated = (record["task"], record["encoding"], record["seed"])
    if stated != (config.task, config.encoding, config.seed) or record["run_id"] != config.run_id:
        return f"task/encoding/seed/run_id disagree with its config (run {config.run_id})"
    if record.setdefault("method", config.method) != config.method:  # see record_method
        return f"method {record['method']!r} disagrees with its config ({config.method})"
    if path.stem != config.run_id:
        return f"holds the record of run {config.run_id}, not of the run its file name names"
    if record["status"] == "ok":
        return _metrics_problem(record)
    if record["status"] == "error" and not isinstance(record.get("error"), str):
        return "an error record without its error message"
    return None


def _metrics_problem(record: dict) -> str | None:
    summary = record.get("summary")
    if not isinstance(summary, dict):
        return "status ok but no summary"
    for name in SUMMARY_FIELDS:
        if name not in summary or not (summary[name] is None or _fraction(summary[name])):
            return f"summary field {name} is {summary.get(name)!r}, not a fraction in [0, 1]"
    per_length = record.get("per_length")
    if not isinstance(per_length, list) or not per_length:
        return "status ok but no per_length metrics"
    for row in per_length:
        if not isinstance(row, dict) or not _count(row.get("length")) or not _count(row.get("n_samples")):
            return f"per_length entry {row!r} lacks an integer length or n_samples"
        if row.get("status") not in LENGTH_STATUSES:
            return f"per_length status {row.get('status')!r} at length {row['length']}; valid: ok, unsupported"
        for metric in ("exact_match", "token_accuracy"):
            if not _fraction(row.get(metric)):
                return f"{metric} {row.get(metric)!r} at length {row['length']} is not a fraction in [0, 1]"
    return None


def record_method(record: dict) -> str:
    """A record's method (records written before model families existed
    have no ``method`` field: they are transformers)."""
    return record.get("method") or method_name(record["config"].get("family", TRANSFORMER), record["encoding"])


def read_record(path: Path) -> dict:
    """Load and validate one record file; ``RecordError`` names the file."""
    path = Path(path)
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: not a readable run record ({err})") from None
    problem = _problem(record, path)
    if problem:
        raise RecordError(f"{path}: {problem}")
    return record


def load_finished(results_dir: Path, run_id: str, set_aside: bool = True) -> dict | None:
    """The stored record of a finished run, or None if it must (re)run.

    An invalid record is reported and, with ``set_aside``, moved aside to
    ``<file>.invalid`` (kept for inspection, never read again) so that its
    run is redone."""
    path = record_path(results_dir, run_id)
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
    return record if record["status"] in FINISHED else None


def stored_record(results_dir: Path, run_id: str) -> dict | None:
    """The valid record of a run in any status, or None (absent or invalid)."""
    path = record_path(results_dir, run_id)
    try:
        return read_record(path) if path.exists() else None
    except RecordError:
        return None


def stale_records(results_dir: Path, config: RunConfig) -> list[Path]:
    """Records of the same cell and settings made by other code versions
    (``RunConfig.code_versions``): kept on disk, never reused."""
    own = config.to_dict()
    own.pop("code_versions", None)
    stale = []
    for path in Path(results_dir).glob(f"{config.task}__{config.label}__seed{config.seed}__*.json"):
        if path.stem == config.run_id:
            continue
        try:
            other = dict(json.loads(path.read_text())["config"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        other.pop("code_versions", None)
        if other == own:
            stale.append(path)
    return stale


def load_records(results_dir: Path) -> list[dict]:
    """Every record in a folder, each validated: one invalid file stops the
    load with a one-line error that names it and says how to fix it."""
    records = []
    for path in sorted(Path(results_dir).glob("*__seed*__*.json")):
        try:
            records.append(read_record(path))
        except RecordError as err:
            raise RecordError(f"{err}; move the file out of the folder (or rerun its cell with "
                              "`lengthbench run`, which sets invalid records aside)") from None
    return records
