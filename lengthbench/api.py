"""The Python API: what the ``lengthbench`` command line calls, for notebooks.

Each function validates its input the way the command line does (an
``InputError`` naming the bad value and the valid choices) and returns a
pandas DataFrame; the files a call wrote are listed in the frame's
``attrs["written"]`` ({kind: path}).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

PathLike = str | Path


def run(preset: str = "quick", *, tasks: Sequence[str] | None = None, encodings: Sequence[str] | None = None,
        models: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
        results: PathLike | None = None, out: PathLike | None = None, force: bool = False,
        workers: int = 0, group_size: int = 0, executor: str = "local", address: str | None = None,
        plugins: Iterable[PathLike] = (), checkpoint_every: float | None = None, progress: bool = True,
        command: str | None = None) -> "pd.DataFrame":
    """Train and evaluate ``preset``'s grid (optionally narrowed to ``tasks``,
    ``encodings``, model families ``models`` and ``seeds``), then build its
    leaderboard; returns the leaderboard (one row per task x method).

    Records go to ``results`` (default ``results/<preset>``); a finished cell
    is reused, not rerun, unless ``force``. The leaderboard files and
    ``provenance.json`` go to ``out`` (default: ``results``). ``plugins`` are
    encoding files, contract-checked before any run. A run that fails is
    recorded in its cell (status ``error``; ``attrs["failed"]`` lists them,
    ``attrs["runs"]`` counts the grid's runs), not raised. ``workers``/``group_size`` 0 choose automatically.
    ``command`` is what provenance.json records as the call (default: this
    call, written as Python)."""
    from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S

    grid, plugin_files = narrowed_grid(preset, tasks, encodings, models, seeds, plugins)
    if command is None:
        given = {k: v for k, v in dict(tasks=tasks, encodings=encodings, models=models, seeds=seeds,
                                       results=results, out=out).items() if v is not None}
        command = f"lengthbench.run({preset!r}" + "".join(f", {k}={v!r}" for k, v in given.items()) + ")"
    return run_grid_to_leaderboard(grid, plugin_files, results=results, out=out, force=force, workers=workers,
                                   group_size=group_size, executor=executor, address=address,
                                   checkpoint_every=checkpoint_every or CHECKPOINT_EVERY_S,
                                   progress=progress, command=command)


def narrowed_grid(preset: str, tasks=None, encodings=None, models=None, seeds=None, plugins: Iterable[PathLike] = ()):
    """``preset``'s grid narrowed to the given axes (``None`` keeps one), with the
    installed and given encoding plugins loaded and contract-checked first;
    returns (the grid, its ``PluginFile``s). Nothing is trained or written."""
    from lengthbench.benchmark.presets import get_preset
    from lengthbench.models.plugins import PluginFile, load_entry_points

    grid = get_preset(preset)
    load_entry_points()
    plugin_files = [PluginFile(str(p)) for p in plugins]
    check_plugin_files(plugin_files)
    return grid.with_grid(tasks, encodings, seeds, models), plugin_files


def check_plugin_files(plugin_files: list, show_reports: bool = False) -> list[str]:
    """Load and contract-check encoding files the same way for every caller;
    raises a ``PluginError`` (naming each failed check) if any encoding fails.
    Returns the encodings they registered."""
    from lengthbench.models.plugins import check_plugins, contract_failure

    names, reports = check_plugins(plugin_files)
    for report in reports:
        if show_reports or not report.passed:
            print(report.format())
    if not all(r.passed for r in reports):
        raise contract_failure(plugin_files, reports)
    return names


def run_grid_to_leaderboard(grid, plugin_files: list, *, results: PathLike | None, out: PathLike | None,
                            force: bool, workers: int, group_size: int, executor: str, address: str | None,
                            checkpoint_every: float, progress: bool, command: str) -> "pd.DataFrame":
    """Run a validated grid (a ``Preset``), then write its leaderboard files and
    provenance; ``run`` and ``lengthbench submit`` both end here."""
    from lengthbench.benchmark.files import ensure_output_dir
    from lengthbench.benchmark.grid import grid_configs, resolve_workers, run_grid
    from lengthbench.benchmark.ray_executor import require_ray
    from lengthbench.leaderboard.build import build_leaderboard

    grid_configs(grid)  # every name and setting resolves before any folder is touched
    if executor == "ray":
        require_ray()
    results = ensure_output_dir(results or f"results/{grid.name}", "--results")
    out = ensure_output_dir(out, "--out") if out else results
    start = time.perf_counter()
    records = run_grid(grid, results, force=force, workers=resolve_workers(workers), group_size=group_size,
                       plugins=tuple(plugin_files), checkpoint_every=checkpoint_every, executor=executor,
                       address=address, progress=progress)
    board, paths = build_leaderboard(records, out)
    paths["provenance"] = write_provenance(out, command, time.perf_counter() - start, records)
    board.attrs["written"] = paths
    board.attrs["runs"] = len(records)
    board.attrs["failed"] = [{k: r.get(k) for k in ("task", "method", "seed", "error")}
                             for r in records if r["status"] == "error"]
    return board


def write_provenance(out_dir: Path, command: str, seconds: float, records: list[dict]) -> Path:
    """Beside a leaderboard: the exact command, code version, hardware, time."""
    from datetime import datetime, timezone

    from lengthbench.benchmark.device import hardware_description
    from lengthbench.benchmark.files import write_json
    from lengthbench.benchmark.version import code_version

    return write_json(Path(out_dir) / "provenance.json", {
        "command": command,
        "code_version": code_version(),
        "hardware": hardware_description(),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s_this_invocation": round(seconds, 1),
        "runs": len(records),
        "run_wall_time_s_total": round(sum(r.get("wall_time_s", 0) for r in records), 1),
        "run_code_versions": sorted({r.get("code_version", "?") for r in records}),
    })


def _records_of(results: PathLike) -> list[dict]:
    """Every validated record in the folder ``results``; refused with one line
    when it is not a folder of records."""
    from lengthbench.benchmark.records import load_records as read_all
    from lengthbench.tasks.base import InputError

    folder = Path(results)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise InputError(f"results {str(results)!r} {what}; give the folder that holds the run records (*.json)")
    records = read_all(folder)
    if not records:
        raise InputError(f"results {str(results)!r} holds no run records "
                         "(<task>__<encoding>__seed<k>__<hash>.json); run `lengthbench run` first")
    return records


def _flat(prefix: str, values: dict) -> dict:
    """Nested config dicts as dotted columns (``model.d_model``)."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_flat(f"{prefix}{key}.", value))
        else:
            out[f"{prefix}{key}"] = value
    return out


def load_records(results: PathLike) -> "pd.DataFrame":
    """Every run in the records folder ``results`` in long format: one row per
    run x evaluated length, with the run's identity (``run_id``, ``task``,
    ``method``, ``family``, ``encoding``, ``seed``, ``status``), every config
    field as a column (nested ones dotted: ``model.d_model``,
    ``encoding_params.max_len``), ``split`` (``id`` up to the training length,
    else ``ood``), the length's ``exact_match``/``token_accuracy``/``n_samples``
    and ``length_status``, and the run's ``wall_time_s``, ``n_parameters``,
    ``final_loss`` and ``error``. A run without lengths (error, n/a) is one
    row with ``length`` NaN, so no run is silently missing."""
    import pandas as pd

    from lengthbench.benchmark.records import record_method

    rows = []
    for record in _records_of(results):
        config = record["config"]
        base = {"run_id": record["run_id"], "task": record["task"], "method": record_method(record),
                "family": config.get("family", "transformer"), "encoding": record.get("encoding", ""),
                "seed": record["seed"], "status": record["status"],
                **_flat("", {k: v for k, v in config.items() if k not in ("task", "seed", "encoding", "family")}),
                "wall_time_s": record.get("wall_time_s"), "n_parameters": record.get("n_parameters"),
                "final_loss": (record.get("training") or {}).get("final_loss"), "error": record.get("error")}
        lengths = record.get("per_length") or [{}]
        for entry in lengths:
            length = entry.get("length")
            split = None if length is None else "id" if length <= config["train_length"] else "ood"
            rows.append({**base, "length": length, "split": split, "length_status": entry.get("status"),
                         "exact_match": entry.get("exact_match"), "token_accuracy": entry.get("token_accuracy"),
                         "n_samples": entry.get("n_samples")})
    frame = pd.DataFrame(rows)
    identity = ["run_id", "task", "method", "family", "encoding", "seed", "status"]
    per_length = ["length", "split", "length_status", "exact_match", "token_accuracy", "n_samples"]
    per_run = ["wall_time_s", "n_parameters", "final_loss", "error"]
    config = sorted(set(frame.columns) - set(identity + per_length + per_run))
    frame = frame[identity + config + per_run + per_length]
    return frame.astype({"length": "Int64", "n_samples": "Int64"})


def leaderboard(results: PathLike, out: PathLike | None = None) -> "pd.DataFrame":
    """The leaderboard of the records in ``results``: one row per task x
    method, the columns of ``leaderboard.csv`` (mean, std and bootstrap CI
    over seeds, per-length curves summarized, rank). With ``out`` the
    leaderboard files (csv, md, levels, plots, html) are written there."""
    from lengthbench.leaderboard.aggregate import leaderboard_frame
    from lengthbench.leaderboard.build import build_leaderboard

    records = _records_of(results)
    if out is None:
        return leaderboard_frame(records)
    from lengthbench.benchmark.files import ensure_output_dir

    board, paths = build_leaderboard(records, ensure_output_dir(out, "--out"))
    board.attrs["written"] = paths
    return board


def compare(a: "PathLike | pd.DataFrame", b: "PathLike | pd.DataFrame", *, metric: str = "exact_match",
            correction: str | None = None, out: PathLike | None = None) -> "pd.DataFrame":
    """Per-cell differences B - A of two leaderboards (``leaderboard.csv``
    paths, validated on read, or frames from ``leaderboard``): Welch's t-test
    per (task, method) on the OOD ``metric`` (``exact_match`` or
    ``token_accuracy``), p-values corrected over all tested cells
    (``correction``: ``bh`` Benjamini-Hochberg, the default, ``holm``, ``none``), a verdict
    per cell. With ``out`` compare.csv/.md/.png are written there."""
    from lengthbench.leaderboard.compare import METRICS, compare_frames, write_compare
    from lengthbench.leaderboard.schema import read_leaderboard
    from lengthbench.leaderboard.statistics import DEFAULT_CORRECTION
    from lengthbench.tasks.base import UnknownNameError

    if metric not in METRICS:
        raise UnknownNameError("metric", metric, METRICS)
    frames = [read_leaderboard(Path(x)) if isinstance(x, (str, Path)) else x for x in (a, b)]
    diff = compare_frames(*frames, metric, correction=correction or DEFAULT_CORRECTION)
    if out is not None:
        from lengthbench.benchmark.files import ensure_output_dir

        names = [str(x) if isinstance(x, (str, Path)) else name for x, name in zip((a, b), ("A", "B"))]
        diff.attrs["written"] = write_compare(diff, ensure_output_dir(out, "--out"), *names)
    return diff
