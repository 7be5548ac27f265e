"""What ``lengthbench submit`` prints and writes about a new encoding (or
model family): its
own artifact, ``submission-<name>.{csv,md,html}`` and
``submission-<name>.provenance.json``, beside (never over) the preset's
leaderboard files.

Ranks are the leaderboard's: within a task, by OOD exact match among the
judged cells, tied methods sharing the average of the ranks they span. Each
rank comes with the range its 95% interval allows: from 1 + the methods
whose interval lies wholly above the submission's, to the number of methods
less those wholly below it (with one seed there is no interval, so no range).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import ensure_output_dir, write_csv, write_text
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.provenance import write_provenance
from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.benchmark.sitting import checked_plugins, default_results, run_sitting
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.build import with_outcome
from lengthbench.leaderboard.aggregate import judged, level_summary
from lengthbench.leaderboard.reference_notes import shipped_records
from lengthbench.leaderboard.html import write_html
from lengthbench.leaderboard.tables import bands, markdown_cell, markdown_table
from lengthbench.models.families import FAMILIES, TRANSFORMER
from lengthbench.models.plugins import PluginFile, load_entry_points
from lengthbench.tasks.cells import method_name

log = logging.getLogger(__name__)


def submitted_method(name: str) -> str:
    """The leaderboard row of a submitted encoding (``transformer/<name>``) or model family (``<name>``)."""
    return name if name in FAMILIES else method_name(TRANSFORMER, name)


def rank_range(board: pd.DataFrame, task: str, method: str) -> tuple[int, int] | None:
    """The ranks the cell's 95% interval allows among the task's judged cells, or None (no interval)."""
    cells = board[(board.task == task) & judged(board)]
    mine = cells[cells.method == method]
    if mine.empty or math.isnan(mine.ood_exact_match_ci_low.iloc[0]):
        return None
    low, high = mine.ood_exact_match_ci_low.iloc[0], mine.ood_exact_match_ci_high.iloc[0]
    others = cells[cells.method != method]
    others_low = others.ood_exact_match_ci_low.fillna(others.ood_exact_match_mean)
    others_high = others.ood_exact_match_ci_high.fillna(others.ood_exact_match_mean)
    return 1 + int((others_low > high).sum()), len(cells) - int((others_high < low).sum())


def _rank_rows(board: pd.DataFrame, name: str) -> list[dict]:
    method = submitted_method(name)
    is_judged = judged(board)
    rows = []
    for k, row in board[board.method == method].iterrows():
        n_judged = int((is_judged & (board.task == row.task)).sum())
        span = rank_range(board, row.task, method)
        rows.append({"task": row.task, "status": row.status, "judged": bool(is_judged[k]), "rank": row["rank"],
                     "of": n_judged, "range": span, "ood": row.ood_exact_match_mean, "n_seeds": int(row.n_seeds),
                     "fit": row.fit_status})
    return rows


def ranking_text(board: pd.DataFrame, names: list[str]) -> str:
    """Rank of each submitted encoding per task (with its range) and overall:
    the mean rank of the leaderboard's levels table and the Friedman ranking,
    over the tasks that every method of the complete block ran and fit (a
    mean over each method's own judged tasks would reward failing hard ones)."""
    summary = level_summary(board)
    mean_rank = (summary.set_index("method")["mean_rank"].sort_values() if len(summary)
                 else pd.Series(dtype=float))
    n_tasks = int(summary.n_tasks.iloc[0]) if len(summary) else 0
    lines = []
    for name in names:
        method = submitted_method(name)
        lines.append(f"{name}: rank per task (1 = best OOD exact match; ties share the average rank):")
        for row in _rank_rows(board, name):
            if row["status"] != "ok" or not row["judged"]:
                why = {"not_applicable": "not applicable",
                       "ok": f"not judged: {row['fit'].replace('_', ' ')}"}.get(row["status"], row["status"])
                lines.append(f"  {row['task']:28s} -  ({why})")
                continue
            span = row["range"]
            lines.append(f"  {row['task']:28s} {row['rank']:g} of {row['of']}"
                         + (f" (95% range {span[0]}-{span[1]})" if span else " (one seed: no range)")
                         + f"  OOD exact match {100 * row['ood']:.1f}%, {row['n_seeds']} seed(s)")
        if method in mean_rank.index:
            overall = list(mean_rank.index).index(method) + 1
            lines.append(f"  overall: mean rank {mean_rank[method]:.2f} over the {n_tasks} task(s) every ranked method "
                         f"ran and fit (as in the levels table and the Friedman ranking), {overall} of "
                         f"{len(mean_rank)} methods")
        else:
            lines.append("  overall: no mean rank (a method is ranked overall only over the tasks that every ranked "
                         "method ran and fit; this one did not run or fit on all of them, or too few methods did)")
    return "\n".join(lines)


def submission_markdown(board: pd.DataFrame, name: str, preset: str) -> str:
    method = submitted_method(name)
    mine = board[board.method == method]
    seeds = sorted(set(mine.n_seeds.astype(int)))
    lines = [f"# Submission `{markdown_cell(name)}` on preset `{preset}`", "",
             f"Method `{markdown_cell(method)}` against the {board.method.nunique() - 1} other methods of the same "
             f"cells (the same settings and seeds: {', '.join(map(str, seeds))} seed(s) per cell). Length bands "
             f"(train / validation / test): {'; '.join(sorted({bands(r) for _, r in mine.iterrows()}))}. Ranks "
             "as in the leaderboard (1 = best OOD exact match among the cells that fit their training lengths; "
             "ties share the average rank); the range is what the 95% intervals allow.", ""]
    rows = []
    for row in _rank_rows(board, name):
        span = row["range"]
        rows.append([row["task"], row["status"].replace("_", " "),
                     "" if row["status"] != "ok" else f"{100 * row['ood']:.1f}",
                     "" if not row["judged"] else f"{row['rank']:g} of {row['of']}",
                     "" if not row["judged"] else (f"{span[0]}-{span[1]}" if span else "one seed"),
                     row["fit"].replace("_", " ")])
    lines += markdown_table(["task", "status", "OOD exact match %", "rank", "95% rank range", "fit"], rows)
    return "\n".join(lines + ["", ranking_text(board, [name])]) + "\n"


def write_submission(board: pd.DataFrame, per_length: pd.DataFrame, name: str, preset: str, out_dir: Path,
                     command: str, seconds: float, records: list[RunRecord]) -> dict[str, Path]:
    """The submission's own files; the preset's ``leaderboard.*`` and
    ``provenance.json`` in ``out_dir`` are left as they were. The CSV holds the
    submitted method's rows (leaderboard schema, so ``compare`` reads it);
    the page shows the whole board the ranks come from."""
    out_dir, stem = Path(out_dir), f"submission-{name}"
    method = submitted_method(name)
    return {
        f"submission csv {name}": write_csv(out_dir / f"{stem}.csv", board[board.method == method]),
        f"submission md {name}": write_text(out_dir / f"{stem}.md", submission_markdown(board, name, preset)),
        f"submission html {name}": write_html(board, per_length, out_dir / f"{stem}.html",
                                              f"lengthbench submission: {name} on {preset}", submitted=[method]),
        f"submission provenance {name}": write_provenance(out_dir, command, seconds, records,
                                                          name=f"{stem}.provenance.json"),
    }


def submit_file(path: str | Path, preset: str, *, name: str | None = None, tasks: Sequence[str] | None = None,
                seeds: Sequence[int] | None = None, formats: Sequence[str] | None = None,
                results: str | Path | None = None, command: str, **options) -> pd.DataFrame:
    """Check the encoding or family file ``path`` at ``preset``'s shapes, run its cells beside the preset's
    built-in ones (taken from the shipped reference where it has them), write the submission's files and rank
    it; ``options`` are ``sitting.run_sitting``'s. The board carries ``attrs["reports"]`` and
    ``attrs["ranking"]``."""
    grid = PRESETS[preset]
    load_entry_points()
    plugins = [PluginFile(str(path), name)]
    names, reports = checked_plugins(plugins, grid)
    families = [n for n in names if n in FAMILIES]
    encodings = [n for n in names if n not in FAMILIES]
    grid = grid.with_grid(tasks=tasks, encodings=[e for e in grid.encodings if e not in encodings] + encodings,
                          seeds=seeds, families=[f for f in grid.families if f not in families] + families,
                          formats=formats)
    results = results or default_results(grid)
    reuse_shipped(grid, preset, results)
    records, out, seconds = run_sitting(grid, plugins, results=results, force=False, **options)
    board = with_outcome(leaderboard_frame(records), records, {})
    per_length = length_frame(records)
    for encoding in names:
        board.attrs["written"] |= write_submission(board, per_length, encoding, preset, out, command, seconds,
                                                   records)
    board.attrs["reports"] = reports
    board.attrs["ranking"] = ranking_text(board, names)
    return board


def reuse_shipped(grid, preset: str, results: str | Path) -> None:
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
