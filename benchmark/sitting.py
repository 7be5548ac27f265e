"""One sitting of a preset's grid: narrowed to what was asked, its plugins
checked, priced (``plan_text``) or run (``run_sitting``).

``run`` and ``submit`` of the Python API and ``--plan`` all start here, so a
grid is validated the same way whoever asks: every axis by name, every
``--set`` setting by name, type and range, every encoding file through its
contract at the grid's shapes, and a setting chosen on the validation band
(``select``) never also fixed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from lengthbench.benchmark.config import Preset, parse_setting
from lengthbench.benchmark.files import ensure_output_dir
from lengthbench.benchmark.grid import EXECUTORS, GridInterrupted, grid_configs, resolve_workers, run_grid
from lengthbench.benchmark.plan import check_fits, estimate, format_plan
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.provenance import write_sitting_provenance
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.selection import SelectionGrid, run_selection
from lengthbench.benchmark.store import SELECTION_FOLDER
from lengthbench.benchmark.versions import check_unchanged
from lengthbench.core.errors import InputError
from lengthbench.models.contract import CheckShape, ContractReport
from lengthbench.models.saved_model import check_saves_models
from lengthbench.models.plugins import (
    PluginFile,
    check_names,
    check_plugins,
    contract_failure,
    load_entry_points,
    package_failure,
    packaged,
)

PathLike = str | Path


def narrowed_grid(preset: str, tasks=None, encodings=None, models=None, seeds=None,
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
    checked_plugins(plugin_files, grid)
    narrowed = grid.with_grid(tasks, encodings, seeds, models, formats)
    installed = packaged((*narrowed.encodings, *narrowed.families))
    if installed:  # an installed package's encodings and families pass the contract a plugin file's do
        reports = check_names(installed, check_shapes([narrowed]))
        if not all(r.passed for r in reports):
            raise package_failure(reports)
    return narrowed, plugin_files


def selection_for(grid: Preset, select: str | None, settings: Mapping | None) -> SelectionGrid | None:
    """The setting chosen on the validation band (``select``, else the preset's own), refused when ``settings``
    also fixes it: a setting is chosen or fixed, not both."""
    text = select if select is not None else (grid.select or None)
    selection = SelectionGrid.parse(text) if text is not None else None
    if selection is not None and selection.field in (settings or {}):
        whose = f"--select {text}" if select is not None else f"preset {grid.name!r} selects {text}"
        raise InputError(f"{selection.field} is both fixed (--set {selection.field}={settings[selection.field]:g}) "
                         f"and chosen on the validation band ({whose}); drop one")
    return selection


def default_results(grid: Preset) -> str:
    """``results/<preset>``, or with overridden settings
    ``results/<preset>-<key><value>...``: records of other settings never
    share the preset's folder (its leaderboard would mix two protocols)."""
    given = PRESETS[grid.name].overrides if grid.name in PRESETS else {}
    extra = {k: v for k, v in grid.overrides.items() if given.get(k) != v}
    return f"results/{grid.name}" + "".join(f"-{k}{v:g}" for k, v in sorted(extra.items()))


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


def checked_plugins(plugin_files: list[PluginFile], grid: Preset) -> tuple[list[str], list[ContractReport]]:
    """Load and contract-check encoding files the same way for every caller,
    at the shapes of the grid they will run in; raises a ``PluginError``
    (naming each failed check) if any encoding fails."""
    names, reports = check_plugins(plugin_files, check_shapes([grid]))
    if not all(r.passed for r in reports):
        raise contract_failure(plugin_files, reports)
    return names, reports


def plan_text(grid: Preset, choice: SelectionGrid | None, select: str | None, results: PathLike | None,
              workers: int, force: bool, save_models: bool = False) -> str:
    """What running ``grid`` (once per value of ``choice``) would cost here, as text; trains and writes nothing.
    With ``save_models``, refused as ``run --save-models`` refuses it."""
    if save_models:
        check_saves_models(grid_configs(grid))
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


def run_sitting(grid: Preset, plugin_files: list, *, results: PathLike | None, out: PathLike | None, force: bool,
                workers: int, executor: str, address: str | None, checkpoint_every: float,
                progress: bool, save_predictions: bool = False, selection: SelectionGrid | None = None,
                command: str | None = None, live_log: str | None = None, save_models: bool = False) -> tuple[list[RunRecord], Path, float]:
    """Run a validated grid (once per value of ``selection``, keeping the
    chosen records); returns its records, the output folder and the wall time.
    Everything that can be refused is refused before the first run. With
    ``command``, an interrupted grid leaves that sitting's provenance in
    ``out`` before it re-raises."""
    configs = grid_configs(grid)
    check_unchanged(configs)  # every name and setting resolves, and no source drifted, before any run
    check_fits(configs)
    unseen = sorted({c.task for c in configs if c.fit_unseen})
    if save_predictions and unseen:
        raise InputError(f"save_predictions cannot be kept for cells that judge their fit on unseen inputs "
                         f"(fit_unseen: {', '.join(unseen)}): their examples are chosen per run; run without "
                         "--save-predictions")
    if save_models:
        check_saves_models(configs)
    EXECUTORS[executor].check()
    results = ensure_output_dir(results or default_results(grid), "--results")
    out = ensure_output_dir(out, "--out") if out else results
    start = time.perf_counter()
    options = dict(force=force, workers=resolve_workers(workers), plugins=tuple(plugin_files),
                   checkpoint_every=checkpoint_every, executor=executor, address=address, progress=progress,
                   save_predictions=save_predictions, live_log=live_log, save_models=save_models)
    try:
        records = (run_selection(grid, selection, results, **options) if selection is not None
                   else run_grid(grid, results, **options))
    except GridInterrupted as stop:
        if command is not None:
            write_sitting_provenance(out, command, time.perf_counter() - start, stop)
        raise
    return records, out, time.perf_counter() - start
