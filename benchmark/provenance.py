"""``provenance.json``: the exact command, code version, hardware and wall
time beside every set of results (a leaderboard, a saturation report)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from lengthbench.benchmark.device import hardware_description
from lengthbench.benchmark.files import write_json
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.version import code_version


def write_provenance(out_dir: Path, command: str, seconds: float | None, records: list[RunRecord],
                     name: str = "provenance.json") -> Path:
    """Write ``out_dir/name``; ``seconds`` None when the invocation's wall time
    is not known (a provenance reconstructed from records)."""
    return write_json(Path(out_dir) / name, {
        "command": command,
        "code_version": code_version(),
        "hardware": hardware_description(),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s_this_invocation": None if seconds is None else round(seconds, 1),
        "runs": len(records),
        "run_wall_time_s_total": round(sum(r.wall_time_s or 0 for r in records), 1),
        "run_code_versions": sorted({r.code_version for r in records}),
    })
