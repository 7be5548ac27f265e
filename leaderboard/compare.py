"""``lengthbench compare A.csv B.csv``: per-cell differences B - A.

The significance test works from the CSVs alone: Welch's unequal-variance
t-test on the per-seed OOD means (mean, sample std and number of seeds of
each side), two-sided, with a Welch-Satterthwaite 95% CI of the delta. One
comparison tests every cell at once, so the p-values are corrected for
multiple comparisons (Benjamini-Hochberg by default; ``--correction``). A
cell is "improved"/"worse" when its corrected p < alpha; "not_told_apart"
otherwise (not "unchanged": with few seeds a large change can fail the
test); "identical" when both sides hold the same numbers; cells with fewer
than two seeds on a side cannot be tested ("untested"), and a cell
that is not applicable on a side says so ("not_applicable"). As in the
reports (``leaderboard.inference``), "not told apart" says what the cell's
design could have told apart (``detectable``: the smallest |delta| that
would have passed at the most lenient level the correction allows, every
other cell at its smallest p: Welch's 95% half-width), and a cell whose
design no outcome could pass (neither side varies and the exact
permutation test's smallest p, 2 / C(n_a + n_b, n_a), is not below alpha:
0.1 with 3 seeds a side) is "not_testable", not "not told apart".

Only like is compared with like: each cell's ``protocol`` (its settings,
schema version 6) must be the same on both sides, or the comparison is
refused with the differing fields named (``ProtocolMismatch``); with
``allow_mismatch`` it goes ahead and every output states the mismatch. A
board from before version 6 has no protocol: its lengths are checked.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from lengthbench.benchmark.config import dotted
from lengthbench.benchmark.files import ensure_output_dir, save_figure, write_csv, write_text
from lengthbench.benchmark.records import METRICS
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.leaderboard.aggregate import judged, method_order
from lengthbench.leaderboard.plots import SAVE_DPI, method_colors
from lengthbench.leaderboard.schema import COLUMN_NAMES, KEY, read_leaderboard
from lengthbench.leaderboard.statistics import CORRECTIONS, DEFAULT_CORRECTION, adjust_p_values, scipy_stats, welch
from lengthbench.leaderboard.tables import markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA = 0.05
COLUMNS = ["task", "method", "metric", "mean_a", "mean_b", "n_a", "n_b", "delta", "se", "df", "t",
           "p_value", "p_adjusted", "correction", "ci_low", "ci_high", "detectable", "verdict", "note",
           "protocol_mismatch"]
SAME_NOTE = "the same numbers on both sides"
NO_SPREAD_NOTE = ("neither side varies: the p is the exact permutation test's over every split of the pooled "
                  "seeds (its smallest: 0.1 for 3 seeds a side), with no interval")
VERDICTS = ("improved", "worse", "not_told_apart", "not_testable", "identical", "untested", "not_judged",
            "not_applicable", "only_in_a", "only_in_b")
NOT_TESTABLE_NOTE = "no outcome of this many seeds reaches p < 0.05 by the exact permutation test"
# What a board without protocols (schema < 6) still says about its cells' settings.
LENGTH_FIELDS = ("train_length", "validation_length", "test_length")


class ProtocolMismatch(InputError):
    """Two leaderboards whose shared cells were made under different settings."""


def protocol_differences(row) -> dict[str, tuple]:
    """The settings of a merged row's two sides that differ: field -> (A's,
    B's); only the lengths when a side is a board from before schema 6."""
    protocols = [row[f"protocol_{side}"] for side in "ab"]
    if all(isinstance(p, str) and p for p in protocols):
        a, b = (dotted(json.loads(p)) for p in protocols)
    else:
        a, b = ({name: row[f"{name}_{side}"] for name in LENGTH_FIELDS} for side in "ab")
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def describe_differences(differences: dict[str, tuple]) -> str:
    return "; ".join(f"{k} {_value(va)} vs {_value(vb)}" for k, (va, vb) in differences.items())


def _value(v) -> str:
    return "(unset)" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def mismatch_summary(differing: dict[str, tuple], n_differing: int, n_shared: int) -> str:
    """One line: in how many shared cells the protocols differ, and each differing field (first values seen)."""
    if not n_differing:
        return ""
    shown = list(differing.items())
    return (f"protocols differ in {n_differing} of {n_shared} shared cells: "
            + describe_differences(dict(shown[:6])) + (f"; and {len(shown) - 6} more field(s)" if len(shown) > 6 else ""))


def compare_frames(a: pd.DataFrame, b: pd.DataFrame, metric: str = "exact_match",
                   alpha: float = ALPHA, correction: str = DEFAULT_CORRECTION,
                   allow_mismatch: bool = False) -> pd.DataFrame:
    """One row per (task, method) present in either table; ``p_adjusted`` is
    the p-value after ``correction`` over all tested cells, and decides the
    verdict. Refuses (``ProtocolMismatch``) shared cells made under different
    protocols unless ``allow_mismatch``."""
    if correction not in CORRECTIONS:
        raise InputError(f"correction {correction!r} is not known; valid: {', '.join(CORRECTIONS)}")
    col = f"ood_{metric}"
    a, b = (side.assign(judged=judged(side)) for side in (a, b))
    merged = a.merge(b, on=list(KEY), how="outer", suffixes=("_a", "_b"), indicator=True)
    rows, differing, n_differing = [], {}, 0
    for _, r in merged.iterrows():
        row = {"task": r.task, "method": r.method, "metric": metric, "correction": correction}
        if r._merge != "both":
            row["verdict"] = "only_in_a" if r._merge == "left_only" else "only_in_b"
            rows.append(row)
            continue
        found = protocol_differences(r)
        row["protocol_mismatch"] = describe_differences(found)
        n_differing += bool(found)
        for field, values in found.items():
            differing.setdefault(field, values)
        if "not_applicable" in (r.status_a, r.status_b):
            row.update(verdict="not_applicable", note=f"status {r.status_a} -> {r.status_b}")
        elif r.status_a != "ok" or r.status_b != "ok":
            row.update(verdict="untested", note=f"status {r.status_a} -> {r.status_b}")
        else:
            sides = [(r[f"{col}_mean_{s}"], r[f"{col}_std_{s}"], int(r[f"n_seeds_{s}"])) for s in "ab"]
            row.update(mean_a=sides[0][0], mean_b=sides[1][0], n_a=sides[0][2], n_b=sides[1][2])
            if not (r.judged_a and r.judged_b):  # the one rule (aggregate.judged): an unfit cell gets no verdict
                unfit = [f"{s.upper()} ({int(r[f'n_fit_{s}'])} of {int(r[f'n_seeds_{s}'])} seeds fit)"
                         for s in "ab" if not r[f"judged_{s}"]]
                row.update(verdict="not_judged", note=(SAME_NOTE + "; " if _same(*sides) else "")
                           + f"did not fit on {' and '.join(unfit)}")
            else:
                row.update(welch(*sides[0], *sides[1]))
                if _same(sides[0], sides[1]):
                    row["verdict"] = "identical"
                elif row["se"] == 0:
                    row["note"] = NO_SPREAD_NOTE
        rows.append(row)
    diff = pd.DataFrame(rows).reindex(columns=COLUMNS)
    diff["verdict"] = diff.verdict.astype(object)
    diff["note"] = diff.note.astype(object)
    diff["protocol_mismatch"] = diff.protocol_mismatch.astype(object).fillna("")
    mismatch = mismatch_summary(differing, n_differing, int((merged._merge == "both").sum()))
    if mismatch and not allow_mismatch:
        raise ProtocolMismatch(f"A and B were not made under the same protocol: {mismatch}; compare like with "
                               "like (the same preset's settings), or pass --allow-mismatch (allow_mismatch=True) "
                               "to compare anyway, and every output states the mismatch")
    diff["p_adjusted"] = adjust_p_values(diff.p_value.to_numpy(dtype=float), correction)
    significant = diff.p_adjusted < alpha
    tested = diff.verdict.isna()
    diff.loc[tested, "verdict"] = np.select(
        [diff.p_adjusted[tested].isna(), significant[tested] & (diff.delta[tested] > 0),
         significant[tested] & (diff.delta[tested] < 0)], ["untested", "improved", "worse"], "not_told_apart")
    # without spread the observed split is the most extreme there is: its exact p is the design's smallest
    blind = (diff.verdict == "not_told_apart") & (diff.se == 0) & (diff.p_value >= alpha)
    diff.loc[blind, "verdict"] = "not_testable"
    diff.loc[blind, "note"] = NOT_TESTABLE_NOTE
    apart = (diff.verdict == "not_told_apart") & (diff.se > 0)
    diff.loc[apart, "detectable"] = [float(scipy_stats().t.ppf(1 - alpha / 2, df)) * se
                                     for df, se in zip(diff.df[apart], diff.se[apart])]
    diff.attrs["mismatch"] = mismatch
    return diff


def _same(a: tuple, b: tuple) -> bool:
    """Both sides hold the same mean, std (both empty counts as the same) and seed count."""
    return a[0] == b[0] and a[2] == b[2] and (a[1] == b[1] or (pd.isna(a[1]) and pd.isna(b[1])))


def summary_counts(diff: pd.DataFrame) -> dict[str, int]:
    return {v: int((diff.verdict == v).sum()) for v in VERDICTS}


def summary_text(diff: pd.DataFrame) -> str:
    """The verdict counts in words; "identical" when every cell of both sides
    holds the same numbers (cells that did not fit included, and named)."""
    counts = summary_counts(diff)
    same_unfit = int(((diff.verdict == "not_judged")
                      & diff.note.map(lambda note: isinstance(note, str) and note.startswith(SAME_NOTE))).sum())
    same = counts["identical"] + same_unfit
    if len(diff) and same + counts["not_applicable"] == len(diff) and same:
        na = counts["not_applicable"]
        notes = ([f"{na} not applicable on a side"] if na else []) + (
            [f"{same_unfit} not judged: did not fit"] if same_unfit else [])
        return (f"identical: the two leaderboards hold the same numbers in all {len(diff)} cells"
                + (f" ({'; '.join(notes)})" if notes else ""))
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items() if v)


def direction(name_a: str, name_b: str) -> str:
    """"A → B", with the two sides' names when they have them (files)."""
    return "A → B" + ("" if (name_a, name_b) == ("A", "B") else f": {name_a} → {name_b}")


def to_markdown(diff: pd.DataFrame, name_a: str, name_b: str) -> str:
    tested = int(diff.p_value.notna().sum())
    method = (f"alpha = {ALPHA} on p corrected for {tested} tested cell{'s' if tested != 1 else ''}: "
              f"{CORRECTIONS[diff.correction.iloc[0]]}." if tested else
              "no cell could be tested: a test needs at least two seeds on both sides.")
    lines = [f"# {direction(name_a, name_b)}", ""]
    if diff.attrs.get("mismatch"):
        lines += [f"**Not like with like** (compared with --allow-mismatch): {diff.attrs['mismatch']}. "
                  "Each row's `protocol_mismatch` in compare.csv names its differences.", ""]
    lines += [f"Delta = B - A of OOD {diff.metric.iloc[0].replace('_', ' ')} (percentage points); "
              f"Welch's t-test from per-seed mean, std and n (where neither side varies, its seeds are known and an "
              f"exact permutation test replaces it, with no interval); {method} A cell that did not fit its training "
              "lengths on a side (fewer than half its seeds) is not judged: it gets no verdict. Detectable: for a cell "
              "not told apart, the smallest |delta| its seeds could have told apart (at the most lenient level the "
              "correction allows); not testable: no outcome of its seeds could pass (neither side varies, and the "
              "exact test's smallest p with this many seeds is not below alpha).", "",
              f"Summary: {summary_text(diff)}", ""]
    rows = []
    for _, r in diff.iterrows():
        def pp(x):
            return "" if pd.isna(x) else f"{100 * x:+.1f}"
        ci = (f"[{pp(r.ci_low)}, {pp(r.ci_high)}]" if not pd.isna(r.ci_low)
              else "none: no spread" if r.se == 0 and r.verdict not in ("identical", "not_judged") else "")
        rows.append([r.task, f"`{r.method}`", "" if pd.isna(r.mean_a) else f"{100 * r.mean_a:.1f}",
                     "" if pd.isna(r.mean_b) else f"{100 * r.mean_b:.1f}", pp(r.delta), ci,
                     "" if pd.isna(r.p_value) else f"{r.p_value:.3g}",
                     "" if pd.isna(r.p_adjusted) else f"{r.p_adjusted:.3g}",
                     "" if pd.isna(r.detectable) else f"±{100 * r.detectable:.1f}", r.verdict.replace("_", " ")])
    named = (name_a, name_b) != ("A", "B")
    lines += markdown_table(["task", "method", f"A % ({name_a})" if named else "A %",
                             f"B % ({name_b})" if named else "B %", "delta", "95% CI", "p", "p corrected",
                             "detectable", "verdict"],
                            rows)
    return "\n".join(lines) + "\n"


def plot_compare(diff: pd.DataFrame, path: Path, name_a: str = "A", name_b: str = "B") -> Path:
    return save_figure(compare_figure(diff, name_a, name_b), path, dpi=SAVE_DPI, bbox_inches="tight")


MAX_FIGURE_ROWS = 40  # cells drawn in compare.png: about 1400 px tall at most; the tables hold every cell


def compare_figure(diff: pd.DataFrame, name_a: str = "A", name_b: str = "B") -> Figure:
    """Each tested cell's delta with its 95% CI, one row per cell (the
    ``MAX_FIGURE_ROWS`` with the largest |delta| where more were tested, the
    title says so), under a title naming A and B; the figure is as wide as
    its longest row label needs, and is saved with a tight box, so every
    label stays whole."""
    tested = diff[diff.delta.notna()]
    both = tested.loc[tested.delta.abs().sort_values(ascending=False, kind="stable").index[:MAX_FIGURE_ROWS]].copy()
    both["order"] = both.method.map({m: i for i, m in enumerate(method_order(both.method.unique()))})
    both = both.sort_values(["task", "order"])
    colors = method_colors(both.method.unique())
    labels = [f"{r.task} / {r.method}" for _, r in both.iterrows()]
    label_inches = 0.065 * max((len(label) for label in labels), default=0)  # 7-point text
    from matplotlib.figure import Figure  # imported on first use (plots.py)

    title_inches = 0.5 + (0.4 if diff.attrs.get("mismatch") else 0)  # the A -> B title, and the mismatch
    fig = Figure(figsize=(5 + label_inches, 1.4 + title_inches + 0.28 * max(1, len(both))))
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
    width = int(12 * fig.get_figwidth())
    shown = "" if len(both) == len(tested) else (f"\nthe {len(both)} cells of the {len(tested)} with the largest "
                                                 "|delta| (compare.csv and compare.md have every cell)")
    fig.suptitle(textwrap.fill(direction(textwrap.shorten(name_a, 80), textwrap.shorten(name_b, 80)), width) + shown,
                 fontsize=9)
    if diff.attrs.get("mismatch"):
        ax.set_title(textwrap.fill("not like with like: " + textwrap.shorten(diff.attrs["mismatch"], 200),
                                   width), fontsize=8, color="darkred")
    fig.tight_layout()
    return fig


def write_compare(diff: pd.DataFrame, out_dir: Path, name_a: str, name_b: str) -> dict[str, Path]:
    """compare.csv / compare.md / compare.png in ``out_dir`` (each atomically)."""
    out_dir = Path(out_dir)
    return {"csv": write_csv(out_dir / "compare.csv", diff),
            "md": write_text(out_dir / "compare.md", to_markdown(diff, name_a, name_b)),
            "png": plot_compare(diff, out_dir / "compare.png", name_a, name_b)}


def compare_leaderboards(a, b, metric: str = "exact_match", correction: str | None = None, out=None,
                         allow_mismatch: bool = False) -> pd.DataFrame:
    """``compare_frames`` of two leaderboards given as ``leaderboard.csv`` paths (validated on read) or frames
    (checked for the board's columns); with ``out``, ``write_compare``'s files there (``attrs["written"]``)."""
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


def comparison_text(diff: pd.DataFrame) -> str:
    """A comparison as ``compare.md`` holds it, then its one-line summary."""
    return (to_markdown(diff, *diff.attrs.get("names", ("A", "B"))) + "summary: " + summary_text(diff)
            + f" (multiple-comparison correction: {diff.correction.iloc[0] if len(diff) else DEFAULT_CORRECTION})")
