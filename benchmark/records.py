"""Run records: one JSON file per run, written atomically.

File name: ``<task>__<encoding>__seed<k>__<config hash>.json``. Statuses:
``ok``, ``diverged`` (non-finite training loss), ``error`` (the run raised;
the message is kept), ``not_applicable`` (the encoding needs structure the
task does not have, e.g. ``coupled`` on ``parity_check``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

RECORD_SCHEMA_VERSION = 1
STATUSES = ("ok", "diverged", "error", "not_applicable")
FINISHED = ("ok", "diverged", "not_applicable")  # a rerun skips these; errors are retried


class RecordError(ValueError):
    """A record file that cannot be read as a run record."""


def record_path(results_dir: Path, run_id: str) -> Path:
    return Path(results_dir) / f"{run_id}.json"


def write_record(results_dir: Path, record: dict) -> Path:
    """Write to a temp file in the same folder, then rename over the target,
    so a reader never sees a half-written record."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = record_path(results_dir, record["run_id"])
    fd, tmp = tempfile.mkstemp(dir=results_dir, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_record(path: Path) -> dict:
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: not a readable run record ({err})") from err
    missing = {"run_id", "status", "config", "schema_version"} - set(record)
    if missing:
        raise RecordError(f"{path}: run record lacks {sorted(missing)}")
    if record["status"] not in STATUSES:
        raise RecordError(f"{path}: status {record['status']!r}; valid: {', '.join(STATUSES)}")
    return record


def load_finished(results_dir: Path, run_id: str) -> dict | None:
    """The stored record of a finished run, or None if it must (re)run."""
    path = record_path(results_dir, run_id)
    if not path.exists():
        return None
    record = read_record(path)
    return record if record["status"] in FINISHED else None


def load_records(results_dir: Path) -> list[dict]:
    return [read_record(p) for p in sorted(Path(results_dir).glob("*__seed*__*.json"))]
