"""What `run` and `submit` do with every outcome a cell can have: invalid
stored records, grids where nothing finished, failed cells, renamed
submissions trained by pool workers."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

import lengthbench.benchmark.plan as plan
import lengthbench.benchmark.runner as runner
import lengthbench.benchmark.tools.plan_check as plan_check
from lengthbench.benchmark.grid import run_grid
from lengthbench.benchmark.presets import PRESETS
from lengthbench.cli import main
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.schema import read_leaderboard

FAILS_IN_TRAINING = """
from lengthbench.models.encodings import PositionEncoding, register_encoding


@register_encoding("fails-in-training")
class FailsInTraining(PositionEncoding):
    '''Passes the contract (batches of at most 4) but raises on a real training batch.'''

    def positions(self, pos, ctx):
        if ctx.batch_size > 4:
            raise RuntimeError("this encoding breaks on real batches")
        return pos
"""


@pytest.fixture
def tiny(monkeypatch, tiny_preset):
    return ["--preset", "tiny", "--no-progress", "--workers", "1"]


def test_invalid_stored_record_is_set_aside_and_rerun(tmp_path, tiny, caplog):
    results = tmp_path / "res"
    assert main(["run", *tiny, "--results", str(results)]) == 0
    nope, coupled = (next(results.glob(f"copy__{e}__seed0__*.json")) for e in ("nope", "coupled"))
    coupled.write_text(nope.read_text())  # a record copied over another cell's file
    assert main(["run", *tiny, "--results", str(results)]) == 0
    assert f"invalid record {coupled}: holds the record of run copy__nope" in caplog.text
    assert json.loads(coupled.read_text())["encoding"] == "coupled"  # rerun, right cell
    assert (coupled.parent / (coupled.name + ".invalid")).read_text() == nope.read_text()
    board = read_leaderboard(results / "leaderboard.csv")
    assert board.set_index(["task", "encoding"]).loc[("copy", "nope"), "n_seeds"] == 1


def test_records_listed_twice_count_once(tmp_path, tiny_preset):
    records = run_grid(tiny_preset.with_grid(tasks=["copy"], encodings=["nope"]), tmp_path, progress=False)
    board = leaderboard_frame(records + records)
    assert board.n_seeds.tolist() == [1] and pd.isna(board.ood_exact_match_std.item())


@pytest.mark.parametrize("outcome", ["not_applicable", "error", "diverged"])
def test_grid_where_no_run_finished_still_gets_a_leaderboard(tmp_path, tiny, monkeypatch, outcome, capsys):
    from lengthbench.benchmark.train import TrainResult

    if outcome == "error":
        monkeypatch.setattr(runner, "train_run", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    if outcome == "diverged":
        monkeypatch.setattr(runner, "train_run",
                            lambda *a, **k: TrainResult(2, True, [1.0], float("nan"), [1.0], "diverged"))
    encodings = "coupled" if outcome == "not_applicable" else "nope,coupled"
    out = tmp_path / "res"
    (out / "accuracy_vs_length.png").parent.mkdir()
    (out / "accuracy_vs_length.png").write_bytes(b"a figure of another grid")
    code = main(["run", *tiny, "--tasks", "parity_check", "--encodings", encodings, "--results", str(out)])
    assert code == (1 if outcome == "error" else 0)
    board = read_leaderboard(out / "leaderboard.csv")
    expected = {"not_applicable": {"not_applicable"}, "error": {"failed", "not_applicable"},
                "diverged": {"failed", "not_applicable"}}[outcome]
    assert set(board.status) == expected and board.ood_exact_match_mean.isna().all()
    assert not (out / "accuracy_vs_length.png").exists()
    assert (out / "leaderboard_heatmap.png").exists()
    err = capsys.readouterr().err
    if outcome == "error":
        assert "run parity_check/transformer/nope seed 0 failed: RuntimeError: boom" in err
        assert err.strip().splitlines()[-1].startswith("lengthbench: error: 1 of 2 runs ended in error")


def test_run_and_submit_exit_nonzero_when_a_cell_errors(tmp_path, tiny, capsys):
    plugin = tmp_path / "fails.py"
    plugin.write_text(FAILS_IN_TRAINING)
    results = tmp_path / "res"
    assert main(["run", *tiny, "--encodings", "nope,fails-in-training", "--plugin", str(plugin),
                 "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert "run copy/transformer/fails-in-training seed 0 failed: RuntimeError: this encoding breaks on real batches" in err
    assert "lengthbench: error: 2 of 4 runs ended in error" in err.strip().splitlines()[-1]
    assert main(["submit", str(plugin), *tiny, "--results", str(results)]) == 1
    assert "runs ended in error" in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.slow
def test_submit_name_reaches_pool_workers(tmp_path, monkeypatch, tiny_preset, capsys):
    """`--name` used to exist in the main process only: every pool worker
    failed to find the renamed encoding and the submission was all errors."""
    PRESETS.replace("tiny", tiny_preset.with_grid(encodings=["nope"]))
    example = Path(__file__).resolve().parent.parent / "examples" / "log_decay_sink.py"
    results = tmp_path / "res"
    assert main(["submit", str(example), "--preset", "tiny", "--name", "my-sink", "--workers", "2",
                 "--results", str(results), "--no-progress"]) == 0
    records = [json.loads(p.read_text()) for p in results.glob("*__my-sink__seed0__*.json")]
    assert len(records) == 2 and {r["status"] for r in records} == {"ok"}
    submission = read_leaderboard(results / "submission-my-sink.csv")
    assert set(submission.status) == {"ok"} and "my-sink: rank per task" in capsys.readouterr().out


@pytest.mark.slow
def test_plan_estimates_without_training_or_writing(tmp_path, tiny, monkeypatch, capsys):
    results = tmp_path / "res"
    argv = ["run", *tiny, "--results", str(results), "--plan"]
    real = runner.execute_run
    monkeypatch.setattr(runner, "execute_run", lambda *a, **k: pytest.fail("--plan trained"))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 tasks x 2 methods x 1 seeds = 4 runs; 0 stored (reused), 4 to run (1 of them n/a" in out
    assert "| copy | transformer | 2 | 3 |" in out and "estimated wall time on this machine:" in out
    assert re.search(r"at a load average of \d+\.\d on \d+ cores; the estimate assumes that load throughout", out)
    assert "1 worker process(es) side by side, each training one run at a time" in out
    assert "lengths: train 1..5, validation 6..6, test 7..7; budget: 3 steps" in out
    assert main(["run", "--preset", "full", "--tasks", "copy", "--encodings", "rope", "--models", "transformer",
                 "--results", str(results), "--plan"]) == 0
    assert ("budget: until fit (held-out ID exact match >= 0.9 at 2 checks in a row, every 250 steps), at most "
            "1500 steps") in capsys.readouterr().out
    assert main(["run", "--preset", "horizon", "--tasks", "multiplication", "--encodings", "coupled,learned",
                 "--models", "transformer,lstm", "--results", str(results), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "1 tasks x 3 methods x 3 seeds, less 6 cut = 3 runs" in out
    assert out.count("\ncut: ") == 2 and "cut: rnn, lstm, stack-rnn, tape-rnn on " in out and "Chomsky tasks" in out
    assert "budget: 4000 steps (the fit logged every 500, never stopping a run)" in out
    # a task label in a format is counted as a label of its task, not as another task
    assert main(["run", "--preset", "horizon", "--tasks", "addition,addition-index-hints", "--encodings", "rope",
                 "--models", "transformer", "--results", str(results), "--plan"]) == 0
    assert ("2 task labels (1 tasks, 1 of the labels a task in another format than plain) x 1 methods"
            in capsys.readouterr().out)
    assert not results.exists()
    monkeypatch.setattr(runner, "execute_run", real)
    assert main(["run", *tiny, "--results", str(results)]) == 0
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 stored (reused), 0 to run" in out
    assert "nothing to train: every run of the grid is stored" in out and "| task |" not in out  # no empty table
    monkeypatch.delattr(os, "getloadavg")  # a system without it: the estimate says other load lengthens it
    assert main(["run", *tiny, "--results", str(tmp_path / "other"), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "s; other load on the machine makes the grid longer)" in out and "load average" not in out


def test_plan_check_sets_each_finished_run_beside_its_prediction(tmp_path, tiny, monkeypatch, capsys):
    """The prediction is the calibrated training cut at the steps the run took, plus evaluation."""
    results = tmp_path / "res"
    assert main(["run", *tiny, "--results", str(results)]) == 0
    capsys.readouterr()
    for path, steps_done, wall in [(next(results.glob("copy__nope__*.json")), 1, 22.0),
                                   (next(results.glob("copy__coupled__*.json")), 3, 20.0),
                                   (next(results.glob("parity_check__nope__*.json")), 3, 62.0)]:
        data = json.loads(path.read_text())
        data["training"]["steps_done"], data["wall_time_s"] = steps_done, wall
        path.write_text(json.dumps(data))
    monkeypatch.setattr(plan_check, "calibrate", lambda config: (30.0, 1.0))  # 3 steps in 30 s, eval 1 s
    assert plan_check.main(["--results", str(results), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "| copy | transformer | 2 | " in out and "| 21.0 | 21.0 | 1.00 |" in out
    assert "| parity_check | transformer | 1 | " in out and "| 62.0 | 31.0 | 2.00 |" in out
    assert "all 3 runs: measured " in out
    assert plan_check.main(["--results", str(results), "--tasks", "bucket_sort"]) == 2
    err = capsys.readouterr().err
    assert "lengthbench: error: " in err and "holds no finished trained record of tasks bucket_sort" in err
    assert plan_check.main(["--results", str(results), "--tasks", "bucket-sort"]) == 2
    assert "unknown task 'bucket-sort' (did you mean 'bucket_sort'?); valid choices: addition," in capsys.readouterr().err


@pytest.fixture
def nan_when_long():
    """An encoding whose outputs are NaN at evaluation from position 9 on (fine in training)."""
    from lengthbench.models.encodings import ENCODINGS, PositionEncoding, register_encoding

    @register_encoding("test-nan-long")
    class NanWhenLong(PositionEncoding):
        def embed(self, h, pos):
            if self.training:
                return h
            return torch.where((pos >= 9)[..., None], torch.full_like(h, float("nan")), h)

    yield "test-nan-long"
    ENCODINGS.remove("test-nan-long")


def test_non_finite_outputs_are_counted_and_the_seed_counts_as_failed(tmp_path, tiny_preset, nan_when_long):
    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope", nan_when_long], seeds=[0, 1])
    records = run_grid(preset, tmp_path, progress=False)
    broken = [r for r in records if r.encoding == nan_when_long]
    for record in broken:
        rows = {row["length"]: row for row in record.per_length}
        assert "nonfinite" not in rows[3] and rows[7]["nonfinite"] == rows[7]["n_samples"]  # 3 + 3 tokens < 9
        assert rows[7]["exact_match"] == 0 and record.failed and record.summary["nonfinite_lengths"] > 0
    assert all("nonfinite_lengths" not in r.summary and not r.failed for r in records if r.encoding == "nope")
    board = leaderboard_frame(records).set_index("method")
    cell = board.loc[f"transformer/{nan_when_long}"]
    assert cell.status == "failed" and cell.n_failed == 2 and cell.n_seeds == 0  # no clean seed


def test_a_failed_seed_counts_as_zero_and_says_so_everywhere(tmp_path, tiny_preset):
    from dataclasses import replace

    from lengthbench.leaderboard.tables import to_markdown

    records = run_grid(tiny_preset.with_grid(tasks=["copy"], encodings=["nope"], seeds=[0, 1, 2]), tmp_path,
                       progress=False)
    clean = leaderboard_frame(records).iloc[0]
    diverged = replace(records[2], status="diverged", per_length=None, summary=None)
    errored = replace(records[1], status="error", error="RuntimeError: boom", per_length=None, summary=None)
    cell = leaderboard_frame([records[0], records[1], diverged]).iloc[0]
    kept = [r.summary["ood_exact_match"] for r in records[:2]]
    assert cell.n_seeds == 3 and cell.n_failed == 1 and cell.n_errors == 0
    assert cell.ood_exact_match_mean == pytest.approx(sum(kept) / 3)  # the failed seed is a 0, not left out
    assert cell.ood_exact_match_max == max(kept) and cell.status == "ok"
    with_error = leaderboard_frame([records[0], errored, records[2]]).iloc[0]
    assert with_error.n_seeds == 2 and with_error.n_errors == 1 and with_error.n_failed == 0  # not scored
    text = to_markdown(leaderboard_frame([records[0], records[1], diverged]))
    assert "(1 of 3 failed, did not fit)" in text and "counts as 0" in text  # 3 steps: nothing fits
    assert "failed" not in to_markdown(leaderboard_frame(records)) and clean.n_failed == 0


def test_a_quiet_sample_reruns_one_method_per_kind_beside_its_plan_and_a_readme_states_it(tmp_path, tiny_preset,
                                                                                          monkeypatch):
    """``plan_check --sample``: one run per kind of model --plan calibrates, priced then run; a reference
    folder holding the result as ``plan-check/`` states the plan beside the measured time in its README."""
    from lengthbench.benchmark.records import read_record
    from lengthbench.leaderboard.aggregate import leaderboard_frame
    from lengthbench.leaderboard.reference_notes import reference_readme

    preset = replace(tiny_preset, encodings=("nope", "coupled", "alibi"), families=("transformer", "lstm"))
    assert plan_check.sample_grid(preset, ("copy",)).methods() == [("transformer", "nope"), ("transformer", "alibi"),
                                                                   ("lstm", "")]
    # every shape calibrated alike, so each price counts its runs: two real calibrations on a loaded
    # machine differ by more than the whole grid's 7 runs against the sample's 3
    monkeypatch.setattr(plan, "calibrate", lambda config: (0.01, 0.002))
    check = plan_check.quiet_sample(preset, ("copy",), tmp_path / "plan-check", workers=1)
    written = json.loads((tmp_path / "plan-check" / "plan-check.json").read_text())
    assert written == check and check["rerun"]["runs"] == 3 and check["plan"]["run_time_one_worker_s"] > 0
    assert check["whole_grid"]["run_time_one_worker_s"] == pytest.approx(check["plan"]["run_time_one_worker_s"] * 7 / 3,
                                                                        rel=1e-2)
    records = [read_record(p) for p in sorted((tmp_path / "plan-check" / "records").glob("*__seed*.json"))]
    text = reference_readme("tiny", records, leaderboard_frame(records), tmp_path, rebuild="(rebuild)")
    assert "`--plan` against a quiet rerun (`plan-check/`)" in text and "A sample of 3 of its runs" in text
    assert "The same 3 runs' records here took" in text
