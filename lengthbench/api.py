"""The Python API: everything the ``lengthbench`` command line does, for
notebooks and scripts (the command line calls these functions and nothing else).

Each function validates its input the way the command line does (an
``InputError`` naming the bad value and the valid choices). The main four
return pandas DataFrames; the files a call wrote are listed in the frame's
``attrs["written"]`` ({kind: path}):

* ``run(preset, tasks=, formats=, encodings=, models=, seeds=, results=)``: train and
  evaluate a grid, returns its leaderboard;
* ``load_records(results)``: every run x length as a long DataFrame;
* ``load_leaderboard(results)``: one row per task x method (it writes nothing);
* ``write_leaderboard(results, out)``: that board and its files (tables, plots, page) in ``out``;
* ``compare(a, b)``: per-cell differences of two leaderboards;
* ``generate(task)``, ``score(task, predictions)``, ``evaluate(model,
  task)``: the benchmark's test instances for a model lengthbench does not
  train, its predictions scored, or a PyTorch model evaluated directly.

The others (``plan``, ``submit``, ``check``, ``reproduce``, ``perf``,
``bench_generation`` and the listings) return what the command prints.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S
from lengthbench.benchmark.config import Preset, dotted, parse_setting
from lengthbench.benchmark.dataset import export_dataset
from lengthbench.benchmark.device import default_device
from lengthbench.benchmark.files import check_input_file, ensure_output_dir, write_csv, write_json, write_text
from lengthbench.benchmark.grid import (
    EXECUTORS,
    GridInterrupted,
    grid_configs,
    resolve_workers,
    run_grid,
)
from lengthbench.benchmark.instances import (
    MAX_PREDICTIONS_BYTES,
    evaluate_any,
    evaluation_instances,
    read_jsonl,
    read_parquet_rows,
    score_predictions,
    write_jsonl,
)
from lengthbench.benchmark.live_log import LOG_KINDS
from lengthbench.benchmark.plan import check_training_memory, estimate, format_plan
from lengthbench.benchmark.predictions import read_predictions
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.provenance import write_run_provenance, write_sitting_provenance
from lengthbench.benchmark.records import METRICS, RunRecord
from lengthbench.benchmark.selection import SelectionGrid, run_selection
from lengthbench.benchmark.store import SELECTION_FOLDER, ResultsFolder
from lengthbench.benchmark.tools import bench_generation as generation_bench
from lengthbench.benchmark.tools import perf as perf_bench
from lengthbench.benchmark.version import __version__
from lengthbench.benchmark.versions import check_unchanged
from lengthbench.core.errors import InputError, RunsFailed, UnknownNameError
from lengthbench.leaderboard.aggregate import leaderboard_frame, length_frame
from lengthbench.leaderboard.build import build_leaderboard
from lengthbench.leaderboard.compare import compare_frames, summary_text, write_compare
from lengthbench.leaderboard.compare import to_markdown as compare_markdown
from lengthbench.leaderboard.external import external_row, with_external
from lengthbench.leaderboard.reference_notes import reference_readme, shipped_records
from lengthbench.leaderboard.schema import COLUMN_NAMES, read_leaderboard
from lengthbench.leaderboard.statistics import CORRECTIONS, DEFAULT_CORRECTION
from lengthbench.leaderboard.submission import ranking_text, write_submission
from lengthbench.leaderboard.tables import to_markdown as leaderboard_markdown
from lengthbench.models.contract import CheckShape, ContractReport, check_encoding, check_family
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES, family_entry
from lengthbench.models.huggingface import load_saved_model
from lengthbench.models.plugins import (
    ORIGINS,
    PluginFile,
    check_plugins,
    contract_failure,
    load_entry_points,
)
from lengthbench.studies import STUDIES
from lengthbench.studies.base import settings_source, studies_listing, study_report
from lengthbench.tasks import TASKS, listing
from lengthbench.tasks.cells import cell_name, method_parts
from lengthbench.tasks.formats import FORMATS

PathLike = str | Path
log = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_EVERY_S", "LOG_KINDS", "CORRECTIONS", "DEFAULT_CORRECTION", "EXECUTORS", "METRICS", "PRESETS", "STUDIES",
    "GridInterrupted", "InputError", "RunsFailed", "bench_generation", "cell_name", "check", "compare", "compare_text", "encodings_text",
    "evaluate", "export", "generate",
    "leaderboard_text", "load_leaderboard", "load_records", "write_leaderboard", "models_text", "parse_setting",
    "load_predictions", "perf", "perf_configs", "plan", "presets_text", "reproduce", "run", "score", "studies_text",
    "study_names", "submit", "tasks_table", "formats_table", "__version__",
]


def run(preset: str = "quick", *, tasks: Sequence[str] | None = None, encodings: Sequence[str] | None = None,
        models: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        results: PathLike | None = None, out: PathLike | None = None, force: bool = False,
        workers: int = 0, executor: str = "local", address: str | None = None,
        plugins: Iterable[PathLike] = (), checkpoint_every: float | None = None, progress: bool = True,
        select: str | None = None, settings: Mapping[str, int | float] | None = None,
        save_predictions: bool = False, command: str | None = None, live_log: str | None = None) -> pd.DataFrame:
    """Train and evaluate ``preset``'s grid (optionally narrowed to ``tasks``,
    ``encodings``, model families ``models`` and ``seeds``, each task written
    in each of ``formats``: ``formats_table``), then build its leaderboard;
    returns the leaderboard (one row per task x format x method, the task
    column holding the label, ``addition+reversed``).

    Records go to ``results`` (default ``results/<preset>``); a finished cell
    is reused, not rerun, unless ``force``. The leaderboard files and
    ``provenance.json`` go to ``out`` (default: ``results``). ``plugins`` are
    encoding files, contract-checked before any run. A run that fails is
    recorded in its cell (status ``error``; ``attrs["failed"]`` lists them,
    ``attrs["runs"]`` counts the grid's runs), not raised. ``workers`` 0 chooses automatically.
    ``select`` (``"lr=5e-4,1e-3,2e-3"``; default: the preset's own ``select``)
    trains the grid once per value and keeps, per (task, method), the value
    with the best validation-band exact match (``benchmark.selection``).
    ``settings`` (``{"steps": 500}``) override the preset's run settings for
    every cell (``run --set``; they enter each run's config, so its protocol
    and record say so); records then go by default to
    ``results/<preset>-<settings>``, apart from the preset's own.
    ``save_predictions`` keeps each trained run's predictions at every
    evaluated length beside its record (``load_predictions`` reads them).
    ``live_log`` (``"tensorboard"``) writes each run's training as it runs
    under ``results/logs/`` (``benchmark.live_log``).
    ``command`` is what provenance.json records as the call (default: this
    call, written as Python)."""
    grid, plugin_files = _narrowed_grid(preset, tasks, encodings, models, seeds, plugins, settings, formats)
    selection = _selection(grid, select, settings)
    select = select if select is not None else (grid.select or None)
    if command is None:
        given = {k: v for k, v in dict(tasks=tasks, formats=formats, encodings=encodings, models=models, seeds=seeds,
                                       results=results, out=out, select=select, settings=settings).items()
                 if v is not None}
        command = f"lengthbench.run({preset!r}" + "".join(f", {k}={v!r}" for k, v in given.items()) + ")"
    board = _run_grid_to_leaderboard(grid, plugin_files, results=results, out=out, force=force, workers=workers,
                                     executor=executor, address=address,
                                     checkpoint_every=checkpoint_every or CHECKPOINT_EVERY_S,
                                     save_predictions=save_predictions, progress=progress, command=command,
                                     selection=selection, live_log=live_log)
    if board.attrs["failed"] and len(board.attrs["failed"]) == board.attrs["trained"]:
        raise RunsFailed(board)
    return board


def _selection(grid: Preset, select: str | None, settings: Mapping | None) -> SelectionGrid | None:
    """The setting chosen on the validation band (``select``, else the preset's own), refused when ``settings``
    also fixes it: a setting is chosen or fixed, not both."""
    text = select if select is not None else (grid.select or None)
    selection = SelectionGrid.parse(text) if text is not None else None
    if selection is not None and selection.field in (settings or {}):
        whose = f"--select {text}" if select is not None else f"preset {grid.name!r} selects {text}"
        raise InputError(f"{selection.field} is both fixed (--set {selection.field}={settings[selection.field]:g}) "
                         f"and chosen on the validation band ({whose}); drop one")
    return selection


def plan(preset: str = "quick", *, tasks: Sequence[str] | None = None, encodings: Sequence[str] | None = None,
         models: Sequence[str] | None = None, seeds: Sequence[int] | None = None, results: PathLike | None = None,
         workers: int = 0, plugins: Iterable[PathLike] = (), settings: Mapping[str, int | float] | None = None,
         force: bool = False, select: str | None = None, formats: Sequence[str] | None = None) -> str:
    """What ``run`` with the same arguments would cost here (runs stored and
    to run, useful FLOPs, calibrated wall time), as text; trains and
    writes nothing. With ``force`` nothing stored is reused; a ``select``
    (or the preset's own) is validated and priced: one grid per value."""
    grid, _ = _narrowed_grid(preset, tasks, encodings, models, seeds, plugins, settings, formats)
    choice = _selection(grid, select, settings)
    select = select if select is not None else (grid.select or None)
    folder = Path(results or default_results(grid))
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--results {str(folder)!r} is a file, not a folder; give a folder path")
    workers = resolve_workers(workers)
    start = time.perf_counter()
    if choice is None:
        estimates, total, stored = estimate(grid, folder, workers, force)
        return format_plan(grid, estimates, total, stored, workers, time.perf_counter() - start, force)
    parts = []
    for value in choice.values:  # each value's grid, priced against what its own folder holds
        one = replace(grid, overrides={**grid.overrides, choice.field: value})
        estimates, total, stored = estimate(one, folder / SELECTION_FOLDER, workers, force)
        parts.append(f"{choice.field}={value:g}: " + format_plan(one, estimates, total, stored, workers,
                                                                 time.perf_counter() - start, force))
    whose = "the preset's own select" if select == grid.select else "--select"
    return "\n\n".join(parts) + (f"\n\nselection: {choice.describe()} ({whose}): the grid trains once per value "
                                   f"(in {folder / SELECTION_FOLDER}), each priced above; the chosen records are "
                                   f"then copied to {folder}")


def submit(path: PathLike, preset: str = "quick", *, name: str | None = None,
           tasks: Sequence[str] | None = None, seeds: Sequence[int] | None = None, results: PathLike | None = None,
           formats: Sequence[str] | None = None, out: PathLike | None = None, workers: int = 0, executor: str = "local",
           address: str | None = None, checkpoint_every: float = CHECKPOINT_EVERY_S, progress: bool = True,
           save_predictions: bool = False, command: str | None = None, live_log: str | None = None) -> pd.DataFrame:
    """Check the encoding (or model-family) file ``path``, run its cells through ``preset`` (the
    built-in cells come from the stored records, trained only if missing) on
    ``tasks``, ``formats`` and ``seeds`` (default: the preset's, which are its shipped
    reference's, so ranks compare like cells) and rank it. Writes the
    submission's own files (``submission-<name>.{csv,md,html}`` and its
    provenance) and leaves the preset's leaderboard files alone; returns the
    board with ``attrs["ranking"]`` (the text) and ``attrs["written"]``.
    ``name`` renames the file's single encoding."""
    grid = PRESETS[preset]
    load_entry_points()
    plugins = [PluginFile(str(path), name)]
    names, reports = _checked(plugins, grid)
    families = [n for n in names if n in FAMILIES]
    encodings = [n for n in names if n not in FAMILIES]
    grid = grid.with_grid(tasks=tasks, encodings=[e for e in grid.encodings if e not in encodings] + encodings,
                          seeds=seeds, families=[f for f in grid.families if f not in families] + families,
                          formats=formats)
    results = results or default_results(grid)
    _reuse_shipped(grid, preset, results)
    records, out, seconds = _run_grid(grid, plugins, results=results, out=out, force=False, workers=workers,
                                      executor=executor, address=address,
                                      checkpoint_every=checkpoint_every, save_predictions=save_predictions,
                                      progress=progress, live_log=live_log)
    board = _with_outcome(leaderboard_frame(records), records, {})
    per_length = length_frame(records)
    command = command or f"lengthbench.submit({str(path)!r}, {preset!r})"
    for encoding in names:
        board.attrs["written"] |= write_submission(board, per_length, encoding, preset, out, command, seconds,
                                                   records)
    board.attrs["reports"] = reports
    board.attrs["ranking"] = ranking_text(board, names)
    return board


def _reuse_shipped(grid: Preset, preset: str, results: PathLike) -> None:
    """Copy into ``results`` the shipped reference's records of the grid's
    built-in cells that it lacks (the same run ids: the same configs and code
    versions), so a submit on a fresh install trains only the new cells."""
    shipped = shipped_records(preset)
    if shipped is None:
        return
    source, folder = ResultsFolder(shipped), ResultsFolder(ensure_output_dir(results, "--results"))
    adopted = sum(folder.adopt(config.run_id, source) for config in grid_configs(grid))
    if adopted:
        log.info("%d runs of the grid taken from the shipped %s reference (%s)", adopted, preset, shipped)


def check(path: PathLike, preset: str = "quick", all_presets: bool = False) -> list[ContractReport]:
    """Run every encoding and model family the file ``path`` registers through
    its contract at ``preset``'s shapes (every built-in preset's with
    ``all_presets``); one report per name (``report.passed``,
    ``report.format()``). ``path`` may instead be the name of a registered
    encoding or family (``forget``, ``deltanet``), which is checked as it is."""
    load_entry_points()
    presets = list(PRESETS.values()) if all_presets else [PRESETS[preset]]
    shapes = check_shapes(presets)
    name = str(path)
    if not Path(name).exists() and (name in ENCODINGS or name in FAMILIES):
        return [(check_family if name in FAMILIES else check_encoding)(name, shapes)]
    return check_plugins([PluginFile(name)], shapes)[1]


def check_shapes(presets: Iterable[Preset]) -> list[CheckShape]:
    """The shapes the transformer builds encodings with in ``presets``: each
    distinct (d_model, n_heads), with the longest length evaluated at it and
    its tasks (for the gradient check), labelled by the presets that use it."""
    shapes: dict[tuple[int, int], dict] = {}
    for preset in presets:
        for task in preset.tasks:
            config = preset.run_config(task, "nope", preset.seeds[0])
            at = shapes.setdefault((config.model.d_model, config.model.n_heads),
                                   {"labels": [], "test_length": 0, "tasks": {}})
            at["labels"] += [preset.name] if preset.name not in at["labels"] else []
            at["test_length"] = max(at["test_length"], config.test_length)
            at["tasks"].setdefault(task, config.train_length)
    return [CheckShape(", ".join(s["labels"]), d, h, s["test_length"], tuple(s["tasks"].items()))
            for (d, h), s in shapes.items()]


def _checked(plugin_files: list[PluginFile], grid: Preset) -> tuple[list[str], list[ContractReport]]:
    """Load and contract-check encoding files the same way for every caller,
    at the shapes of the grid they will run in; raises a ``PluginError``
    (naming each failed check) if any encoding fails."""
    names, reports = check_plugins(plugin_files, check_shapes([grid]))
    if not all(r.passed for r in reports):
        raise contract_failure(plugin_files, reports)
    return names, reports


def _narrowed_grid(preset: str, tasks=None, encodings=None, models=None, seeds=None,
                   plugins: Iterable[PathLike] = (), settings: Mapping | None = None,
                   formats=None) -> tuple[Preset, list[PluginFile]]:
    """``preset``'s grid narrowed to the given axes (``None`` keeps one), its
    run settings overridden by ``settings`` (each validated by name, type and
    range), with the installed and given encoding plugins loaded and
    contract-checked first."""
    grid = PRESETS[preset]
    if settings:
        checked = dict(parse_setting(f"{key}={value}") for key, value in dict(settings).items())
        grid = replace(grid, overrides={**grid.overrides, **checked})
    load_entry_points()
    plugin_files = [PluginFile(str(p)) for p in plugins]
    _checked(plugin_files, grid)
    return grid.with_grid(tasks, encodings, seeds, models, formats), plugin_files


def default_results(grid: Preset) -> str:
    """``results/<preset>``, or with overridden settings
    ``results/<preset>-<key><value>...``: records of other settings never
    share the preset's folder (its leaderboard would mix two protocols)."""
    given = PRESETS[grid.name].overrides if grid.name in PRESETS else {}
    extra = {k: v for k, v in grid.overrides.items() if given.get(k) != v}
    return f"results/{grid.name}" + "".join(f"-{k}{v:g}" for k, v in sorted(extra.items()))


def _run_grid(grid: Preset, plugin_files: list, *, results: PathLike | None, out: PathLike | None, force: bool,
              workers: int, executor: str, address: str | None, checkpoint_every: float,
              progress: bool, save_predictions: bool = False, selection: SelectionGrid | None = None,
              command: str | None = None, live_log: str | None = None) -> tuple[list[RunRecord], Path, float]:
    """Run a validated grid (once per value of ``selection``, keeping the
    chosen records); returns its records, the output folder and the wall time.
    ``run`` and ``submit`` both start here. With ``command``, an interrupted
    grid leaves that sitting's provenance in ``out`` before it re-raises."""
    configs = grid_configs(grid)
    check_unchanged(configs)  # every name and setting resolves, and no source drifted, before any run
    check_training_memory(configs)
    unseen = sorted({c.task for c in configs if c.fit_unseen})
    if save_predictions and unseen:
        raise InputError(f"save_predictions cannot be kept for cells that judge their fit on unseen inputs "
                         f"(fit_unseen: {', '.join(unseen)}): their examples are chosen per run; run without "
                         "--save-predictions")
    EXECUTORS[executor].check()
    results = ensure_output_dir(results or default_results(grid), "--results")
    out = ensure_output_dir(out, "--out") if out else results
    start = time.perf_counter()
    options = dict(force=force, workers=resolve_workers(workers), plugins=tuple(plugin_files),
                   checkpoint_every=checkpoint_every, executor=executor, address=address, progress=progress,
                   save_predictions=save_predictions, live_log=live_log)
    try:
        records = (run_selection(grid, selection, results, **options) if selection is not None
                   else run_grid(grid, results, **options))
    except GridInterrupted as stop:
        if command is not None:
            write_sitting_provenance(out, command, time.perf_counter() - start, stop)
        raise
    return records, out, time.perf_counter() - start


def _with_outcome(board: pd.DataFrame, records: list[RunRecord], written: dict) -> pd.DataFrame:
    """``board`` with the files written and the runs that raised, as ``run`` and ``submit`` report them."""
    board.attrs["written"] = dict(written)
    board.attrs["runs"] = len(records)
    board.attrs["trained"] = sum(r.status != "not_applicable" for r in records)
    board.attrs["failed"] = [{"task": r.task, "method": r.method, "seed": r.seed, "error": r.error}
                             for r in records if r.status == "error"]
    return board


def _run_grid_to_leaderboard(grid: Preset, plugin_files: list, *, command: str, **options) -> pd.DataFrame:
    """Run a grid, then write its leaderboard files and provenance."""
    started = time.time()  # the runs that start after it are this invocation's (building the board takes a while)
    records, out, seconds = _run_grid(grid, plugin_files, command=command, **options)
    board, paths = build_leaderboard(records, out)
    paths["provenance"] = write_run_provenance(out, command, seconds, records, started=started)
    return _with_outcome(board, records, paths)


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


def _records_of(results: PathLike, preset: str | None = None) -> list[RunRecord]:
    """Every validated record in the folder ``results`` (of ``preset``'s grid
    only, when given); refused with one line when it is not a folder of
    records."""
    folder = Path(results)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise InputError(f"results {str(results)!r} {what}; give the folder that holds the run records (*.json)")
    records = ResultsFolder(folder).records()
    if not records:
        raise InputError(f"results {str(results)!r} holds no run records "
                         "(<task>__<encoding>__seed<k>__<hash>.json); run `lengthbench run` first")
    return of_preset(records, preset, results)


def load_records(results: PathLike) -> pd.DataFrame:
    """Every run in the records folder ``results`` in long format: one row per
    run x evaluated length, with the run's identity (``run_id``, ``task``,
    ``method``, ``family``, ``encoding``, ``seed``, ``status``), every config
    field as a column (nested ones dotted: ``model.d_model``,
    ``encoding_params.max_len``), ``split`` (``id`` up to the training length,
    else ``ood``), the length's ``exact_match``/``token_accuracy``/``n_samples``
    and ``length_status``, and the run's ``wall_time_s``, ``n_parameters``,
    ``final_loss`` and ``error``. A run without lengths (error, n/a) is one
    row with ``length`` NaN, so no run is silently missing."""
    rows = []
    for record in _records_of(results):
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
    identity = ["run_id", "task", "method", "family", "encoding", "seed", "status"]
    per_length = ["length", "split", "length_status", "exact_match", "token_accuracy", "n_samples"]
    per_run = ["wall_time_s", "n_parameters", "final_loss", "error"]
    config = sorted(set(frame.columns) - set(identity + per_length + per_run))
    frame = frame[identity + config + per_run + per_length]
    return frame.astype({"length": "Int64", "n_samples": "Int64"})


def load_leaderboard(results: PathLike, preset: str | None = None, external: Sequence[PathLike] = ()) -> pd.DataFrame:
    """The leaderboard of the records in ``results``: one row per task x
    method, the columns of ``leaderboard.csv`` (mean, std and Student-t interval
    over seeds, per-length curves summarized, rank). With ``preset``, only the
    records of that preset's grid count. ``external``: ``leaderboard.csv``
    files of ``score --method``, whose rows join the board (ranked beside its
    methods; refused where their length bands differ from the board's). It
    only reads: it writes nothing (``write_leaderboard`` writes the files)."""
    return _board(_records_of(results, preset), external)


def _board(records: list[RunRecord], external: Sequence[PathLike]) -> pd.DataFrame:
    board = leaderboard_frame(records)
    for path in external:
        board = with_external(board, read_leaderboard(path), str(path))
    return board


def write_leaderboard(results: PathLike, out: PathLike, reference: bool = False, preset: str | None = None,
                      external: Sequence[PathLike] = ()) -> pd.DataFrame:
    """``load_leaderboard``'s board, its files written to ``out`` (csv, md,
    levels, plots, html; ``board.attrs["written"]`` names them). With
    ``reference``, records made from uncommitted code (``+g<commit>.dirty``)
    are refused (a shipped reference comes from committed code only), and the
    folder's ``README.md`` (``reference_notes``) and ``reference.json`` (where
    its records are and how many runs the preset's grid has today, for the
    rebuild test) are written too."""
    records = _records_of(results, preset)
    if reference:
        dirty = sorted(r.run_id for r in records if r.code_version.endswith(".dirty"))
        if dirty:
            raise InputError(f"{len(dirty)} record(s) in {str(results)!r} were made from uncommitted code (e.g. "
                             f"{dirty[0]}.json); a reference is built from committed code only: commit, then rerun "
                             "those cells (move their records aside first)")
        if external:
            raise InputError("--external with --reference: a reference holds the records it was built from only")
    out = ensure_output_dir(out, "--out")
    board, paths = build_leaderboard(records, out, _board(records, external))
    if reference:
        rebuild = (f"lengthbench leaderboard --reference --results {results} --out {out}"
                   + (f" --preset {preset}" if preset else ""))
        grid_runs = len(grid_configs(PRESETS[preset])) if preset else None
        paths["readme"] = write_text(out / "README.md", reference_readme(out.name, records, board, out, rebuild,
                                                                    grid_runs, Path(results), settings_source(preset)))
        paths["reference"] = write_json(out / "reference.json", {"records": os.path.relpath(results, out),
                                                                  "preset": preset, "grid_runs": grid_runs,
                                                                  "rebuild": rebuild})
    board.attrs["written"] = paths
    return board


def leaderboard_text(board: pd.DataFrame) -> str:
    """A leaderboard as the markdown tables ``leaderboard.md`` holds."""
    return leaderboard_markdown(board)


def compare(a: PathLike | pd.DataFrame, b: PathLike | pd.DataFrame, *, metric: str = "exact_match",
            correction: str | None = None, out: PathLike | None = None,
            allow_mismatch: bool = False) -> pd.DataFrame:
    """Per-cell differences B - A of two leaderboards (``leaderboard.csv``
    paths, validated on read, or frames from ``load_leaderboard``): Welch's
    t-test per (task, method) on the OOD ``metric`` (``exact_match`` or
    ``token_accuracy``), p-values corrected over all tested cells
    (``correction``: ``bh`` Benjamini-Hochberg, the default, ``holm``, ``none``), a verdict
    per cell. Cells made under different protocols (settings) are refused
    (``ProtocolMismatch``, naming the fields) unless ``allow_mismatch``, and
    then every output states the mismatch. With ``out`` compare.csv/.md/.png
    are written there."""
    if metric not in METRICS:
        raise UnknownNameError("metric", metric, METRICS)
    frames = [read_leaderboard(Path(x)) if isinstance(x, (str, Path)) else x for x in (a, b)]
    for side, frame in zip("AB", frames):
        missing = [c for c in COLUMN_NAMES if c not in getattr(frame, "columns", ())]
        if missing:
            raise InputError(f"leaderboard {side} is a {type(frame).__name__} without the column(s) "
                             f"{', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}; give a leaderboard.csv "
                             "path or a frame from lengthbench.load_leaderboard")
    diff = compare_frames(*frames, metric, correction=correction or DEFAULT_CORRECTION,
                          allow_mismatch=allow_mismatch)
    diff.attrs["names"] = [str(x) if isinstance(x, (str, Path)) else name for x, name in zip((a, b), ("A", "B"))]
    if out is not None:
        diff.attrs["written"] = write_compare(diff, ensure_output_dir(out, "--out"), *diff.attrs["names"])
    return diff


def compare_text(diff: pd.DataFrame) -> str:
    """A comparison as ``compare.md`` holds it, then its one-line summary."""
    return (compare_markdown(diff, *diff.attrs.get("names", ("A", "B"))) + "summary: " + summary_text(diff)
            + f" (multiple-comparison correction: {diff.correction.iloc[0] if len(diff) else DEFAULT_CORRECTION})")


def _evaluation_settings(task: str, preset: str, lengths, samples, seed) -> tuple[list[int], int, int]:
    """The lengths, samples per length and evaluation seed a run of
    ``preset`` evaluates ``task`` at, each unless given."""
    if preset not in PRESETS:
        raise UnknownNameError("preset", preset, PRESETS)
    config = PRESETS[preset].evaluation_config(task)
    return (list(config.eval_lengths()) if lengths is None else list(lengths),
            config.eval_samples if samples is None else samples, config.eval_seed if seed is None else seed)


def generate(task: str, lengths: Sequence[int] | None = None, *, samples: int | None = None,
             seed: int | None = None, preset: str = "quick", out: PathLike | None = None) -> list[dict]:
    """The benchmark's evaluation instances of ``task``, one dict per
    instance (``benchmark.instances``: ``input``/``answer`` as text,
    ``input_ids``/``answer_ids`` as token ids, and where each came from): by
    default exactly those a run of ``preset`` is scored on (its evaluated
    lengths, samples per length and evaluation seed). With ``out``, written
    there as JSON Lines (``datasets.load_dataset("json", data_files=out)``
    reads them)."""
    lengths, samples, seed = _evaluation_settings(task, preset, lengths, samples, seed)
    instances = evaluation_instances(task, lengths, samples, seed)
    if out is not None:
        write_text(Path(out), write_jsonl(instances))
    return instances


def export(preset: str = "quick", out: PathLike = "dataset", *, tasks: Sequence[str] | None = None) -> dict:
    """Write ``preset``'s test instances (every task label of its grid, or
    ``tasks``) to the folder ``out`` as a Hugging Face dataset: Parquet per
    task and length band, a dataset card and Croissant metadata
    (``benchmark.dataset``). ``datasets.load_dataset(out, TASK)`` loads it;
    its rows are ``generate``'s instances plus an ``id`` that ``score`` reads.
    Returns what was written (``configs``, ``skipped``, ``folder``)."""
    if preset not in PRESETS:
        raise UnknownNameError("preset", preset, PRESETS)
    return export_dataset(PRESETS[preset], out, tasks)


def score(task: str, predictions: PathLike, *, out: PathLike | None = None, method: str | None = None,
          preset: str = "quick") -> pd.DataFrame:
    """Per-length exact match and token accuracy of ``predictions``: the
    JSON Lines of ``generate`` with a ``prediction`` (the answer as text) or
    ``prediction_ids`` added to each line, or a run's saved predictions
    (``run(save_predictions=True)``: a ``.npz`` file). Every line must answer one
    generated instance (checked against it); refused otherwise, naming the
    line. With ``out`` the table is written there as ``score.csv``; with
    ``method`` too, one leaderboard row for that name (model ``external``,
    ``preset``'s length bands and fit rule for the task) as ``leaderboard.csv``,
    which ``compare`` and ``leaderboard`` read (``attrs["row"]`` holds it)."""
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
    return _scored(task, table, out, method, preset)


def _scored(task: str, table: pd.DataFrame, out: PathLike | None, method: str | None, preset: str,
            seed: int | None = None) -> pd.DataFrame:
    """A per-length score table (``score``'s, ``evaluate``'s: of evaluation seed ``seed`` when it has no
    ``eval_seed`` column) with its task; with ``out``, written there as ``score.csv``, and with ``method``
    too, as one leaderboard row (``leaderboard.csv``; ``attrs["row"]``)."""
    seeded = table if "eval_seed" in table else table.assign(eval_seed=seed)
    row = None if method is None else external_row(seeded, method, PRESETS[preset].evaluation_config(task))
    table.insert(0, "task", task)
    if out is not None:
        folder = ensure_output_dir(out, "--out")
        table.attrs["written"] = {"csv": write_csv(folder / "score.csv", table)}
        if row is not None:
            table.attrs["written"]["leaderboard"] = write_csv(folder / "leaderboard.csv", row)
    table.attrs["row"] = row
    return table


def _warn_missing_lengths(task: str, preset: str, table: pd.DataFrame, where: str) -> None:
    """Predictions of ``preset``'s instances (its samples and seed) that leave whole lengths out: say which, since
    every per-length and band score is then over the lengths present only."""
    lengths, samples, seed = _evaluation_settings(task, preset, None, None, None)
    ours = table[(table.n_instances == samples) & (table.eval_seed == seed)]
    missing = sorted(set(lengths) - set(ours.length))
    if len(ours) and set(ours.length) <= set(lengths) and missing:
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        log.warning("%s: predictions for %d of the %d lengths preset %s evaluates %s at; none for %s, so no score "
                    "there and every band score is over the lengths present only", where, len(ours), len(lengths),
                    preset, task, shown)


def load_predictions(path: PathLike) -> pd.DataFrame:
    """A run's saved predictions (``run(save_predictions=True)``:
    ``<results>/predictions/<run_id>.npz``), one row per evaluation instance:
    ``run_id``, ``method``, ``seed``, the instance's fields (``task``,
    ``length``, ``index``, ``input``, ``answer``, their ids, ...),
    ``prediction_ids`` and ``exact`` (every answer token predicted right)."""
    meta, lines = read_predictions(check_input_file(path, "predictions", MAX_PREDICTIONS_BYTES))
    frame = pd.DataFrame(lines)
    frame.insert(0, "run_id", meta["run_id"])
    frame.insert(1, "method", meta["method"])
    frame.insert(2, "seed", meta["seed"])
    frame["exact"] = [p == a for p, a in zip(frame.prediction_ids, frame.answer_ids)]
    return frame


def evaluate(model, task: str, lengths: Sequence[int] | None = None, *, samples: int | None = None,
             seed: int | None = None, preset: str = "quick", heads: int = 8, out: PathLike | None = None,
             method: str | None = None) -> pd.DataFrame:
    """Per-length metrics of ``model`` on ``task``'s evaluation instances
    (those of ``generate``, with the same defaults), by the harness's own
    evaluation: ``model`` is any callable from token ids ``(batch, tokens)``
    to logits ``(batch, tokens, vocabulary)`` (a plain ``nn.Module``; a
    Hugging Face causal LM, whose output's ``.logits`` is read), a folder a
    ``transformers`` model's ``save_pretrained`` wrote (loaded from local
    files only), or a lengthbench run's model (then its own positions are
    used, and the numbers are those of its record). ``heads`` only sizes the
    chunks. ``out`` and ``method`` write as ``score``'s do."""
    lengths, samples, seed = _evaluation_settings(task, preset, lengths, samples, seed)
    if isinstance(model, (str, os.PathLike)):
        model = load_saved_model(model).to(default_device())  # CUDA where there is one, as a run's model
    table = pd.DataFrame(evaluate_any(model, task, lengths, samples, seed, heads))
    return _scored(task, table, out, method, preset, seed)


def reproduce(study: str, results: PathLike, out: PathLike | None = None, preset: str | None = None) -> str:
    """The published-vs-ours report of a study (``STUDIES``: ``lengthbench
    list studies``) from the records in ``results`` (of ``preset``'s grid
    only, when given); written to ``out`` (default: ``results``) as
    ``reproduction.md``, whose path is the text's last line, beside
    ``reproduction.json`` (which study, which records, which preset: what a
    rebuild needs, as a view's folder name need not be the study's)."""
    entry = STUDIES[study]
    if entry.report is None:
        raise InputError(f"study {study!r} has no report: it tests no published claim (its board is the finding: "
                         f"lengthbench leaderboard --results {entry.records}); studies with a report: "
                         f"{', '.join(n for n, s in STUDIES.items() if s.report is not None)}")
    folder = Path(results)
    source = f"`lengthbench run --preset {entry.preset}`"
    if not folder.is_dir():
        raise InputError(f"--results {str(results)!r} is not a folder of run records; give the records of "
                         f"{source} (or {entry.records})")
    records = ResultsFolder(folder).records()
    if not records:
        raise InputError(f"--results {str(results)!r} holds no run records; run {source} first")
    records = of_preset(records, preset, results)
    view = PRESETS[preset or entry.preset]  # the grid whose cells the report expects
    if not set(view.tasks) & {r.task for r in records}:
        raise InputError(f"--results {str(results)!r} holds no record of the {study} report's tasks "
                         f"({', '.join(view.tasks)}); run {source} first")
    target = ensure_output_dir(out, "--out") if out else ensure_output_dir(folder, "--results")
    text = study_report(entry, records, view)
    rebuild = (f"lengthbench reproduce {study} --results {results}" + (f" --out {out}" if out else "")
               + (f" --preset {preset}" if preset else ""))
    write_json(target / "reproduction.json", {"paper": study, "records": os.path.relpath(folder, target),
                                              "preset": preset, "rebuild": rebuild})
    return text + f"wrote reproduction: {write_text(target / 'reproduction.md', text)}"


def study_names() -> list[str]:
    """Every registered study (``reproduce`` takes one)."""
    return STUDIES.names()


def studies_text() -> str:
    """Every study: its presets, the papers it tests, its report and where its reference records are."""
    return studies_listing()


def perf_configs() -> list[str]:
    """The model configurations ``perf`` can time."""
    return list(perf_bench.perf_configs())


def perf(configs: Sequence[str] = ("reference", "quick"), *, steps: int = 10,
         eval_lengths: Sequence[int] = (100, 500), bf16: bool = False,
         out: PathLike | None = "results/perf.json", methods: Sequence[str] = ()) -> str:
    """Training and evaluation speed on this machine (``benchmark/tools/perf.py``),
    as the printed table; the full report goes to ``out`` as JSON. ``methods``
    (``transformer/forget``, ``deltanet``, ...) are timed at quick's shapes
    against the rotary transformer."""
    if not configs:
        raise InputError(f"--configs: the list is empty; give some of {', '.join(perf_configs())}")
    for name in configs:
        if name not in perf_configs():
            raise UnknownNameError("perf configuration", name, perf_configs())
    for method in methods:
        family, encoding = method_parts(method)
        FAMILIES[family]
        if family_entry(family).takes_encoding != bool(encoding):
            raise InputError(f"--methods: {method!r}: " + (f"family {family!r} takes an encoding "
                             f"({family}/ENCODING)" if encoding == "" else f"family {family!r} takes no encoding"))
        if encoding:
            ENCODINGS[encoding]
    if out:
        ensure_output_dir(Path(out).parent, "--out (its folder)")
    report = perf_bench.measure(list(configs), steps, tuple(eval_lengths), bf16, methods=tuple(methods))
    text = perf_bench.format_report(report)
    return text + (f"\nwrote {write_json(out, report)}" if out else "")


def bench_generation(lengths: Sequence[int] = (40, 500), batch: int = 128,
                     tasks: Sequence[str] | None = None) -> Iterator[str]:
    """The batch-generation benchmark's table, a line at a time as measured."""
    if tasks is not None:
        if not tasks:
            raise InputError("--tasks: the list is empty; give task names, or leave it out for all")
        for name in tasks:
            TASKS[name]
    return generation_bench.table_lines(lengths, batch, tasks)


def presets_text(as_json: bool = False) -> str:
    """Every preset as a table, one line each (``lengthbench list
    presets``), or with ``as_json`` every setting as JSON (``--json``)."""
    if as_json:
        return "\n".join(json.dumps(p.describe(), indent=1, default=str) for p in PRESETS.values())
    rows = [("preset", "runs", "tasks", "methods", "seeds", "model", "lengths train/val/test", "steps", "about")]
    for preset in PRESETS.values():
        settings, model = preset.settings, preset.model
        steps = sorted(({s.get("steps", settings.get("steps")) for s in preset.task_settings.values()}
                        | {settings.get("steps")}) - {None}) or ["-"]
        rows.append((preset.name, str(len(grid_configs(preset))), str(len(preset.grid_tasks())),
                     str(len(preset.methods())), ",".join(map(str, preset.seeds)),
                     f"d{model.d_model}x{model.n_layers}",
                     f"{settings.get('train_length')}/{settings.get('validation_length') or '-'}/"
                     f"{settings.get('test_length')}",
                     "..".join(map(str, (steps[0], steps[-1]) if len(steps) > 1 else steps)), preset.description))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows)


def tasks_table() -> str:
    """Every registered task (installed packages' included, named after the table), as a markdown table."""
    load_entry_points()
    return listing.tasks_table() + _origins(TASKS.names())


def formats_table() -> str:
    """Every registered data format (installed packages' included, named after the table), as a markdown table."""
    load_entry_points()
    return listing.formats_table() + _origins(FORMATS.names())


def _origins(names) -> str:
    """The line naming the installed package each of ``names`` came from, if any did."""
    added = [f"`{name}` ({ORIGINS[name][1]})" for name in names if name in ORIGINS]
    return f"\n\nFrom installed packages: {', '.join(added)}." if added else ""


def encodings_text() -> str:
    """Every registered encoding (plugins installed as entry points included)."""
    load_entry_points()
    lines = []
    for name, entry in ENCODINGS.items():
        source = "" if entry.source == "built-in" else f"  [{entry.source}]"
        lines.append(f"{name:24s} {entry.description}  defaults={json.dumps(entry.defaults)}{source}")
    return "\n".join(lines)


def models_text() -> str:
    """Every model family (installed packages' included), the descriptions in one column."""
    load_entry_points()
    width = max(12, *(len(name) for name in FAMILIES.names()))
    return "\n".join(f"{name:{width}s} {entry.description}  ["
                     + (f"takes an encoding (method {name}/<encoding>)" if entry.takes_encoding else "no encoding")
                     + f"; shaped by {', '.join(entry.size_fields)}]"
                     + ("" if entry.source == "built-in" else f"  [{entry.source}]")
                     for name, entry in FAMILIES.items())
