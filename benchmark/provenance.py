"""``provenance.json``: the exact command, code version, hardware and wall
time beside every set of results (a leaderboard, a saturation report)."""

from __future__ import annotations

import itertools
import json
import logging
import time
from datetime import datetime, timezone
from pathlib import Path

from lengthbench.benchmark.device import hardware_description
from lengthbench.benchmark.files import write_json
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.version import code_version

log = logging.getLogger(__name__)


def write_provenance(out_dir: Path, command: str, seconds: float | None, records: list[RunRecord],
                     name: str = "provenance.json", **extra) -> Path:
    """Write ``out_dir/name``; ``seconds`` None when the invocation's wall time
    is not known (a provenance reconstructed from records); ``extra`` fields
    are added as they are."""
    return write_json(Path(out_dir) / name, {
        "command": command,
        "code_version": code_version(),
        "hardware": hardware_description(),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s_this_invocation": None if seconds is None else round(seconds, 1),
        "runs": len(records),
        "run_wall_time_s_total": round(sum(r.wall_time_s or 0 for r in records), 1),
        "run_code_versions": sorted({r.code_version for r in records}),
        **extra,
    })


def write_run_provenance(out_dir: Path, command: str, seconds: float, records: list[RunRecord],
                         started: float | None = None) -> Path:
    """``provenance.json`` of a finished invocation. One already there from
    another command (a second preset run into the same folder, as the format
    and looped cells join a reference) is kept beside it as
    ``provenance-<its finish time>.json``, so a folder's README still counts
    every command that made its records; an invocation that finished no run
    (a rerun that reused every record) leaves the one there as it is. It says how many runs it finished
    (``runs_finished_this_invocation``: those that started after ``started``,
    the invocation's start as POSIX time; by default ``seconds`` ago), as an
    interrupted sitting's does."""
    path = Path(out_dir) / "provenance.json"
    earlier = _readable(path)
    finished = _started_since(records, started if started is not None else time.time() - seconds)
    if earlier is not None and not finished:
        return path  # an invocation that trained nothing made no record: the provenance of those who did stays
    if earlier is not None and earlier.get("command") != command:
        path.replace(_free_name(path, _stamp(earlier.get("finished_at"))))
    return write_provenance(out_dir, command, seconds, records, runs_finished_this_invocation=finished)


def _started_since(records: list[RunRecord], started: float) -> int:
    """How many of ``records`` started at or after ``started`` (the runs this
    invocation trained, or saw another process train, rather than reused);
    a record whose start time does not read counts as reused. A record's
    start is kept to the microsecond; one written to the second (before
    that) may have started up to a second later than it says, so it counts
    when it says a second or less before ``started``."""
    count = 0
    for record in records:
        text = str(record.started_at)
        try:
            count += datetime.fromisoformat(text).timestamp() >= started - (0 if "." in text else 1)
        except ValueError:
            continue
    return count


def _stamp(finished_at) -> str:
    """``finished_at`` as the UTC stamp the sittings' files carry ("earlier" when it is not a time)."""
    try:
        return datetime.fromisoformat(str(finished_at)).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        return "earlier"


def _free_name(path: Path, stamp: str) -> Path:
    """``provenance-<stamp>.json`` beside ``path``, numbered where that name is taken."""
    names = itertools.chain([f"provenance-{stamp}.json"], (f"provenance-{stamp}-{n}.json" for n in itertools.count(2)))
    return next(path.with_name(name) for name in names if not path.with_name(name).exists())


def _readable(path: Path) -> dict | None:
    """The JSON object at ``path``, or None where there is none to keep."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_sitting_provenance(out_dir: Path, command: str, seconds: float, stop) -> Path | None:
    """The provenance of an interrupted invocation (a ``GridInterrupted``
    ``stop``), beside the others as ``provenance-interrupted-<UTC time>.json``:
    a grid made in several sittings keeps the command, machine and wall time
    of each, which a reference's README sums. One that cannot be written is
    warned about, never raised: the interrupt, and its records, come first."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        return write_provenance(out_dir, command, seconds, stop.records, name=f"provenance-interrupted-{stamp}.json",
                                interrupted=True, runs=stop.finished, runs_in_grid=stop.total,
                                runs_finished_this_invocation=stop.finished_now)
    except OSError as err:
        log.warning("%s; this sitting has no provenance file, its records are kept", err)
        return None
