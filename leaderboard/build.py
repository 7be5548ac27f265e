"""Records -> leaderboard.csv / .md / levels / plots / html: after a grid's
sitting (``board_of_sitting``, with its provenance), or from a folder of
records (``write_board``, a shipped reference's README beside it)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.config import Preset
from lengthbench.benchmark.files import ensure_output_dir, refuse_foreign_files
from lengthbench.benchmark.provenance import write_run_provenance
from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.benchmark.sitting import default_results, run_sitting
from lengthbench.leaderboard.aggregate import judged, leaderboard_frame
from lengthbench.leaderboard.external import with_external
from lengthbench.leaderboard.html import write_html
from lengthbench.leaderboard.plots import plot_accuracy_vs_length, plot_critical_difference, plot_heatmap
from lengthbench.leaderboard.ranking import board_ranking
from lengthbench.leaderboard.reference_notes import check_reference, write_reference_files
from lengthbench.leaderboard.schema import read_leaderboard
from lengthbench.leaderboard.tables import write_tables


def build_leaderboard(records: list[RunRecord], out_dir: Path, board=None):
    """Write the leaderboard files (each atomically); returns (board, {kind: path}).
    A grid in which no run finished (all n/a, errored or diverged) still gets
    its tables: rows with their status and no metrics. ``board``: the
    records' board with rows added (``external.with_external``), default
    the records' own."""
    board = leaderboard_frame(records) if board is None else board
    paths = write_tables(board, out_dir)
    if not board.empty:
        paths["heatmap"] = plot_heatmap(board, Path(out_dir) / "leaderboard_heatmap.png")
    ranking = board_ranking(board)
    diagram = Path(out_dir) / "critical_difference.png"
    if ranking is not None:
        paths["critical_difference"] = plot_critical_difference(ranking, diagram)
    else:  # too few tasks or methods to rank: a diagram left from another grid would describe that grid
        diagram.unlink(missing_ok=True)
    per_length = length_frame(records)
    curves = Path(out_dir) / "accuracy_vs_length.png"
    if not per_length.empty:
        unfit = board[(board.status == "ok") & ~judged(board)]
        paths["png"] = plot_accuracy_vs_length(per_length, curves, unfit=zip(unfit.task, unfit.method))
    else:  # no run finished: a figure left from another grid would describe that grid
        curves.unlink(missing_ok=True)
    paths["html"] = write_html(board, per_length, Path(out_dir) / "leaderboard.html",
                               f"lengthbench leaderboard: {Path(out_dir).resolve().name}")
    return board, paths


def board_with_external(records: list[RunRecord], external: Sequence[str | Path] = ()) -> pd.DataFrame:
    """The records' board, with the rows of each ``external`` leaderboard.csv (``score --method``) joined."""
    board = leaderboard_frame(records)
    for path in external:
        board = with_external(board, read_leaderboard(path), str(path))
    return board


# The files a board writes (and a reference's, beside them), each with what tells that lengthbench wrote it:
# a folder holding one of these names that it did not write is refused, never overwritten.
BOARD_FILES = {"leaderboard.csv": lambda text: text.startswith("schema_version,"),
               "leaderboard.md": lambda text: text.startswith("OOD "),
               "leaderboard.html": lambda text: "<title>lengthbench leaderboard" in text,
               "leaderboard_levels.csv": lambda text: not text.strip() or text.startswith("method,")}
REFERENCE_FILES = {"README.md": lambda text: text.startswith("# Reference: "),
                   "reference.json": lambda text: '"rebuild": "lengthbench leaderboard' in text}


def write_board(records: list[RunRecord], results: Path, out: str | Path, reference: bool = False,
                preset: str | None = None, external: Sequence[str | Path] = (),
                settings_source: str = "`benchmark/presets.py`") -> pd.DataFrame:
    """The board of ``records`` (read from ``results``), its files written to ``out``
    (``board.attrs["written"]``); with ``reference``, checked as a reference
    (``check_reference``) and given its README and ``reference.json``."""
    if reference:
        check_reference(records, results, external)
    refuse_foreign_files(Path(out), {**BOARD_FILES, **(REFERENCE_FILES if reference else {})})
    out = ensure_output_dir(out, "--out")
    board, paths = build_leaderboard(records, out, board_with_external(records, external))
    if reference:
        paths |= write_reference_files(records, board, results, out, preset, settings_source)
    board.attrs["written"] = paths
    return board


def with_outcome(board: pd.DataFrame, records: list[RunRecord], written: dict) -> pd.DataFrame:
    """``board`` with the files written and the runs that raised, as ``run`` and ``submit`` report them."""
    board.attrs["written"] = dict(written)
    board.attrs["runs"] = len(records)
    board.attrs["trained"] = sum(r.status != "not_applicable" for r in records)
    board.attrs["failed"] = [{"task": r.task, "method": r.method, "seed": r.seed, "error": r.error}
                             for r in records if r.status == "error"]
    return board


def board_of_sitting(grid: Preset, plugin_files: list, *, command: str, **options) -> pd.DataFrame:
    """Run a grid (``sitting.run_sitting``'s ``options``), then write its leaderboard files and provenance."""
    started = time.time()  # the runs that start after it are this invocation's (building the board takes a while)
    refuse_foreign_files(Path(options.get("out") or options.get("results") or default_results(grid)), BOARD_FILES,
                         "--out" if options.get("out") else "--results")  # before the grid trains, not after
    records, out, seconds = run_sitting(grid, plugin_files, command=command, **options)
    board, paths = build_leaderboard(records, out)
    paths["provenance"] = write_run_provenance(out, command, seconds, records, started=started)
    return with_outcome(board, records, paths)
