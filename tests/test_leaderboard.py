"""Leaderboard statistics, the validated CSV reader, compare and plots."""

import codecs
import csv
import io
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import set_csv_cell

import lengthbench
from lengthbench.benchmark.grid import run_grid
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.cli import main
from lengthbench.leaderboard.aggregate import leaderboard_frame, level_summary
from lengthbench.leaderboard.compare import ProtocolMismatch, compare_frames, summary_counts, summary_text
from lengthbench.leaderboard.schema import COLUMN_NAMES, SCHEMA_VERSION, LeaderboardFormatError, read_leaderboard
from lengthbench.leaderboard.statistics import adjust_p_values, generalization_length, t_interval, welch

ROOT = Path(__file__).resolve().parent.parent


def fake_record(task, encoding, seed, curve, train_length=3, status="ok", validation_length=0):
    """A run record with a given exact-match curve (lengths 1..len(curve))."""
    per_length = [{"length": n, "status": "ok", "exact_match": em, "token_accuracy": (1 + em) / 2,
                   "n_samples": 8} for n, em in enumerate(curve, start=1)]
    config = replace(get_preset("smoke").run_config(task, encoding, seed), train_length=train_length,
                     validation_length=validation_length, test_length=len(curve))
    splits = {s: [r for r in per_length if config.split(r["length"]) == s] for s in ("id", "val", "ood")}
    summary = {f"{s}_{m}": float(np.mean([r[m] for r in rows]))
               for s, rows in splits.items() if rows for m in ("exact_match", "token_accuracy")}
    return RunRecord(config, code_version="test", torch_version="", device="", host={}, started_at="",
                     status=status, per_length=per_length, summary=summary)


def test_statistics_columns_and_values():
    records = [
        fake_record("copy", "rope", 0, [1, 1, 1, 1, 0.5, 0]),
        fake_record("copy", "rope", 1, [1, 1, 1, 0.9, 0.9, 0.1]),
        fake_record("copy", "rope", 2, [1, 1, 1, 1, 1, 0.95]),
        fake_record("copy", "nope", 0, [1, 1, 0.5, 0, 0, 0]),
    ]
    board = leaderboard_frame(records)
    assert tuple(board.columns) == COLUMN_NAMES
    rope = board[board.encoding == "rope"].iloc[0]
    oods = [np.mean([1, 0.5, 0]), np.mean([0.9, 0.9, 0.1]), np.mean([1, 1, 0.95])]
    assert rope.n_seeds == 3
    assert rope.ood_exact_match_mean == pytest.approx(np.mean(oods))
    assert rope.ood_exact_match_std == pytest.approx(np.std(oods, ddof=1))
    assert rope.ood_exact_match_max == pytest.approx(max(oods))
    assert rope.ood_exact_match_ci_low <= rope.ood_exact_match_mean <= rope.ood_exact_match_ci_high
    assert rope.frac_seeds_generalize_exact_match == pytest.approx(1 / 3)
    # seed-mean curve: 1, 1, 1, .967, .8, .35 -> generalizes up to length 4
    assert rope.generalization_length_exact_match == 4
    assert rope.extrapolation_ratio_exact_match == pytest.approx(4 / 3)
    nope = board[board.encoding == "nope"].iloc[0]
    # nope's ID exact match (1, 1, 0.5) is below the 0.9 threshold: it did not fit, so it has no rank
    assert (rope.n_fit, rope.fit_status, nope.n_fit, nope.fit_status) == (3, "fit", 0, "not_fit")
    assert rope["rank"] == 1 and math.isnan(nope["rank"])
    assert nope.generalization_length_exact_match == 2 and math.isnan(nope.ood_exact_match_std)
    assert level_summary(board).empty  # nope did not fit the only task: no task on which both compare


def test_generalization_length_and_the_t_interval():
    assert generalization_length([1, 2, 3, 4], [1, 0.95, 0.5, 1]) == 2
    assert generalization_length([1, 2], [0.2, 1]) == 0
    assert all(math.isnan(x) for x in t_interval([0.4]))  # one seed: no interval, not a zero-width one
    low, high = t_interval([0.5, 0.6, 0.7])  # mean 0.6 +- t(0.975, 2) * 0.1 / sqrt(3), t(0.975, 2) = 4.303
    assert (high - low) / 2 == pytest.approx(4.303 * 0.1 / math.sqrt(3), abs=1e-3)
    assert t_interval([0.0, 0.0, 0.1]) == (0.0, pytest.approx(0.1768, abs=1e-4))  # clipped at 0


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_interval_of_a_cell_covers_the_true_mean_95_percent_of_the_time(n):
    """Simulated seeds (normal around a known mean): the interval holds its nominal 95%."""
    rng = np.random.default_rng(n)
    trials = 4000
    covered = sum(low <= 0.6 <= high for low, high in (t_interval(rng.normal(0.6, 0.08, n)) for _ in range(trials)))
    assert covered / trials >= 0.93, covered / trials


def test_welch_against_textbook_values():
    test = welch(0.5, 0.1, 5, 0.7, 0.15, 5)
    assert test["df"] == pytest.approx(6.969, abs=1e-3) and test["p_value"] == pytest.approx(0.0423, abs=1e-3)
    assert test["t"] == pytest.approx(2.4807, abs=1e-4)
    # 95% CI half-width = t(0.975, df ~ 7) * se, t(0.975, 7) = 2.365 in the tables
    assert (test["ci_high"] - test["ci_low"]) / 2 / test["se"] == pytest.approx(2.365, abs=2e-3)
    assert welch(0.7, 0.15, 5, 0.5, 0.1, 5)["t"] == pytest.approx(-test["t"])  # B - A, signed
    assert math.isnan(welch(0.5, float("nan"), 1, 0.7, 0.1, 3)["p_value"])


def test_multiple_comparison_corrections_against_hand_computed_values():
    p = [0.01, 0.04, np.nan, 0.03, 0.5]
    # Holm: sorted p times (m - rank), running max; BH: p * m / rank, running min from the top
    np.testing.assert_allclose(adjust_p_values(p, "holm"), [0.04, 0.09, np.nan, 0.09, 0.5])
    np.testing.assert_allclose(adjust_p_values(p, "bh"), [0.04, 0.16 / 3, np.nan, 0.16 / 3, 0.5])
    np.testing.assert_allclose(adjust_p_values(p, "none"), p)
    with pytest.raises(ValueError, match="'sidak' is not known; valid: bh, holm, none"):
        adjust_p_values(p, "sidak")


def _null_boards(cells: int = 100, seeds_per_side: int = 3, seed: int = 0):
    """Two leaderboards of one setting from disjoint seeds: every cell's seeds
    come from one distribution (its own mean and spread), so no cell truly changed."""
    rng = np.random.default_rng(seed)
    base = {c: 0 for c in COLUMN_NAMES}
    boards = ([], [])
    for cell in range(cells):
        mean, spread = rng.uniform(0.1, 0.9), rng.uniform(0.02, 0.2)
        scores = np.clip(rng.normal(mean, spread, size=2 * seeds_per_side), 0, 1)
        for board, side in zip(boards, (scores[:seeds_per_side], scores[seeds_per_side:])):
            board.append({**base, "schema_version": SCHEMA_VERSION, "task": f"task{cell // 10}",
                          "method": f"transformer/enc{cell % 10}", "status": "ok", "n_seeds": seeds_per_side,
                          "n_fit": seeds_per_side,
                          "ood_exact_match_mean": side.mean(), "ood_exact_match_std": side.std(ddof=1)})
    return pd.DataFrame(boards[0]), pd.DataFrame(boards[1])


def test_compare_of_one_setting_reports_no_change_after_correction():
    a, b = _null_boards()
    uncorrected = summary_counts(compare_frames(a, b, correction="none"))
    assert uncorrected["improved"] + uncorrected["worse"] > 0  # chance alone flags cells at p < 0.05
    for correction in ("bh", "holm"):
        counts = summary_counts(compare_frames(a, b, correction=correction))
        assert counts["improved"] == counts["worse"] == 0 and counts["not_told_apart"] == 100, correction


@pytest.fixture
def two_boards(tmp_path, tiny_preset):
    """Two real leaderboards of the tiny grid, seeds {0,1} vs {2,3}."""
    paths = []
    for name, seeds in (("a", (0, 1)), ("b", (2, 3))):
        preset = tiny_preset.with_grid(seeds=seeds)
        records = run_grid(preset, tmp_path / name, progress=False)
        assert main(["leaderboard", "--results", str(tmp_path / name)]) == 0
        paths.append(tmp_path / name / "leaderboard.csv")
        assert all(r.status in ("ok", "not_applicable") for r in records)
    return paths


def _as_fit(path):
    """The board at ``path`` with every cell that ran marked as fit on every
    seed (the tiny grid's 3 steps fit nothing; compare judges fit cells only)."""
    board = pd.read_csv(path, keep_default_na=False, dtype=str)
    ran = board.status == "ok"
    board.loc[ran, "n_fit"], board.loc[ran, "fit_status"] = board.n_seeds[ran], "fit"
    board.to_csv(path, index=False)
    return path


def test_compare_real_leaderboards(two_boards, tmp_path, capsys):
    """Every cell of compare.csv is recomputed here from the two CSVs: the means,
    Welch's test (scipy), the correction and the verdict; the printout and
    compare.md carry the same verdicts and counts."""
    from scipy import stats

    a, b = (_as_fit(path) for path in two_boards)
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out), "--correction", "holm"]) == 0
    printed = capsys.readouterr().out
    board_a, board_b = read_leaderboard(a), read_leaderboard(b)
    diff = pd.read_csv(out / "compare.csv")
    assert len(diff) == 4 and set(diff.correction) == {"holm"}
    tested = []
    for _, r in diff.iterrows():
        ra = board_a[(board_a.task == r.task) & (board_a.method == r.method)].iloc[0]
        rb = board_b[(board_b.task == r.task) & (board_b.method == r.method)].iloc[0]
        line = next(x for x in printed.splitlines() if x.startswith(f"| {r.task} | `{r.method}`"))
        assert line.rstrip(" |").endswith(r.verdict.replace("_", " "))
        if "ok" != ra.status or "ok" != rb.status:
            na = "not_applicable" in (ra.status, rb.status)
            assert r.verdict == ("not_applicable" if na else "untested") and np.isnan(r.p_value)
            continue
        assert r.mean_a == pytest.approx(ra.ood_exact_match_mean) and r.mean_b == pytest.approx(rb.ood_exact_match_mean)
        assert r.delta == pytest.approx(rb.ood_exact_match_mean - ra.ood_exact_match_mean)
        if ra.ood_exact_match_std + rb.ood_exact_match_std > 0:
            expected = stats.ttest_ind_from_stats(rb.ood_exact_match_mean, rb.ood_exact_match_std, 2,
                                                  ra.ood_exact_match_mean, ra.ood_exact_match_std, 2,
                                                  equal_var=False).pvalue
            assert r.p_value == pytest.approx(expected)
        stds = (ra.ood_exact_match_std, rb.ood_exact_match_std)
        tested.append(r.copy())
        tested[-1]["same_std"] = stds[0] == stds[1] or bool(np.isnan(stds).all())
    assert len(tested) >= 2
    holm = adjust_p_values([r.p_value for r in tested], "holm")
    np.testing.assert_allclose([r.p_adjusted for r in tested], holm)
    for r, p in zip(tested, holm):
        same = r.same_std and (r.mean_a, r.n_a) == (r.mean_b, r.n_b)  # both sides hold the same numbers
        assert r.verdict == ("identical" if same else "not_told_apart" if p >= 0.05
                             else "improved" if r.delta > 0 else "worse")
    assert f"summary: {summary_text(diff)} (multiple-comparison correction: holm)" in printed
    assert f"# A → B: {a} → {b}" in printed and f"| A % ({a}) | B % ({b}) |" in printed  # which file is which
    assert "Holm (family-wise error rate)" in (out / "compare.md").read_text()
    from PIL import Image

    with Image.open(out / "compare.png") as image:
        assert image.size[0] > 100
    for name in ("leaderboard_heatmap.png", "accuracy_vs_length.png", "leaderboard_levels.csv"):
        assert (a.parent / name).exists()


def test_compare_verdicts_and_one_sided_cells():
    base = {c: 0 for c in COLUMN_NAMES}
    def row(task, enc, mean, std, n, n_fit=None):
        return {**base, "schema_version": SCHEMA_VERSION, "task": task, "method": f"transformer/{enc}", "status": "ok",
                "n_seeds": n, "n_fit": n if n_fit is None else n_fit, "ood_exact_match_mean": mean,
                "ood_exact_match_std": std}
    a = pd.DataFrame([row("copy", "rope", 0.2, 0.05, 5), row("copy", "nope", 0.5, 0.1, 5),
                      row("copy", "alibi", 0.5, 0.1, 5), row("copy", "learned", 0.5, np.nan, 1),
                      row("copy", "fire", 0.0, 0.0, 5, n_fit=1)])
    b = pd.DataFrame([row("copy", "rope", 0.8, 0.05, 5), row("copy", "nope", 0.1, 0.1, 5),
                      row("copy", "alibi", 0.52, 0.1, 5), row("parity_check", "rope", 0.5, 0.1, 3),
                      row("copy", "learned", 0.9, np.nan, 1), row("copy", "fire", 0.9, 0.01, 5)])
    diff = compare_frames(a, b)
    verdict = {(r.task, r.method.removeprefix("transformer/")): r.verdict for _, r in diff.iterrows()}
    assert verdict[("copy", "rope")] == "improved" and verdict[("copy", "nope")] == "worse"
    assert verdict[("copy", "alibi")] == "not_told_apart" and verdict[("copy", "learned")] == "untested"
    assert verdict[("parity_check", "rope")] == "only_in_b"
    unfit = diff[diff.method == "transformer/fire"].iloc[0]  # 0.0 -> 0.9, but A did not fit: no verdict, no test
    assert unfit.verdict == "not_judged" and np.isnan(unfit.p_value) and "A (1 of 5 seeds fit)" in unfit.note
    assert summary_counts(diff) == {"improved": 1, "worse": 1, "not_told_apart": 1, "not_testable": 0, "identical": 0,
                                    "untested": 1, "not_judged": 1, "not_applicable": 0, "only_in_a": 0, "only_in_b": 1}
    from scipy import stats

    alibi = diff[diff.method == "transformer/alibi"].iloc[0]  # what 5 seeds a side at this spread could tell apart
    assert alibi.detectable == pytest.approx(stats.t.ppf(0.975, alibi.df) * math.sqrt(2 * 0.1 ** 2 / 5))
    assert alibi.detectable == pytest.approx(alibi.ci_high - alibi.delta)  # the 95% interval's half-width
    assert diff[diff.verdict != "not_told_apart"].detectable.isna().all()


def test_compare_tests_cells_without_spread_by_permutation():
    """0% on every seed of A, 100% on every seed of B: Welch's t is undefined; 3 seeds a side give the exact
    permutation p of 0.1, the smallest any outcome of 3 seeds a side can give, so the cell is not testable (the
    table says why: no interval); 5 a side give 2/252."""
    from lengthbench.leaderboard.compare import NOT_TESTABLE_NOTE, to_markdown

    base = {c: 0 for c in COLUMN_NAMES}

    def board(mean, n):
        return pd.DataFrame([{**base, "schema_version": SCHEMA_VERSION, "task": "copy", "method": "transformer/rope",
                              "status": "ok", "n_seeds": n, "n_fit": n, "ood_exact_match_mean": mean,
                              "ood_exact_match_std": 0.0}])
    three = compare_frames(board(0.0, 3), board(1.0, 3)).iloc[0]
    assert (three.p_value, three.verdict, three.note) == (pytest.approx(0.1), "not_testable", NOT_TESTABLE_NOTE)
    assert np.isnan(three.ci_low) and "| +100.0 | none: no spread | 0.1 | 0.1 |  | not testable |" in to_markdown(
        compare_frames(board(0.0, 3), board(1.0, 3)), "A", "B")
    five = compare_frames(board(0.0, 5), board(1.0, 5)).iloc[0]
    assert (five.p_value, five.verdict) == (pytest.approx(2 / 252), "improved")


@pytest.mark.parametrize("mutate,message", [
    (lambda t: "", "empty file"),
    (lambda t: t.splitlines()[0] + "\n", "header only, no rows"),
    (lambda t: t.replace(f"\n{SCHEMA_VERSION},", "\n1,", 1),
     "row 2, column 'schema_version': version '1', this lengthbench reads version"),
    (lambda t: t.replace(",rank", ",rnk", 1), "missing column(s) rank"),
    (lambda t: "\n".join([t.splitlines()[0], t.splitlines()[1], t.splitlines()[1]]) + "\n",
     "row 3: duplicate key task='parity_check', method='transformer/nope'"),
    (lambda t: set_csv_cell(t, 2, "ood_exact_match_mean", "abc"),
     "row 3, column 'ood_exact_match_mean': 'abc' is not a number"),
    (lambda t: set_csv_cell(t, 1, "n_seeds", ""), "row 2, column 'n_seeds': '' is not an integer"),
])
@pytest.mark.slow
def test_malformed_csv_errors(two_boards, tmp_path, capsys, mutate, message):
    good = two_boards[0].read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(mutate(good))
    with pytest.raises(LeaderboardFormatError) as err:
        read_leaderboard(bad)
    assert message in str(err.value) and str(bad) in str(err.value)
    assert main(["compare", str(bad), str(two_boards[1]), "--out", str(tmp_path / "o")]) == 2
    line = capsys.readouterr().err.strip()
    assert message in line and "\n" not in line


@pytest.mark.parametrize("n_tasks", [1, 4, 15, 19])
@pytest.mark.slow
def test_the_accuracy_vs_length_legend_lies_inside_the_saved_image(n_tasks, tmp_path):
    """Every method is in the legend, and the legend sits inside the figure
    (the saved image) without covering any panel, however many panel rows."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    from lengthbench.leaderboard.plots import SAVE_DPI, accuracy_vs_length_figure, save_figure
    from lengthbench.models.encodings import encoding_names
    from lengthbench.tasks import task_names

    methods = [f"transformer/{e}" for e in encoding_names()[:10]] + ["lstm", "stack-rnn"]
    per_length = pd.DataFrame([
        {"task": task, "method": method, "seed": seed, "train_length": 3, "length": n,
         "exact_match": (seed + n) % 3 / 2}
        for task in task_names()[:n_tasks] for method in methods for seed in (0, 1) for n in range(1, 7)])
    fig = accuracy_vs_length_figure(per_length)
    FigureCanvasAgg(fig)
    fig.set_dpi(SAVE_DPI)
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == methods
    box, image = legend.get_window_extent(renderer), fig.bbox
    assert image.x0 <= box.x0 and box.x1 <= image.x1 and image.y0 <= box.y0 and box.y1 <= image.y1
    for ax in fig.axes:
        if ax.axison:
            assert not box.overlaps(ax.get_tightbbox(renderer)), ax.get_title()
    path = save_figure(fig, tmp_path / "curves.png", dpi=SAVE_DPI)
    saved = Image.open(path).size  # the image is the figure: the legend's box is inside it
    assert abs(saved[0] - image.width) <= 1 and abs(saved[1] - image.height) <= 1


@pytest.mark.parametrize("k", [6, 24])
def test_critical_difference_labels_never_touch(k):
    """At 24 methods (the complete reference's block) the rank axis's tick labels ran into each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from lengthbench.leaderboard.plots import SAVE_DPI, critical_difference_figure
    from lengthbench.leaderboard.ranking import friedman

    names = [f"transformer/randomized-kerple-power-{i}" for i in range(k)]
    scores = pd.DataFrame(np.random.default_rng(0).random((9, k)) + np.linspace(0, 1, k), columns=names)
    fig = critical_difference_figure(friedman(scores))
    FigureCanvasAgg(fig)
    fig.set_dpi(SAVE_DPI)
    renderer = fig.canvas.get_renderer()
    texts = fig.axes[0].texts + [fig.axes[0].title]
    assert len(texts) == 2 * k + 2  # the ticks, the CD bar's label, the methods and the title
    boxes = [t.get_window_extent(renderer) for t in texts]
    for i, a in enumerate(boxes):
        for j in range(i):
            assert not a.overlaps(boxes[j]), (texts[i].get_text(), texts[j].get_text())
    ax = fig.axes[0]
    group_lines = [y for c in ax.collections if c.get_linewidth()[0] == 3 for seg in c.get_segments() for _, y in seg]
    assert group_lines  # the test cannot tell these methods apart
    lowest_line = ax.transData.transform((1, min(group_lines)))[1]
    assert all(box.y1 < lowest_line for box in boxes[k + 1:2 * k + 1])  # every method label below every group


def test_nemenyi_critical_values_match_demsar_table():
    from lengthbench.leaderboard.ranking import nemenyi_q

    for k, q in {3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850, 10: 3.164}.items():
        assert nemenyi_q(k) == pytest.approx(q, abs=1e-3), k


def test_friedman_by_hand_and_against_scipy():
    from scipy import stats

    from lengthbench.leaderboard.ranking import friedman

    # ranks per task: t1 a1 b2 c3, t2 a1 b3 c2, t3 a2 b1 c3, t4 a1.5 b1.5 c3 -> average a 1.375, b 1.875, c 2.75
    scores = pd.DataFrame({"a": [0.9, 0.8, 0.5, 0.7], "b": [0.5, 0.1, 0.6, 0.7], "c": [0.1, 0.2, 0.3, 0.1]},
                          index=["t1", "t2", "t3", "t4"])
    ranking = friedman(scores)
    assert ranking.average_ranks.to_dict() == {"a": 1.375, "b": 1.875, "c": 2.75}
    chi2 = 12 * 4 / (3 * 4) * (1.375 ** 2 + 1.875 ** 2 + 2.75 ** 2 - 3 * 16 / 4)
    assert ranking.chi2 == pytest.approx(chi2)
    assert ranking.f_statistic == pytest.approx(3 * chi2 / (4 * 2 - chi2))
    assert ranking.critical_difference == pytest.approx(2.343 * math.sqrt(3 * 4 / 24), abs=1e-3)
    untied = pd.DataFrame(np.random.default_rng(0).random((12, 5)))
    assert friedman(untied).chi2 == pytest.approx(stats.friedmanchisquare(*untied.T.to_numpy()).statistic)


def test_friedman_reproduces_demsars_worked_example():
    """Demšar (2006), section 3.2.2: four C4.5 variants on 14 data sets, average
    ranks 3.143, 2.000, 2.893, 1.964 give chi2_F = 9.28, F_F = 3.69 (F(3, 39),
    critical value 2.85: rejected) and the Nemenyi CD 1.25. The statistics
    depend on the ranks only; these 14 rank rows have exactly those averages."""
    from lengthbench.leaderboard.ranking import friedman

    ranks = [[1, 4, 2, 3], [4, 2, 3, 1], [4, 1, 3, 2], [4, 1, 3, 2], [3, 1, 4, 2], [4, 1, 2, 3], [4, 1, 3, 2],
             [1, 4, 3, 2], [3, 1, 4, 2], [2, 4, 3, 1], [4, 3, 2, 1], [2, 1, 4, 3], [4, 3, 2, 1], [4, 1, 2.5, 2.5]]
    scores = -pd.DataFrame(ranks, columns=["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"])  # higher is better
    ranking = friedman(scores)
    assert ranking.average_ranks.round(3).to_dict() == {"C4.5+m+cf": 1.964, "C4.5+m": 2.0, "C4.5+cf": 2.893,
                                                          "C4.5": 3.143}
    assert round(ranking.chi2, 2) == 9.28 and round(ranking.f_statistic, 2) == 3.69
    assert ranking.p_value < 0.05 and round(ranking.critical_difference, 2) == 1.25


def test_friedman_finds_real_differences_and_holds_its_level_on_equal_methods():
    from lengthbench.leaderboard.ranking import friedman

    rng = np.random.default_rng(1)
    apart = pd.DataFrame(rng.normal([0.2, 0.5, 0.8], 0.05, size=(15, 3)), columns=["low", "mid", "high"])
    ranking = friedman(apart)
    assert ranking.p_value < 1e-6 and list(ranking.average_ranks.index) == ["high", "mid", "low"]
    assert ranking.groups() == []  # every pair told apart
    rejected = sum(friedman(pd.DataFrame(rng.normal(0.5, 0.1, size=(10, 4)))).p_value < 0.05 for _ in range(400))
    assert 0.02 <= rejected / 400 <= 0.09  # about alpha when the methods are the same
    tied = friedman(pd.DataFrame(rng.normal(0.5, 0.1, size=(6, 4)), columns=list("wxyz")))
    assert tied.groups() and set().union(*tied.groups()) <= set("wxyz")


def test_friedman_gives_the_exact_p_when_every_task_ranks_the_methods_alike():
    """There the F approximation is infinite (p 0); the exact chance of the
    agreement, counted over every ranking each task could give, is (1/k!)^(n-1)."""
    import itertools

    from lengthbench.leaderboard.ranking import friedman, ranking_text

    for n, k in [(2, 2), (3, 2), (2, 3), (3, 3)]:
        scores = pd.DataFrame([[float(k - j) for j in range(k)]] * n, columns=[f"m{j}" for j in range(k)])
        ranking = friedman(scores)
        outcomes = list(itertools.product(itertools.permutations(range(k)), repeat=n))
        as_extreme = sum(friedman(pd.DataFrame([list(p) for p in o], columns=scores.columns)).chi2 >= ranking.chi2 - 1e-9
                         for o in outcomes)
        assert ranking.p_value == pytest.approx(as_extreme / len(outcomes)), (n, k)
    assert "every task ranks the methods alike (exact p = 0.5);" in ranking_text(
        friedman(pd.DataFrame([[1.0, 0.0], [1.0, 0.0]], columns=["a", "b"])))


def test_the_leaderboard_ranks_its_complete_block_and_draws_the_diagram(tmp_path):
    from lengthbench.leaderboard.build import build_leaderboard

    records = [fake_record(task, encoding, seed, curve, train_length=2)
               for task, curves in (("copy", {"rope": [1, 1, 1, 0.5], "nope": [1, 1, 0.2, 0.1]}),
                                    ("reverse_string", {"rope": [1, 1, 0.9, 0.9], "nope": [1, 1, 0.1, 0]}),
                                    ("parity_check", {"rope": [1, 1, 0.7, 0.6], "nope": [1, 1, 0.1, 0.1]}))
               for encoding, curve in curves.items() for seed in (0, 1)]
    records.append(fake_record("copy", "alibi", 0, [1, 1, 1, 1]))  # alibi ran one task only: left out
    board, paths = build_leaderboard(records, tmp_path)
    assert paths["critical_difference"].stat().st_size > 0
    text = paths["md"].read_text()
    assert "Ranking over the 3 tasks every method below ran" in text
    assert "| `transformer/rope` | 1.00 |" in text and "| `transformer/nope` | 2.00 |" in text
    assert "Left out (no score on every task of the block): `transformer/alibi`." in text


def test_a_task_the_grid_ran_for_few_methods_leaves_the_block_instead_of_pushing_the_others_out(tmp_path):
    """As the horizon reference cuts N x 2 multiplication to a few methods: the
    block is the one with the most method x task cells, so the other methods
    keep their ranks over the tasks they all ran and fit."""
    from lengthbench.leaderboard.aggregate import complete_block
    from lengthbench.leaderboard.ranking import board_ranking, ranking_text

    curves = {"rope": [1, 1, 0.9, 0.8], "nope": [1, 1, 0.5, 0.4], "alibi": [1, 1, 0.7, 0.6], "t5": [1, 1, 0.2, 0.1]}
    records = [fake_record(task, encoding, seed, curve, train_length=2)
               for task in ("copy", "reverse_string", "parity_check") for encoding, curve in curves.items()
               for seed in (0, 1)]
    records += [fake_record("binary_addition", encoding, seed, curves[encoding], train_length=2)
                for encoding in ("rope", "nope") for seed in (0, 1)]  # the cut task: two methods ran it
    board = leaderboard_frame(records)
    block = complete_block(board)
    assert len(block.methods) == 4 and set(block.tasks) == {"copy", "reverse_string", "parity_check"}
    assert block.few_ran == ("binary_addition",) and block.unfit == ()
    ranking = board_ranking(board)
    assert list(ranking.average_ranks.index) == [f"transformer/{e}" for e in ("rope", "alibi", "nope", "t5")]
    assert ranking.left_out == () and ranking.few_ran_tasks == ("binary_addition",)
    assert "Tasks left out (fewer methods ran them;" in ranking_text(ranking)
    assert len(level_summary(board)) == 4
    # where the cut task is the only difference in size, more tasks win: with two methods alone, all four tasks
    two = leaderboard_frame([r for r in records if r.encoding in ("rope", "nope")])
    assert len(complete_block(two).tasks) == 4 and complete_block(two).few_ran == ()


@pytest.mark.slow
def test_unfit_cells_are_flagged_everywhere_and_never_judged(tmp_path):
    """One rule: a cell is judged only when at least half its seeds fit. An
    unfit cell keeps its number with "did not fit" (md, csv, page) but has no
    rank, no level mean, and its task leaves the Friedman ranking."""
    from lengthbench.leaderboard.build import build_leaderboard
    from lengthbench.leaderboard.html import page_data
    from lengthbench.leaderboard.ranking import board_ranking

    fit, unfit = [1, 1, 0.5, 0.2], [1, 0.5, 0.4, 0.3]  # train_length 2: ID exact match 1.0 vs 0.75
    records = [fake_record(task, "rope", s, fit, train_length=2) for task in ("copy", "reverse_string",
                                                                           "parity_check") for s in (0, 1, 2)]
    records += [fake_record("copy", "nope", s, curve, train_length=2)
                for s, curve in enumerate([[1, 1, 0.2, 0.1], [1, 1, 0.2, 0.1], unfit])]
    records += [fake_record(t, "nope", s, [1, 1, 0.1, 0.1], train_length=2) for t in ("reverse_string",
                                                                                     "parity_check") for s in range(3)]
    records += [fake_record(t, "alibi", s, [1, 1, 0.9, 0.9], train_length=2) for t in ("copy", "reverse_string")
                for s in range(3)]
    records += [fake_record("parity_check", "alibi", s, unfit, train_length=2) for s in range(3)]
    board, paths = build_leaderboard(records, tmp_path)
    cell = board.set_index(["task", "method"])
    assert cell.loc[("copy", "transformer/nope"), "fit_status"] == "partly_fit"  # 2 of 3: judged
    assert cell.loc[("copy", "transformer/nope"), "rank"] == 3
    alibi = cell.loc[("parity_check", "transformer/alibi")]
    assert (alibi.fit_status, alibi.n_fit) == ("not_fit", 0) and math.isnan(alibi["rank"])
    assert alibi.ood_exact_match_mean == pytest.approx(0.35)  # its number is kept
    md = paths["md"].read_text()
    assert "35.0 ± 0.0 (did not fit)" in md and "(2 of 3 fit)" in md
    assert "train / validation / test bands" in md and "parity_check (1..2 / 3..4)" in md
    assert "Tasks left out (some method above did not fit there" in md and "`parity_check`" in md
    assert board_ranking(board).n_tasks == 2
    levels = level_summary(board).set_index("method")
    assert levels.loc["transformer/alibi", "n_tasks"] == 2
    again = read_leaderboard(paths["csv"])
    assert list(again.fit_status) == list(board.fit_status) and list(again.n_fit) == list(board.n_fit)
    page = page_data(board, pd.DataFrame(), "t")
    assert {r["fit_status"] for r in page["rows"]} == {"fit", "partly_fit", "not_fit"}
    assert "fewer than half its seeds fit" in page["protocol"]


def test_a_version_4_board_reads_as_fit_unknown_and_keeps_its_ranks(two_boards):
    board = read_leaderboard(two_boards[0])
    old = board.drop(columns=["validation_length", "fit_threshold", "n_fit", "fit_status", "steps_mean",
                              "val_exact_match_mean", "val_token_accuracy_mean", "selected", "selection_evidence",
                              "protocol"]).assign(schema_version=4)
    path = two_boards[0].with_name("v4.csv")
    old.to_csv(path, index=False)
    again = read_leaderboard(path)
    assert set(again.fit_status) == {"unknown"} and list(again.columns) == list(COLUMN_NAMES)
    assert set(again.protocol) == {""}
    assert (again["rank"].fillna(-1) == board["rank"].fillna(-1)).all()


def test_a_version_5_board_reads_with_its_protocol_unknown_and_compares_on_lengths(two_boards):
    board = read_leaderboard(two_boards[0])
    path = two_boards[0].with_name("v5.csv")
    board.drop(columns=["protocol"]).assign(schema_version=5).to_csv(path, index=False)
    again = read_leaderboard(path)
    assert set(again.protocol) == {""} and list(again.columns) == list(COLUMN_NAMES)
    assert compare_frames(again, board).verdict.isin(("identical", "not_applicable", "not_judged")).all()
    with pytest.raises(ProtocolMismatch, match="test_length 9 vs 7"):
        compare_frames(again.assign(test_length=9), board)


def test_each_cell_gives_its_parameter_count_and_a_version_8_board_reads_without_it(two_boards):
    """n_parameters is the cell's model size from its records (an encoding's own table counts: coupled's
    position table makes it larger than nope's); a version 8 board, from before the column, reads it empty."""
    from lengthbench.benchmark.store import ResultsFolder

    board = read_leaderboard(two_boards[0])
    counts = {(r.task, r.method): r.n_parameters for r in ResultsFolder(two_boards[0].parent).records()
              if r.status == "ok"}
    ran = board[board.status == "ok"]
    assert len(ran) == len(counts) and all(counts[(t, m)] == n for t, m, n in zip(ran.task, ran.method,
                                                                                  ran.n_parameters))
    copy = ran[ran.task == "copy"].set_index("method").n_parameters
    assert copy["transformer/coupled"] > copy["transformer/nope"]
    assert board[board.status == "not_applicable"].n_parameters.isna().all()
    path = two_boards[0].with_name("v8.csv")
    board.drop(columns=["n_parameters", "chance_token_accuracy"]).assign(schema_version=8).to_csv(path, index=False)
    again = read_leaderboard(path)
    assert again.n_parameters.isna().all() and list(again.columns) == list(COLUMN_NAMES)


def test_each_cell_gives_the_chance_level_of_both_metrics_and_a_version_9_board_reads_without_it(two_boards):
    """Beside exact match's chance, token accuracy's (the scores the Chomsky papers report): on copy no answer
    repeats, yet a token guessed from its position is sometimes right; a version 9 board reads it empty."""
    from lengthbench.benchmark.store import ResultsFolder
    from lengthbench.leaderboard.chance import band_chance

    board = read_leaderboard(two_boards[0])
    run = next(r for r in ResultsFolder(two_boards[0].parent).records() if r.status == "ok" and r.task == "copy")
    test = tuple(n for n in run.config.eval_lengths() if run.config.split(n) == "ood")
    cell = board[(board.task == "copy") & (board.method == run.method)].iloc[0]
    assert cell.chance_token_accuracy == band_chance("copy", test, run.config.eval_samples, "token_accuracy")
    assert cell.chance_token_accuracy > cell.chance_exact_match
    path = two_boards[0].with_name("v9.csv")
    board.drop(columns=["chance_token_accuracy"]).assign(schema_version=9).to_csv(path, index=False)
    again = read_leaderboard(path)
    assert again.chance_token_accuracy.isna().all() and list(again.columns) == list(COLUMN_NAMES)


def _text_boxes(fig):
    """Every visible text of ``fig`` with its box on the canvas, drawn as saved."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from lengthbench.leaderboard.plots import SAVE_DPI

    FigureCanvasAgg(fig)
    fig.set_dpi(SAVE_DPI)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_window_extent"))
             if t.get_visible() and t.get_text().strip()]
    return {t: t.get_window_extent(renderer) for t in texts}, fig.bbox


def _inside(box, image) -> bool:
    return image.x0 - 1 <= box.x0 and box.x1 <= image.x1 + 1 and image.y0 - 1 <= box.y0 and box.y1 <= image.y1 + 1


def _drawn_inside(fig) -> bool:
    """Everything drawn (titles, labels, tick labels, colour bar) lies inside the saved image."""
    drawn, image = fig.get_tightbbox(fig.canvas.get_renderer()), fig.bbox_inches
    tolerance = 0.01  # inches
    return (image.x0 - tolerance <= drawn.x0 and drawn.x1 <= image.x1 + tolerance
            and image.y0 - tolerance <= drawn.y0 and drawn.y1 <= image.y1 + tolerance)


def _quick_board():
    from pathlib import Path

    from lengthbench.benchmark.store import ResultsFolder
    from lengthbench.leaderboard.aggregate import leaderboard_frame as frame

    root = Path(__file__).resolve().parent.parent
    return frame(ResultsFolder(root / "leaderboard/reference/quick/records").records())


@pytest.mark.parametrize("n_tasks", [1, 4, 8, 19])
@pytest.mark.slow
def test_the_curves_figure_title_clears_every_panel_title(n_tasks):
    from lengthbench.leaderboard.plots import accuracy_vs_length_figure
    from lengthbench.tasks import task_names

    per_length = pd.DataFrame([
        {"task": task, "method": "transformer/rope", "seed": 0, "train_length": 3, "length": n, "exact_match": 0.5}
        for task in task_names()[:n_tasks] for n in range(1, 7)])
    fig = accuracy_vs_length_figure(per_length)
    boxes, image = _text_boxes(fig)
    title = boxes[fig._suptitle]
    assert _inside(title, image)
    for ax in fig.axes:
        assert not title.overlaps(ax.get_tightbbox(fig.canvas.get_renderer())), ax.get_title()


def test_the_compare_figure_keeps_every_label_inside_the_image():
    from lengthbench.leaderboard.compare import compare_figure

    board = _quick_board()
    other = board.copy()
    other["task"] = other["task"].replace({"copy": "a_task_with_a_very_long_name_indeed"})
    diff = compare_frames(board.assign(n_seeds=3, ood_exact_match_std=0.1),
                          other.assign(n_seeds=3, ood_exact_match_std=0.1,
                                       ood_exact_match_mean=other.ood_exact_match_mean * 0.9))
    fig = compare_figure(diff)
    _text_boxes(fig)
    assert _drawn_inside(fig) and len(fig.axes[0].get_yticklabels()) == len(diff.dropna(subset=["delta"]))


def test_the_heatmap_colour_bar_is_in_the_cells_unit():
    from lengthbench.leaderboard.plots import heatmap_figure

    fig = heatmap_figure(_quick_board())
    colorbar = fig.axes[-1]
    assert colorbar.get_ylim() == (0.0, 100.0) and "(%)" in colorbar.get_ylabel()
    _text_boxes(fig)
    assert _drawn_inside(fig)


def test_a_method_has_one_colour_whatever_else_is_drawn():
    """Stable across presets, figures and pages: a method's colour depends on
    the method alone, and the built-in methods all differ."""
    from lengthbench.benchmark.presets import PRESETS
    from lengthbench.leaderboard.plots import method_colors
    from lengthbench.tasks.cells import method_name

    grids = [[method_name(*m) for m in PRESETS[name].methods()] for name in PRESETS]
    grids += [["transformer/coupled"], ["my-plugin", "lstm"]]
    seen = {}
    for methods in grids:
        for method, color in method_colors(methods).items():
            assert seen.setdefault(method, color) == color, method
    full = grids[list(PRESETS).index("full")]
    assert len({str(seen[m]) for m in full}) == len(full)


@pytest.mark.slow
def test_compare_refuses_other_protocols_by_field_unless_allowed(two_boards, tmp_path, capsys):
    a, b = two_boards
    other = read_leaderboard(b)
    other["protocol"] = other.protocol.str.replace('"steps":3', '"steps":30').str.replace('"lr":0.001', '"lr":0.01')
    changed = tmp_path / "other.csv"
    other.to_csv(changed, index=False)
    capsys.readouterr()
    assert main(["compare", str(a), str(changed), "--out", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "protocols differ in 4 of 4 shared cells: lr 0.001 vs 0.01; steps 3 vs 30" in err
    assert "--allow-mismatch" in err and not (tmp_path / "no" / "compare.csv").exists()
    assert main(["compare", str(a), str(changed), "--out", str(tmp_path / "yes"), "--allow-mismatch"]) == 0
    md = (tmp_path / "yes" / "compare.md").read_text()
    assert "**Not like with like** (compared with --allow-mismatch): protocols differ in 4 of 4" in md
    diff = pd.read_csv(tmp_path / "yes" / "compare.csv", keep_default_na=False)
    assert set(diff.protocol_mismatch) == {"lr 0.001 vs 0.01; steps 3 vs 30"}


@pytest.mark.slow
def test_a_board_compared_with_itself_is_identical_in_every_cell(two_boards, capsys):
    """Identical, cell by cell where the cells fit; where they did not (the
    tiny grid as trained), no verdict, but the files are still said to be identical."""
    a, _ = two_boards
    assert main(["compare", str(a), str(a), "--out", str(a.parent / "unfit")]) == 0
    printed = capsys.readouterr().out
    diff = pd.read_csv(a.parent / "unfit" / "compare.csv")
    assert set(diff.verdict) == {"not_judged", "not_applicable"}
    assert "summary: identical: the two leaderboards hold the same numbers in all 4 cells (1 not applicable on a " \
           "side; 3 not judged: did not fit)" in printed
    assert main(["compare", str(_as_fit(a)), str(a), "--out", str(a.parent / "self")]) == 0
    printed = capsys.readouterr().out
    diff = pd.read_csv(a.parent / "self" / "compare.csv")
    assert set(diff.verdict) <= {"identical", "not_applicable"} and "identical" in set(diff.verdict)
    assert "summary: identical: the two leaderboards hold the same numbers in all 4 cells" in printed
    assert "corrected for" not in printed or "tested cells" in printed


def test_zero_tested_cells_are_said_in_words():
    from lengthbench.leaderboard.compare import to_markdown

    base = {c: 0 for c in COLUMN_NAMES}
    row = {**base, "schema_version": SCHEMA_VERSION, "task": "copy", "method": "transformer/rope", "status": "ok",
           "n_seeds": 1, "n_fit": 1, "ood_exact_match_mean": 0.5, "ood_exact_match_std": np.nan, "protocol": ""}
    diff = compare_frames(pd.DataFrame([row]), pd.DataFrame([{**row, "ood_exact_match_mean": 0.7}]))
    text = to_markdown(diff, "a", "b")
    assert "no cell could be tested: a test needs at least two seeds on both sides" in text
    assert "corrected for 0" not in text and "Summary: untested 1" in text


def test_a_seventh_family_and_a_fourteenth_base_encoding_get_colours_of_their_own():
    """Colours never come from a fixed-length table by position: a built-in
    family added without a colour gets one from its name, and every base
    encoding past the palette's pairs gets a hue of its own."""
    from lengthbench.leaderboard.plots import _hue_pair, hue_pairs, method_color

    assert method_color("a-seventh-family") is not None and method_color("lstm") == "saddlebrown"
    darks = [tuple(map(float, _hue_pair(i)[0])) for i in range(len(hue_pairs()) + 8)]
    assert len(set(darks)) == len(darks)
    assert all(_hue_pair(i)[0] is not _hue_pair(i)[1] for i in range(len(hue_pairs()), len(hue_pairs()) + 8))


def test_overall_scores_and_ranks_are_over_the_tasks_every_method_fit():
    """rope fits only the easy task (90%); alibi fits both, 80% on the easy
    one and 20% on the hard one. Averaged over its own fitted tasks alibi
    (50%) would trail rope (90%) for having tried the hard task; over the
    common task both are judged on the same ground: rope 90, alibi 80."""
    records = [fake_record("copy", "rope", s, [1, 1, 1, 0.9]) for s in range(2)]
    records += [fake_record("reverse_string", "rope", s, [1, 0.2, 0.1, 0.1]) for s in range(2)]
    records += [fake_record("copy", "alibi", s, [1, 1, 1, 0.8]) for s in range(2)]
    records += [fake_record("reverse_string", "alibi", s, [1, 1, 1, 0.2]) for s in range(2)]
    records += [fake_record("copy", "coupled", s, [1, 1, 1, 1.0]) for s in range(2)]  # ran on one task only
    levels = level_summary(leaderboard_frame(records)).set_index("method")
    assert list(levels.index) == ["transformer/rope", "transformer/alibi"]  # coupled: no overall rank
    assert levels.overall.to_dict() == pytest.approx({"transformer/rope": 0.9, "transformer/alibi": 0.8})
    assert levels.mean_rank.to_dict() == {"transformer/rope": 1.0, "transformer/alibi": 2.0}
    assert set(levels.n_tasks) == {1}


def test_scores_a_table_writes_alike_share_their_rank():
    """Two means that differ only past the written precision (a float sum's rounding: 0.1 + 0.2 against 0.3)
    are one tie: 1.5 each, as the table shows them equal; a real difference keeps its order."""
    from lengthbench.leaderboard.aggregate import ranked

    records = [fake_record("copy", e, 0, [1, 1, 1, v]) for e, v in (("rope", 0.1 + 0.2), ("alibi", 0.3),
                                                                     ("nope", 0.2999))]
    board = leaderboard_frame(records)
    board.loc[board.encoding == "rope", "ood_exact_match_mean"] = 0.1 + 0.2  # 0.30000000000000004
    ranks = ranked(board).set_index("encoding")["rank"].to_dict()
    assert ranks == {"rope": 1.5, "alibi": 1.5, "nope": 3.0}


def test_a_board_saved_by_a_spreadsheet_reads_as_the_original(tmp_path):
    """"CSV UTF-8" from a spreadsheet: a byte-order mark, CRLF line ends and
    spaces around cells and names; the same board comes back."""
    source = ROOT / "leaderboard" / "reference" / "quick" / "leaderboard.csv"
    rows = list(csv.reader(io.StringIO(source.read_text(encoding="utf-8"))))
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([[f" {c} " if i % 3 == 0 else c for i, c in enumerate(row)]
                                                      for row in rows])
    saved = tmp_path / "saved.csv"
    saved.write_bytes(codecs.BOM_UTF8 + out.getvalue().encode("utf-8"))
    pd.testing.assert_frame_equal(read_leaderboard(saved), read_leaderboard(source))
    assert lengthbench.compare(source, saved).verdict.isin(["identical", "not_applicable", "not_judged"]).all()


def test_a_huge_finite_spread_is_refused_by_name_not_an_overflow(tmp_path):
    text = (ROOT / "leaderboard" / "reference" / "suite" / "leaderboard.csv").read_text()
    path = tmp_path / "huge.csv"
    path.write_text(set_csv_cell(text, 1, "ood_exact_match_std", "1e308"))
    with pytest.raises(LeaderboardFormatError, match="row 2, column 'ood_exact_match_std': '1e308'"):
        read_leaderboard(path)


def test_the_length_figure_shades_the_bands_and_dots_unfit_cells():
    """The validation and test bands are shaded, a cell that did not fit is
    dotted (and said so), and seed shading is promised only where a cell has
    two seeds."""
    from lengthbench.leaderboard.plots import accuracy_vs_length_figure

    def rows(seeds):
        return pd.DataFrame([
            {"task": "copy", "method": method, "seed": seed, "train_length": 3, "length": n,
             "split": "id" if n <= 3 else ("val" if n <= 4 else "ood"), "exact_match": 0.5}
            for method in ("transformer/rope", "transformer/nope") for seed in seeds for n in range(1, 8)])

    fig = accuracy_vs_length_figure(rows([0]), unfit=[("copy", "transformer/nope")])
    ax = fig.axes[0]
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines() if line.get_label().startswith("t")}
    assert styles == {"transformer/rope": "-", "transformer/nope": ":"}
    spans = sorted(tuple(round(x, 2) for x in (p.get_x(), p.get_x() + p.get_width())) for p in ax.patches)
    assert spans == [(3.5, 4.5), (4.5, 7.5)]  # validation 4, test 5..7
    title = fig._suptitle.get_text()
    assert "bands: validation (orange), test (blue)" in title and "dotted: did not fit" in title
    assert "seed range" not in title  # one seed: nothing shaded, nothing promised
    assert "seed range" in accuracy_vs_length_figure(rows([0, 1]))._suptitle.get_text()


def test_a_blank_cell_of_the_table_is_explained_and_told_from_n_a():
    """A method with no record on a task (a grid that leaves the cell out) leaves a blank; the
    caption says what a blank is, and a table without one says nothing of blanks."""
    from lengthbench.leaderboard.tables import to_markdown

    full = [fake_record(task, enc, 0, [1, 1, 1, 0.5]) for task in ("copy", "parity_check") for enc in ("nope", "rope")]
    assert "blank" not in to_markdown(leaderboard_frame(full))
    text = to_markdown(leaderboard_frame(full[:-1]))  # rope never ran on parity_check
    assert "A blank cell has no record" in text and "unlike n/a" in text
    assert "| `transformer/rope` |  | 50.0 |" in text  # parity_check, then copy


def test_the_table_ends_with_each_tasks_chance_level():
    """Beside every score its task's chance level: the table's last row (parity: one answer in about two; copy:
    no answer repeats), read from the board, with a caption that says what it is."""
    from lengthbench.leaderboard.tables import to_markdown

    board = leaderboard_frame([fake_record(task, enc, 0, [1, 1, 1, 0.5]) for task in ("copy", "parity_check")
                               for enc in ("nope", "rope")])
    text = to_markdown(board)
    chance = board.drop_duplicates("task").set_index("task").chance_exact_match
    last = text.split("\n\n")[1].splitlines()[-1]  # the caption, then the table
    assert last == f"| *chance* | {100 * chance['parity_check']:.1f} | {100 * chance['copy']:.1f} |"
    assert 40 < 100 * chance["parity_check"] < 80 and "The last row, *chance*" in text


def test_a_compare_of_many_cells_draws_the_largest_changes_and_says_so():
    """compare.png of two full boards was 2966 px tall: it draws the cells with the largest |delta| (the
    tables keep every cell) and its title says how many of how many."""
    from lengthbench.leaderboard.compare import MAX_FIGURE_ROWS, compare_figure
    from lengthbench.leaderboard.schema import read_leaderboard

    board = read_leaderboard(Path(__file__).resolve().parent.parent / "leaderboard" / "reference" / "full" /
                             "leaderboard.csv")
    other = board.assign(ood_exact_match_mean=board.ood_exact_match_mean * 0.9)
    diff = compare_frames(board, other)
    tested = diff.dropna(subset=["delta"])
    assert len(tested) > MAX_FIGURE_ROWS
    fig = compare_figure(diff)
    drawn = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(drawn) == MAX_FIGURE_ROWS and fig.get_figheight() * 110 < 1500
    largest = tested.loc[tested.delta.abs().sort_values(ascending=False, kind="stable").index[:MAX_FIGURE_ROWS]]
    assert set(drawn) == {f"{r.task} / {r.method}" for r in largest.itertuples()}
    assert f"the {MAX_FIGURE_ROWS} cells of the {len(tested)} with the largest |delta|" in fig._suptitle.get_text()
