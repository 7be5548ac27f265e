"""``lengthbench compare A.csv B.csv``: per-cell differences B - A.

The significance test works from the CSVs alone: Welch's unequal-variance
t-test on the per-seed OOD means (mean, sample std and number of seeds of
each side), two-sided, with a Welch-Satterthwaite 95% CI of the delta. One
comparison tests every cell at once, so the p-values are corrected for
multiple comparisons (Benjamini-Hochberg by default; ``--correction``). A
cell is "improved"/"worse" when its corrected p < alpha; "unchanged"
otherwise; cells with fewer than two seeds on a side cannot be tested and
count as "untested".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from lengthbench.benchmark.files import save_figure, write_csv, write_text
from lengthbench.errors import InputError
from lengthbench.leaderboard.aggregate import method_order
from lengthbench.leaderboard.plots import SAVE_DPI, method_colors
from lengthbench.leaderboard.schema import KEY
from lengthbench.leaderboard.statistics import CORRECTIONS, DEFAULT_CORRECTION, adjust_p_values, welch
from lengthbench.leaderboard.tables import markdown_table

ALPHA = 0.05
METRICS = ("exact_match", "token_accuracy")
COLUMNS = ["task", "method", "metric", "mean_a", "mean_b", "n_a", "n_b", "delta", "se", "df", "t",
           "p_value", "p_adjusted", "correction", "ci_low", "ci_high", "verdict", "note"]
VERDICTS = ("improved", "worse", "unchanged", "untested", "only_in_a", "only_in_b")


def compare_frames(a: pd.DataFrame, b: pd.DataFrame, metric: str = "exact_match",
                   alpha: float = ALPHA, correction: str = DEFAULT_CORRECTION) -> pd.DataFrame:
    """One row per (task, method) present in either table; ``p_adjusted`` is
    the p-value after ``correction`` over all tested cells, and decides the verdict."""
    if correction not in CORRECTIONS:
        raise InputError(f"correction {correction!r} is not known; valid: {', '.join(CORRECTIONS)}")
    col = f"ood_{metric}"
    merged = a.merge(b, on=list(KEY), how="outer", suffixes=("_a", "_b"), indicator=True)
    rows = []
    for _, r in merged.iterrows():
        row = {"task": r.task, "method": r.method, "metric": metric, "correction": correction}
        if r._merge != "both":
            row["verdict"] = "only_in_a" if r._merge == "left_only" else "only_in_b"
        elif r.status_a != "ok" or r.status_b != "ok":
            row.update(verdict="untested", note=f"status {r.status_a} -> {r.status_b}")
        else:
            row.update(mean_a=r[f"{col}_mean_a"], mean_b=r[f"{col}_mean_b"], n_a=int(r.n_seeds_a),
                       n_b=int(r.n_seeds_b),
                       **welch(r[f"{col}_mean_a"], r[f"{col}_std_a"], int(r.n_seeds_a),
                               r[f"{col}_mean_b"], r[f"{col}_std_b"], int(r.n_seeds_b)))
        rows.append(row)
    diff = pd.DataFrame(rows).reindex(columns=COLUMNS)
    diff["verdict"] = diff.verdict.astype(object)
    diff["p_adjusted"] = adjust_p_values(diff.p_value.to_numpy(dtype=float), correction)
    significant = diff.p_adjusted < alpha
    tested = diff.verdict.isna()
    diff.loc[tested, "verdict"] = np.select(
        [diff.p_adjusted[tested].isna(), significant[tested] & (diff.delta[tested] > 0),
         significant[tested] & (diff.delta[tested] < 0)], ["untested", "improved", "worse"], "unchanged")
    return diff


def summary_counts(diff: pd.DataFrame) -> dict[str, int]:
    return {v: int((diff.verdict == v).sum()) for v in VERDICTS}


def to_markdown(diff: pd.DataFrame, name_a: str, name_b: str) -> str:
    counts = summary_counts(diff)
    lines = [f"# {name_b} vs {name_a}", "",
             f"Delta = B - A of OOD {diff.metric.iloc[0].replace('_', ' ')} (percentage points); "
             f"Welch's t-test from per-seed mean, std and n; alpha = {ALPHA} on p corrected for "
             f"{int(diff.p_value.notna().sum())} tested cells: {CORRECTIONS[diff.correction.iloc[0]]}.", "",
             "Summary: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()), ""]
    rows = []
    for _, r in diff.iterrows():
        def pp(x):
            return "" if pd.isna(x) else f"{100 * x:+.1f}"
        ci = "" if pd.isna(r.ci_low) else f"[{pp(r.ci_low)}, {pp(r.ci_high)}]"
        rows.append([r.task, f"`{r.method}`", "" if pd.isna(r.mean_a) else f"{100 * r.mean_a:.1f}",
                     "" if pd.isna(r.mean_b) else f"{100 * r.mean_b:.1f}", pp(r.delta), ci,
                     "" if pd.isna(r.p_value) else f"{r.p_value:.3g}",
                     "" if pd.isna(r.p_adjusted) else f"{r.p_adjusted:.3g}", r.verdict])
    lines += markdown_table(["task", "method", "A %", "B %", "delta", "95% CI", "p", "p corrected", "verdict"], rows)
    return "\n".join(lines) + "\n"


def plot_compare(diff: pd.DataFrame, path: Path) -> Path:
    return save_figure(compare_figure(diff), path, dpi=SAVE_DPI)


def compare_figure(diff: pd.DataFrame) -> Figure:
    """Each tested cell's delta with its 95% CI, one row per cell; the figure
    is as wide as its longest row label needs, so every label stays inside."""
    both = diff[diff.delta.notna()].copy()
    both["order"] = both.method.map({m: i for i, m in enumerate(method_order(both.method.unique()))})
    both = both.sort_values(["task", "order"])
    colors = method_colors(both.method.unique())
    labels = [f"{r.task} / {r.method}" for _, r in both.iterrows()]
    label_inches = 0.065 * max((len(label) for label in labels), default=0)  # 7-point text
    fig = Figure(figsize=(5 + label_inches, 1.4 + 0.28 * max(1, len(both))))
    ax = fig.subplots()
    y = np.arange(len(both))[::-1]
    for yi, (_, r) in zip(y, both.iterrows()):
        ax.plot([100 * r.delta], [yi], "o", color=colors[r.method])
        if not pd.isna(r.ci_low):
            ax.plot([100 * r.ci_low, 100 * r.ci_high], [yi, yi], color=colors[r.method], lw=2)
        if r.verdict in ("improved", "worse"):
            ax.text(100 * r.delta, yi + 0.2, "*", ha="center", fontsize=10)
    ax.axvline(0, color="0.3", lw=1)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel(f"delta B - A, OOD {both.metric.iloc[0].replace('_', ' ') if len(both) else ''} "
                  f"(percentage points)\nbars: 95% CI; *: corrected p < {ALPHA}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def write_compare(diff: pd.DataFrame, out_dir: Path, name_a: str, name_b: str) -> dict[str, Path]:
    """compare.csv / compare.md / compare.png in ``out_dir`` (each atomically)."""
    out_dir = Path(out_dir)
    return {"csv": write_csv(out_dir / "compare.csv", diff),
            "md": write_text(out_dir / "compare.md", to_markdown(diff, name_a, name_b)),
            "png": plot_compare(diff, out_dir / "compare.png")}
