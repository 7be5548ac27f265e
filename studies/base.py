"""The study contract: what one study brings, and the registry that holds them.

A study is a question the benchmark answers with a grid: a paper's claims
(``chomsky``, ``nope``, ...) or a reference of ours (``horizon``, ``zoo``).
Its module registers its presets (``benchmark.presets.register_preset``) and
one ``Study``: the presets, the published claims' sources, the paper's own
protocol (set beside ours in the report), the report function and where its
reference records are shipped. ``lengthbench list studies`` and ``lengthbench
reproduce STUDY`` read ``STUDIES`` and nothing else, so adding a study is one
module and its registration (``register_study``), here or in a plugin file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lengthbench.benchmark.config import Preset
from lengthbench.benchmark.files import ensure_output_dir, refuse_foreign_files, write_json, write_text
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.reading import of_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.core.errors import InputError
from lengthbench.core.entry_points import discover_plugins
from lengthbench.core.registry import Registry, name_problem
from lengthbench.tasks.cells import cell_name



@dataclass(frozen=True)
class Study:
    """``presets``: its grids, the first the one its report reads unless told
    another (``reproduce --preset``); ``sources``: the papers it tests, cited;
    ``protocol``: their horizon and budget, for the report's horizon line;
    ``report``: records -> the published-vs-ours markdown (``None`` for a
    reference with no published claim to test); ``records``: the shipped
    records its report is built from, a path in a clone."""

    name: str
    about: str
    presets: tuple[str, ...]
    records: str
    sources: tuple[str, ...] = ()
    protocol: str = ""
    report: Callable[[list[RunRecord]], str] | None = None
    rank: float | None = None  # its place in `list studies` (None: after the ranked, as registered)

    @property
    def preset(self) -> str:
        """The preset whose cells the report expects by default."""
        return self.presets[0]


STUDIES: Registry[Study] = Registry("study", rank=lambda study: study.rank, discover=discover_plugins)


def register_study(study: Study) -> Study:
    """Add a study (``lengthbench reproduce NAME`` then reads it); its presets must be registered first."""
    problem = name_problem(study.name)
    if problem:
        raise InputError(f"study name {problem}")
    if not study.presets:
        raise InputError(f"study {study.name!r} names no preset; give the grid its report reads")
    for preset in study.presets:
        PRESETS[preset]  # an unknown preset is refused with the valid choices
    return STUDIES.add(study.name, study)


def settings_source(preset: str | None) -> str:
    """Where a preset's settings are written, for a reference's README: its study's module, or the core presets."""
    study = next((s for s in STUDIES.values() if preset in s.presets), None)
    if study is None:
        return "`benchmark/presets.py`"
    built_in = (Path(__file__).parent / f"{study.name}.py").exists()
    return f"`studies/{study.name}.py`" if built_in else f"the module of study `{study.name}`"


def study_report(study: Study, records: list[RunRecord], view: Preset) -> str:
    """``study``'s report of ``records``, its empty rows named: the cells of ``view`` (the grid the report
    expects) that have no record are said in the report itself, so that no reader takes a missing run for a
    result."""
    text = study.report(records)
    cells = {(c.task, c.method) for c in grid_configs(view)}
    missing = sorted(cells - {(r.task, r.method) for r in records})
    if missing:
        shown = ", ".join(cell_name(t, m) for t, m in missing[:4]) + (", ..." if len(missing) > 4 else "")
        text += (f"Missing: {len(missing)} of the {len(cells)} cells of `{view.name}` have no record here ({shown}); "
                 "their rows are empty and no verdict rests on them.\n\n")
    return text


def reproduce_study(name: str, results: str | Path, out: str | Path | None = None, preset: str | None = None) -> str:
    """Study ``name``'s report of the records in ``results`` (of ``preset``'s grid only, when given), written to
    ``out`` (default: ``results``) as ``reproduction.md`` beside ``reproduction.json`` (which study, which records,
    which preset: what a rebuild needs); returns the text, its path on the last line."""
    study = STUDIES[name]
    if study.report is None:
        raise InputError(f"study {name!r} has no report: it tests no published claim (its board is the finding: "
                         f"lengthbench leaderboard --results {study.records}); studies with a report: "
                         f"{', '.join(n for n, s in STUDIES.items() if s.report is not None)}")
    folder = Path(results)
    target = Path(out) if out else folder
    refuse_foreign_files(target, {"reproduction.json": lambda text: '"rebuild": "lengthbench reproduce' in text,
                                  "reproduction.md": lambda text: (target / "reproduction.json").is_file()},
                         "--out" if out else "--results")
    source = f"`lengthbench run --preset {study.preset}`"
    if not folder.is_dir():
        raise InputError(f"--results {str(results)!r} is not a folder of run records; give the records of "
                         f"{source} (or {study.records})")
    records = ResultsFolder(folder).records()
    if not records:
        raise InputError(f"--results {str(results)!r} holds no run records; run {source} first")
    records = of_preset(records, preset, results)
    view = PRESETS[preset or study.preset]  # the grid whose cells the report expects
    if not set(view.tasks) & {r.task for r in records}:
        raise InputError(f"--results {str(results)!r} holds no record of the {name} report's tasks "
                         f"({', '.join(view.tasks)}); run {source} first")
    text = study_report(study, records, view)  # a report that refuses leaves no folder behind
    target = ensure_output_dir(out, "--out") if out else ensure_output_dir(folder, "--results")
    rebuild = (f"lengthbench reproduce {name} --results {results}" + (f" --out {out}" if out else "")
               + (f" --preset {preset}" if preset else ""))
    write_json(target / "reproduction.json", {"paper": name, "records": os.path.relpath(folder, target),
                                              "preset": preset, "rebuild": rebuild})
    return text + f"wrote reproduction: {write_text(target / 'reproduction.md', text)}"


def studies_listing(as_json: bool = False) -> str:
    """Every study: its presets, the papers it tests, its report and where its reference records are (with
    ``as_json``, one JSON object per study, blank lines between)."""
    if as_json:
        return "\n\n".join(json.dumps({"name": name, "about": study.about, "presets": list(study.presets),
                                        "sources": list(study.sources), "protocol": study.protocol,
                                        "report": study.report is not None, "records": study.records}, indent=1)
                            for name, study in STUDIES.items())
    lines = []
    for name, study in STUDIES.items():
        lines += [f"{name}: {study.about}",
                  f"    presets: {', '.join(study.presets)}; report: "
                  + (f"lengthbench reproduce {name}" if study.report else "none (no published claim: the board)")
                  + f"; reference records: {study.records}"]
        lines += [f"    source: {source}" for source in study.sources]
    return "\n".join(lines)
