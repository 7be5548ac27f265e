"""``lengthbench leaderboard``: records -> leaderboard.csv / .md / levels / plots / html."""

from __future__ import annotations

from pathlib import Path

from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.leaderboard.aggregate import judged, leaderboard_frame
from lengthbench.leaderboard.html import write_html
from lengthbench.leaderboard.plots import plot_accuracy_vs_length, plot_critical_difference, plot_heatmap
from lengthbench.leaderboard.ranking import board_ranking
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
