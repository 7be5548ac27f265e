"""Published-vs-ours reports: the papers' aggregations, computed from records."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.cli import main
from lengthbench.leaderboard.reproduction import chomsky_report, nope_report, reciprocal_ranks
from lengthbench.models import ModelSize

MODEL = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "dropout": 0.0}


def record(task, method, seed, token_acc, exact=None, train_length=2):
    """A finished run whose per-length token accuracy (lengths 1..) is ``token_acc``."""
    exact = token_acc if exact is None else exact
    per_length = [{"length": n, "status": "ok", "token_accuracy": a, "exact_match": e, "n_samples": 8}
                  for n, (a, e) in enumerate(zip(token_acc, exact), start=1)]
    summary = {f"{part}_{m}": float(np.mean([r[m] for r in per_length if (r["length"] > train_length) == ood]))
               for part, ood in (("ood", True), ("id", False)) for m in ("exact_match", "token_accuracy")}
    family, _, encoding = method.partition("/")
    config = replace(get_preset("smoke").run_config(task, encoding, seed, family), train_length=train_length,
                     test_length=len(token_acc), steps=10, batch_size=4, lr=1e-3, model=ModelSize(**MODEL))
    return RunRecord(config, "test", "", "", {}, "", status="ok", per_length=per_length, summary=summary)


def test_reciprocal_rank_by_hand():
    scores = pd.DataFrame({"task": ["a"] * 3 + ["b"] * 3, "method": ["nope", "rope", "alibi"] * 2,
                           "mean": [0.9, 0.5, 0.5, 0.1, 0.8, 0.3]})
    mrr = reciprocal_ranks(scores)  # a: 1, 2, 2 (a tie shares the better rank); b: 3, 1, 2
    assert mrr["nope"] == pytest.approx((1 + 1 / 3) / 2)
    assert mrr["rope"] == pytest.approx((1 / 2 + 1) / 2) and mrr["alibi"] == pytest.approx(1 / 2)


def test_nope_score_averages_seen_and_unseen_lengths():
    records = [record("copy", "transformer/nope", 0, [1, 1, 0, 0]),
               record("copy", "transformer/rope", 0, [1, 1, 0.2, 0])]
    text = nope_report(records)
    assert "| copy | `nope` | 98.6 | 50.0 |" in text  # over lengths 1..4, not only the unseen 3..4
    assert "| copy | `rope` | 0.0 | 55.0 |" in text
    assert "| `rope` | 0.33 | 1.00 |" in text and "| `nope` | 0.69 | 0.50 |" in text


def test_chomsky_report_uses_max_over_seeds_and_states_each_finding():
    records = [record("even_pairs", "transformer/rope", s, [1, 1, a, a]) for s, a in enumerate([0.95, 0.5])]
    records += [record("cycle_navigation", "transformer/rope", s, [1, 1, 0.96, 0.96]) for s in range(2)]
    records += [record("even_pairs", "transformer/randomized-rope", s, [1, 1, 0.6, 0.6]) for s in range(2)]
    records += [record("cycle_navigation", "transformer/randomized-rope", s, [1, 1, 0.5, 0.5]) for s in range(2)]
    records += [record(t, "lstm", s, [1, 1, a, a]) for t in ("even_pairs", "cycle_navigation")
                for s, a in enumerate([1.0, 0.8])]
    text = chomsky_report(records)
    # even_pairs: best max over seeds is rope's 95 (mean 72.5): "solved" holds on the max
    assert "| even_pairs | R | solved | `rope` | 95.0 | 72.5 ± 31.8 | holds |" in text
    assert "| cycle_navigation | R | not solved (61.9%) | `rope` | 96.0 | 96.0 ± 0.0 | does not hold |" in text
    # the LSTM solves with one seed of two: "every seed" does not hold
    assert "1/2 seeds solve); published: solved (every seed), does not hold" in text
    assert "`lstm` averages 90.0% (mean over seeds and tasks): ≥ 2 of the 2 transformer encodings" in text
    # randomized gain over the two tasks: (60 - 72.5 + 50 - 96) / 2 = -29.25 mean over seeds
    assert "| `rope` | 2 | -29.2 |" in text or "| `rope` | 2 | -29.3 |" in text


def test_reproduce_cli_writes_the_report(capsys, tmp_path):
    assert main(["run", "--preset", "smoke", "--tasks", "copy,reverse_string", "--encodings", "nope,rope",
                 "--results", str(tmp_path / "r"), "--no-progress"]) == 0
    assert main(["reproduce", "nope", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 0
    assert "Mean reciprocal rank" in (tmp_path / "o" / "reproduction.md").read_text()
    assert main(["reproduce", "nope", "--results", str(tmp_path / "missing")]) == 2
    assert main(["reproduce", "coupling", "--results", str(tmp_path / "o")]) == 2  # no records there
    assert "--preset suite --tasks addition,multiplication" in capsys.readouterr().err


def test_chomsky_report_without_transformer_runs_is_refused(capsys, tmp_path):
    assert main(["run", "--preset", "smoke", "--tasks", "copy", "--models", "lstm", "--results", str(tmp_path),
                 "--no-progress"]) == 0
    assert main(["reproduce", "chomsky", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "hold no finished transformer run" in err and "\n" not in err
