"""``run --select``: a setting is chosen per (task, method) on the validation
band only, with its evidence in the records and the leaderboard."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_leaderboard import fake_record

from lengthbench.benchmark.selection import SelectionGrid, choose
from lengthbench.cli import main
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.schema import read_leaderboard


@pytest.mark.parametrize("text, message", [
    ("learning_rate=1,2", "FIELD one of lr, weight_decay"),
    ("lr", "give FIELD=V1,V2"),
    ("lr=1e-3,abc", "'abc' is not a float value for lr"),
    ("lr=1e-3,1e-3", "listed twice"),
    ("lr=1e-3", "at least two values"),
    ("lr=1e-3,-1", "out of range"),
    ("steps=100,2.5", "'2.5' is not a int value for steps"),
])
def test_bad_selections_are_refused_by_name(text, message):
    with pytest.raises(InputError, match=message):
        SelectionGrid.parse(text)


def _at(lr, curve, seed=0, status="ok"):
    """A record at learning rate ``lr``: train 1..2, validation 3..4, test 5..6."""
    record = fake_record("copy", "rope", seed, curve, train_length=2, validation_length=4, status=status)
    return replace(record, config=replace(record.config, lr=lr))


def test_the_choice_reads_the_validation_band_and_never_the_test_band():
    grid = SelectionGrid("lr", (1e-3, 2e-3, 3e-3))
    by_value = {1e-3: [_at(1e-3, [1, 1, 0.5, 0.5, 1, 1])],  # best on test, worse on validation
                2e-3: [_at(2e-3, [1, 1, 0.9, 0.8, 0, 0])],  # best on validation
                3e-3: [_at(3e-3, [1, 1, 0.2, 0.2, 1, 1])]}
    value, scores = choose(by_value, grid)
    assert value == 2e-3 and scores == {"0.001": 0.5, "0.002": 0.85, "0.003": 0.2}


def test_ties_go_to_token_accuracy_then_to_the_first_value_and_failed_seeds_count_zero():
    grid = SelectionGrid("lr", (1e-3, 2e-3))
    same = [1, 1, 0, 0, 0, 0]
    assert choose({1e-3: [_at(1e-3, same)], 2e-3: [_at(2e-3, same)]}, grid)[0] == 1e-3
    better_tokens = fake_record("copy", "rope", 0, same, train_length=2, validation_length=4)
    better_tokens.summary = {**better_tokens.summary, "val_token_accuracy": 0.99}
    better_tokens = replace(better_tokens, config=replace(better_tokens.config, lr=2e-3))
    assert choose({1e-3: [_at(1e-3, same)], 2e-3: [better_tokens]}, grid)[0] == 2e-3
    diverged = replace(_at(1e-3, [1, 1, 1, 1, 1, 1], seed=1), status="diverged", summary=None)
    steady = [_at(2e-3, [1, 1, 0.6, 0.6, 0, 0]), _at(2e-3, [1, 1, 0.6, 0.6, 0, 0], seed=1)]
    value, scores = choose({1e-3: [_at(1e-3, [1, 1, 1, 1, 1, 1]), diverged], 2e-3: steady}, grid)
    assert value == 2e-3 and scores["0.001"] == 0.5  # (1 + 0) / 2: the diverged seed counts 0


def test_a_value_with_a_missing_seed_does_not_compete():
    grid = SelectionGrid("lr", (1e-3, 2e-3))
    errored = replace(_at(1e-3, [1, 1, 1, 1, 1, 1], seed=1), status="error", summary=None)
    value, scores = choose({1e-3: [_at(1e-3, [1, 1, 1, 1, 1, 1]), errored],
                            2e-3: [_at(2e-3, [1, 1, 0.1, 0.1, 0, 0]), _at(2e-3, [1, 1, 0.1, 0.1, 0, 0], seed=1)]}, grid)
    assert value == 2e-3 and scores["0.001"] is None


def test_run_select_end_to_end(tmp_path, capsys):
    results = tmp_path / "res"
    argv = ["run", "--preset", "smoke", "--tasks", "parity_check", "--encodings", "rope", "--results", str(results),
            "--no-progress", "--workers", "1"]
    assert main([*argv, "--select", "lr=1e-3,3e-3"]) == 0
    [path] = results.glob("parity_check__rope__seed0__*.json")
    record = json.loads(path.read_text())
    selection = record["selection"]
    assert selection["chosen"] == record["config"]["lr"] and selection["values"] == [1e-3, 3e-3]
    assert len(list((results / "selection").glob("parity_check__rope__*.json"))) == 2
    board = read_leaderboard(results / "leaderboard.csv")
    assert board.selected.iloc[0] == f"lr={record['config']['lr']:g}"
    assert "validation-band exact match, seeds 0" in board.selection_evidence.iloc[0]
    assert "Settings chosen per cell on the validation band" in (results / "leaderboard.md").read_text()
    # another grid that cannot pick the same value replaces the cell's record, and the board stays one config
    other = 5e-4
    assert main([*argv, "--select", f"lr={other:g},{record['config']['lr'] * 10:g}"]) == 0
    [again] = results.glob("parity_check__rope__seed0__*.json")
    assert json.loads(again.read_text())["selection"]["values"] == [other, record["config"]["lr"] * 10]
    assert main(["leaderboard", "--results", str(results)]) == 0
    capsys.readouterr()
    assert main([*argv, "--select", "lr=1e-3"]) == 2
    assert "at least two values" in capsys.readouterr().err
    # the same selection again trains nothing and rewrites no record
    stamps = {p: p.stat().st_mtime_ns for p in results.rglob("parity_check__*.json")}
    assert main([*argv, "--select", f"lr={other:g},{record['config']['lr'] * 10:g}"]) == 0
    assert {p: p.stat().st_mtime_ns for p in results.rglob("parity_check__*.json")} == stamps


def test_a_failed_candidate_is_reported_and_the_choice_named(tmp_path, capsys, caplog):
    """A learning rate at which training diverges: the cell's failed value is
    reported per seed and the choice among the rest said, never silent."""
    import logging

    results = tmp_path / "res"
    with caplog.at_level(logging.WARNING):
        assert main(["run", "--preset", "smoke", "--tasks", "parity_check", "--encodings", "rope", "--results",
                     str(results), "--no-progress", "--workers", "1", "--select", "lr=1e-3,1e9"]) == 0
    messages = [r.getMessage() for r in caplog.records]
    assert "--select lr=1e+09 on parity_check/transformer/rope: seed 0 failed" in messages
    assert any(m.startswith("--select on parity_check/transformer/rope: chose lr=0.001 on validation") for m in messages)
    [path] = results.glob("parity_check__rope__seed0__*.json")
    assert json.loads(path.read_text())["selection"]["chosen"] == 1e-3


def test_a_preset_can_make_its_own_selection(tmp_path, capsys):
    from lengthbench.benchmark.presets import PRESETS, register_preset

    register_preset(replace(PRESETS["smoke"], name="smoke-select", tasks=("parity_check",), encodings=("rope",),
                            select="lr=1e-3,3e-3"))
    try:
        results = tmp_path / "res"
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--plan"]) == 0
        out = capsys.readouterr().out
        assert "selection: lr=0.001,0.003 (the preset's own select): the grid trains once per value" in out
        assert out.count("= 1 runs; 0 stored (reused), 1 to run") == 2 and "lr=0.003: plan for preset" in out
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--no-progress",
                     "--workers", "1"]) == 0
        [path] = results.glob("parity_check__rope__seed0__*.json")
        assert json.loads(path.read_text())["selection"]["values"] == [1e-3, 3e-3]
        # the plan tells the truth: each value's run is stored now, and --force would run both again
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--plan"]) == 0
        assert capsys.readouterr().out.count("= 1 runs; 1 stored (reused), 0 to run") == 2
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--plan", "--force"]) == 0
        assert capsys.readouterr().out.count("--force: every run is run again, none reused, 1 to run") == 2
        # a --select of the user's is validated and priced the same way
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--plan", "--select",
                     "lr=1e-3,2e-3,4e-3"]) == 0
        out = capsys.readouterr().out
        assert "(--select)" in out and out.count("plan for preset") == 3
        assert main(["run", "--preset", "smoke-select", "--results", str(results), "--plan", "--select", "lr=x"]) == 2
    finally:
        PRESETS.remove("smoke-select")
