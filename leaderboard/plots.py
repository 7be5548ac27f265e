"""Figures. Every figure colours a method the same way.

Figures are drawn on ``matplotlib.figure.Figure`` objects and saved as files,
never through ``pyplot``, so importing lengthbench leaves a notebook's
backend and open figures alone. matplotlib itself is imported on first use
(about a second of start-up that commands drawing nothing never pay).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from lengthbench.benchmark.files import save_figure
from lengthbench.leaderboard.aggregate import judged, method_order
from lengthbench.models.encodings import ENCODINGS
from lengthbench.tasks.base import LEVELS
from lengthbench.tasks.cells import method_parts
from lengthbench.tasks.formats import task_order_key

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SAVE_DPI = 110


def _pairs(palette: str, starts) -> list[tuple[tuple, tuple]]:
    import matplotlib

    colors = matplotlib.colormaps[palette].colors
    return [(colors[i], colors[i + 1]) for i in starts]


@functools.cache
def hue_pairs() -> list[tuple[tuple, tuple]]:
    """(dark, light) shades of one hue per built-in base encoding, in registry order: tab20's ten
    pairs, then three of tab20b's (hues tab20 lacks); a randomized variant takes the light shade.
    Past these, each further base encoding gets a hue of its own (``_hue_pair``)."""
    return _pairs("tab20", range(0, 20, 2)) + _pairs("tab20b", (0, 8, 12))


@functools.cache
def _other_colors() -> tuple:
    """Plugin encodings' and families' colours, picked by a hash of the name."""
    import matplotlib

    return matplotlib.colormaps["Dark2"].colors
# A dark tone per built-in family; a family added later without one gets a colour from its name.
FAMILY_COLORS = {"transformer": "black", "rnn": "0.45", "lstm": "saddlebrown", "stack-rnn": "darkolivegreen",
                 "tape-rnn": "indigo", "ssm": "darkred"}


def _hue_pair(index: int) -> tuple[tuple, tuple]:
    """The (dark, light) shades of the index-th base encoding's hue: the
    palette's pairs, then hues spaced by the golden angle (distinct from each
    other for any number of encodings)."""
    from matplotlib.colors import hsv_to_rgb

    pairs = hue_pairs()
    if index < len(pairs):
        return pairs[index]
    hue = (0.11 + 0.618034 * (index - len(pairs))) % 1.0
    return (hsv_to_rgb((hue, 0.85, 0.65)), hsv_to_rgb((hue, 0.4, 0.95)))


def _hashed(name: str) -> tuple:
    """A colour that depends on the name alone (never on which other names are drawn)."""
    colors = _other_colors()
    return colors[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(colors)]


def encoding_color(name: str) -> tuple:
    """The colour of an encoding in every figure and page, whatever else is
    drawn: a built-in base encoding's hue (dark shade), its ``randomized-``
    variant the light shade of that hue; any other encoding a colour from its name."""
    entry = ENCODINGS.get(name)
    base = entry.base if entry is not None and entry.base is not None else name
    built_in = [n for n, e in ENCODINGS.items() if e.base is None and e.source == "built-in"]
    if base in built_in:
        return tuple(_hue_pair(built_in.index(base))[name != base])
    return _hashed(name)


def method_color(name: str) -> tuple:
    """The colour of a leaderboard method: its encoding's for a transformer
    method, a fixed dark tone per built-in family, else a colour from its name."""
    family, encoding = method_parts(name)
    if encoding:
        return encoding_color(encoding)
    return FAMILY_COLORS.get(family) or _hashed(name)


def method_colors(names) -> dict[str, tuple]:
    return {name: method_color(name) for name in names}


LEGEND_COLUMN_INCHES = 2.6  # room for a long method name (transformer/randomized-kerple-power)
LEGEND_ROW_INCHES = 0.24
TITLE_INCHES = 0.35  # a band above the panels for the figure's title, so no panel title runs into it


BAND_COLORS = {"val": ("validation", "tab:orange", 0.10), "ood": ("test", "tab:blue", 0.07)}


def _shade_bands(ax, rows: pd.DataFrame) -> list[str]:
    """Shade the validation and test bands of one panel; returns the bands shaded."""
    shaded = []
    if "split" not in rows:
        return shaded
    for split, (name, color, alpha) in BAND_COLORS.items():
        lengths = rows.length[rows.split == split]
        if len(lengths):
            ax.axvspan(lengths.min() - 0.5, lengths.max() + 0.5, color=color, alpha=alpha, lw=0, zorder=0)
            shaded.append(f"{name} ({color.removeprefix('tab:')})")
    return shaded


def accuracy_vs_length_figure(per_length: pd.DataFrame, metric: str = "exact_match", unfit=()):
    """One panel per task, one line per method (mean over seeds, the seed
    range shaded where a cell has two seeds or more), dotted for a cell that
    did not fit its training lengths (``unfit``: its (task, method) pairs;
    never read as a failure to generalize), a dashed vertical line at
    L_train and the validation and test bands shaded; the legend sits in a
    band reserved below the panels, as tall as its rows need, so it stays
    inside the image for any number of tasks and methods."""
    unfit = set(unfit)
    tasks = sorted(dict.fromkeys(per_length["task"]), key=task_order_key)
    methods = method_order(per_length["method"].unique())
    cols = min(4, max(1, len(tasks)))
    rows = -(-len(tasks) // cols)
    width = max(7.5, 4.2 * cols)
    legend_columns = max(1, min(len(methods), int(width // LEGEND_COLUMN_INCHES)))
    legend_height = LEGEND_ROW_INCHES * -(-len(methods) // legend_columns) + 0.2
    height = TITLE_INCHES + 3.2 * rows + 0.6 + legend_height
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    colors = method_colors(methods)
    bands, dotted, seed_ranges = [], False, False
    for ax, task in zip(axes.flat, tasks):
        sub = per_length[per_length.task == task]
        for method in method_order(sub["method"].unique()):
            cell = sub[sub.method == method]
            curve = cell.groupby("length")[metric].agg(["mean", "min", "max"])
            not_fit = (task, method) in unfit
            dotted |= not_fit
            ax.plot(curve.index, curve["mean"], label=method, color=colors[method], lw=1.6,
                    ls=":" if not_fit else "-", alpha=0.6 if not_fit else 1.0)
            if cell["seed"].nunique() > 1:
                seed_ranges = True
                ax.fill_between(curve.index, curve["min"], curve["max"], color=colors[method], alpha=0.15)
        bands = _shade_bands(ax, sub) or bands
        ax.axvline(sub["train_length"].iloc[0], color="0.3", ls="--", lw=1)
        ax.set_title(task)
        ax.set_xlabel("task length")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(metric.replace("_", " "))
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend([handles[m] for m in methods if m in handles], [m for m in methods if m in handles],
               loc="lower center", ncol=legend_columns, frameon=False,
               bbox_to_anchor=(0.5, 0.0), fontsize=9)
    keys = ["dashed: L_train"] + ([f"bands: {', '.join(bands)}"] if bands else [])
    keys += ["dotted: did not fit its training lengths"] if dotted else []
    keys += ["shaded: seed range"] if seed_ranges else []
    fig.suptitle(f"{metric.replace('_', ' ')} vs length ({'; '.join(keys)})",
                 fontsize=10, y=1 - 0.08 / height, va="top")
    fig.tight_layout(rect=(0, legend_height / height, 1, 1 - TITLE_INCHES / height))  # panels below the title band
    return fig


def plot_accuracy_vs_length(per_length: pd.DataFrame, path: Path, metric: str = "exact_match", unfit=()) -> Path:
    return save_figure(accuracy_vs_length_figure(per_length, metric, unfit), path, dpi=SAVE_DPI)


def plot_heatmap(board: pd.DataFrame, path: Path, metric: str = "ood_exact_match_mean") -> Path:
    return save_figure(heatmap_figure(board, metric), path, dpi=SAVE_DPI)


def heatmap_figure(board: pd.DataFrame, metric: str = "ood_exact_match_mean") -> Figure:
    """Tasks (columns, grouped by Chomsky level / family) x methods (rows);
    n/a cells hatched grey, failed cells marked with an x, cells that lost
    seeds (failed, counted as 0, or errors) with a dagger, cells that did not
    fit their training lengths (``aggregate.judged``) with "nf" and a dotted
    frame."""
    tasks = sorted(dict.fromkeys(board["task"]),
                   key=lambda t: LEVELS.index(board[board.task == t]["level"].iloc[0])
                   if board[board.task == t]["level"].iloc[0] in LEVELS else len(LEVELS))
    methods = method_order(board["method"].unique())
    grid = np.full((len(methods), len(tasks)), np.nan)
    status, lost, unfit = {}, {}, {}
    is_judged = judged(board)
    for k, row in board.iterrows():
        i, j = methods.index(row.method), tasks.index(row.task)
        grid[i, j] = row[metric]
        status[i, j] = row.status
        lost[i, j] = row.n_failed + row.n_errors > 0
        unfit[i, j] = row.status == "ok" and not is_judged[k]
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(max(6.0, 2.5 + 0.8 * len(tasks)), 1.8 + 0.42 * len(methods)))
    ax = fig.subplots()
    grid = 100 * grid  # cells and colour bar in percent
    image = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto")
    for (i, j), st in status.items():
        if st == "not_applicable":
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85", hatch="//", edgecolor="0.6"))
            ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="0.3")
        elif st != "ok":
            ax.text(j, i, "x", ha="center", va="center", fontsize=9, color="red")
        else:
            if unfit[i, j]:
                ax.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, linestyle=":", edgecolor="red"))
            ax.text(j, i, f"{grid[i, j]:.0f}" + ("†" if lost[i, j] else "") + (" nf" if unfit[i, j] else ""),
                    ha="center", va="center", fontsize=7, color="white" if grid[i, j] < 60 else "black")
    ax.set_xticks(range(len(tasks)), tasks, rotation=50, ha="right", fontsize=8)
    ax.set_yticks(range(len(methods)), methods, fontsize=8)
    levels = [board[board.task == t]["level"].iloc[0] for t in tasks]
    for j in range(1, len(tasks)):
        if levels[j] != levels[j - 1]:
            ax.axvline(j - 0.5, color="white", lw=2.5)
    for level in dict.fromkeys(levels):
        cols = [j for j, lv in enumerate(levels) if lv == level]
        label = {"arithmetic": "arith.", "sequence": "seq."}.get(level, level) if len(cols) == 1 else level
        ax.text((cols[0] + cols[-1]) / 2, -0.7, label, ha="center", va="bottom", fontsize=7, weight="bold")
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label=f"{metric.replace('_', ' ')} (%)")
    ax.set_title(f"{metric.replace('_', ' ')} (%), tasks grouped by level\n† lost seeds; nf: did not fit "
                 "(not judged)", pad=16, fontsize=9)
    fig.tight_layout()
    return fig


def plot_critical_difference(ranking, path: Path) -> Path:
    return save_figure(critical_difference_figure(ranking), path, dpi=SAVE_DPI, bbox_inches="tight")


def critical_difference_figure(ranking) -> Figure:
    """Demšar's critical-difference diagram: methods on the average-rank axis
    (1 = best, at the left), a bar the length of the Nemenyi critical
    difference, and a thick line joining each group the test does not tell
    apart. The rank axis widens with the number of methods, so that its
    tick labels never touch, and the label rows start below the last group line."""
    names, ranks = list(ranking.average_ranks.index), ranking.average_ranks.to_numpy()
    k = len(names)
    half = -(-k // 2)
    groups = ranking.groups()
    group_top, group_step = 0.35, 0.18  # the first group line's depth below the axis, and the spacing of the rest
    first_row = max(1.0, group_top + group_step * len(groups) + 0.3)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5 + 0.3 * max(0, k - 10), 1.6 + 0.28 * (half + first_row - 1)))
    ax = fig.subplots()
    low, high = 1, max(2, k)
    ax.set_xlim(low - 0.3, high + 0.3)
    ax.set_ylim(-(half + first_row + 0.2), 1.6)
    ax.hlines(0, low, high, color="black", lw=1)
    for tick in range(low, high + 1):
        ax.vlines(tick, 0, 0.15, color="black", lw=1)
        ax.text(tick, 0.3, str(tick), ha="center", va="bottom", fontsize=8)
    ax.hlines(1.2, low, low + ranking.critical_difference, color="black", lw=1.5)
    ax.text(low + ranking.critical_difference / 2, 1.3, f"CD = {ranking.critical_difference:.2f}", ha="center",
            va="bottom", fontsize=8)
    for i, (name, rank) in enumerate(zip(names, ranks)):
        left = i < half
        row = -(i if left else k - 1 - i) - first_row
        end = low - 0.2 if left else high + 0.2
        ax.plot([rank, rank, end], [0, row, row], color="0.3", lw=0.8)
        ax.text(end, row, f"{name} ({rank:.2f})", ha="right" if left else "left", va="center", fontsize=8,
                clip_on=False)
    for depth, group in enumerate(groups):
        members = [ranks[names.index(m)] for m in group]
        ax.hlines(-group_top - group_step * depth, min(members) - 0.03, max(members) + 0.03, color="black", lw=3)
    ax.axis("off")
    ax.set_title(f"average rank over {ranking.n_tasks} tasks (Friedman chi-square p = {ranking.chi2_p_value:.2g}; "
                 f"joined: not different at alpha 0.05, Nemenyi"
                 + ("; no pair separated: descriptive" if not ranking.separated_pairs() else "") + ")", fontsize=9)
    fig.tight_layout()
    return fig
