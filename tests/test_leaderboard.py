"""Leaderboard statistics, the validated CSV reader, compare and plots."""

import math

import numpy as np
import pandas as pd
import pytest

from benchmark.cli import main
from benchmark.grid import run_grid
from conftest import set_csv_cell
from leaderboard.aggregate import leaderboard_frame, level_summary
from leaderboard.compare import compare_frames, summary_counts
from leaderboard.schema import COLUMN_NAMES, SCHEMA_VERSION, LeaderboardFormatError, read_leaderboard
from leaderboard.statistics import (
    bootstrap_ci,
    generalization_length,
    t_quantile,
    t_two_sided_p,
    welch,
)


def fake_record(task, encoding, seed, curve, train_length=3, status="ok"):
    """A run record with a given exact-match curve (lengths 1..len(curve))."""
    per_length = [{"length": n, "status": "ok", "exact_match": em, "token_accuracy": (1 + em) / 2,
                   "n_samples": 8} for n, em in enumerate(curve, start=1)]
    ood = [r for r in per_length if r["length"] > train_length]
    idd = [r for r in per_length if r["length"] <= train_length]
    summary = {f"{s}_{m}": float(np.mean([r[m] for r in rows]))
               for s, rows in (("ood", ood), ("id", idd)) for m in ("exact_match", "token_accuracy")}
    return {"run_id": f"{task}-{encoding}-{seed}", "task": task, "encoding": encoding, "seed": seed,
            "status": status, "config": {"seed": seed, "train_length": train_length,
                                         "test_length": len(curve)},
            "per_length": per_length, "summary": summary, "schema_version": 1}


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
    assert rope["rank"] == 1 and board[board.encoding == "nope"].iloc[0]["rank"] == 2
    nope = board[board.encoding == "nope"].iloc[0]
    assert nope.generalization_length_exact_match == 2 and math.isnan(nope.ood_exact_match_std)
    levels = level_summary(board)
    assert list(levels.method) == ["transformer/nope", "transformer/rope"] and "sequence" in levels.columns


def test_generalization_length_and_bootstrap():
    assert generalization_length([1, 2, 3, 4], [1, 0.95, 0.5, 1]) == 2
    assert generalization_length([1, 2], [0.2, 1]) == 0
    assert bootstrap_ci([0.4]) == (0.4, 0.4)
    low, high = bootstrap_ci([0.0, 1.0, 0.5, 0.5])
    assert 0 <= low < 0.5 < high <= 1
    assert bootstrap_ci([0.0, 1.0, 0.5]) == bootstrap_ci([0.0, 1.0, 0.5])  # deterministic


def test_student_t_against_tables():
    assert t_two_sided_p(2.0, 10) == pytest.approx(0.073388, abs=1e-5)
    assert t_two_sided_p(0.0, 5) == pytest.approx(1.0)
    assert t_quantile(0.975, 10) == pytest.approx(2.228139, abs=1e-5)
    assert t_quantile(0.975, 3) == pytest.approx(3.182446, abs=1e-5)
    test = welch(0.5, 0.1, 5, 0.7, 0.15, 5)
    assert test["df"] == pytest.approx(6.969, abs=1e-3) and test["p_value"] == pytest.approx(0.0423, abs=1e-3)
    assert math.isnan(welch(0.5, float("nan"), 1, 0.7, 0.1, 3)["p_value"])


@pytest.fixture
def two_boards(tmp_path, tiny_preset):
    """Two real leaderboards of the tiny grid, seeds {0,1} vs {2,3}."""
    paths = []
    for name, seeds in (("a", (0, 1)), ("b", (2, 3))):
        preset = tiny_preset.with_grid(seeds=seeds)
        records = run_grid(preset, tmp_path / name, progress=False)
        assert main(["leaderboard", "--results", str(tmp_path / name)]) == 0
        paths.append(tmp_path / name / "leaderboard.csv")
        assert all(r["status"] in ("ok", "not_applicable") for r in records)
    return paths


def test_compare_real_leaderboards(two_boards, tmp_path, capsys):
    a, b = two_boards
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "summary: improved" in printed
    for name in ("compare.csv", "compare.md", "compare.png"):
        assert (out / name).exists()
    diff = pd.read_csv(out / "compare.csv")
    assert len(diff) == 4 and set(diff.verdict) <= {"improved", "worse", "unchanged", "untested"}
    for name in ("leaderboard_heatmap.png", "accuracy_vs_length.png", "leaderboard_levels.csv"):
        assert (a.parent / name).exists()


def test_compare_verdicts_and_one_sided_cells():
    base = {c: 0 for c in COLUMN_NAMES}
    def row(task, enc, mean, std, n):
        return {**base, "schema_version": SCHEMA_VERSION, "task": task, "method": f"transformer/{enc}", "status": "ok",
                "n_seeds": n, "ood_exact_match_mean": mean, "ood_exact_match_std": std}
    a = pd.DataFrame([row("copy", "rope", 0.2, 0.05, 5), row("copy", "nope", 0.5, 0.1, 5),
                      row("copy", "alibi", 0.5, 0.1, 5), row("copy", "learned", 0.5, np.nan, 1)])
    b = pd.DataFrame([row("copy", "rope", 0.8, 0.05, 5), row("copy", "nope", 0.1, 0.1, 5),
                      row("copy", "alibi", 0.52, 0.1, 5), row("parity_check", "rope", 0.5, 0.1, 3),
                      row("copy", "learned", 0.9, np.nan, 1)])
    diff = compare_frames(a, b)
    verdict = {(r.task, r.method.removeprefix("transformer/")): r.verdict for _, r in diff.iterrows()}
    assert verdict[("copy", "rope")] == "improved" and verdict[("copy", "nope")] == "worse"
    assert verdict[("copy", "alibi")] == "unchanged" and verdict[("copy", "learned")] == "untested"
    assert verdict[("parity_check", "rope")] == "only_in_b"
    assert summary_counts(diff) == {"improved": 1, "worse": 1, "unchanged": 1, "untested": 1,
                                    "only_in_a": 0, "only_in_b": 1}


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
