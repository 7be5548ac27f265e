"""Grid runner, run records and resume."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lengthbench.benchmark import executors as executors_module
from lengthbench.benchmark import runner as runner_module
from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.grid import grid_configs, run_grid
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RunRecord, read_record
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.cli import main


def test_grid_writes_records_and_resume_skips(tmp_path, tiny_preset, monkeypatch):
    records = run_grid(tiny_preset, tmp_path, progress=False)
    assert len(records) == 4 and len(list(tmp_path.glob("*.json"))) == 4
    statuses = {(r.task, r.encoding): r.status for r in records}
    assert statuses[("parity_check", "coupled")] == "not_applicable"
    assert statuses[("copy", "coupled")] == "ok"

    def no_training(*a, **k):
        raise AssertionError("a finished run was executed again")

    monkeypatch.setattr(runner_module, "execute_run", no_training)
    again = run_grid(tiny_preset, tmp_path, progress=False)
    assert again == records


def test_force_reruns(tmp_path, tiny_preset, monkeypatch):
    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope"])
    run_grid(preset, tmp_path, progress=False)
    calls = []
    real = runner_module.execute_run
    monkeypatch.setattr(runner_module, "execute_run", lambda c, *a, **k: calls.append(c) or real(c, *a, **k))
    run_grid(preset, tmp_path, force=True, progress=False)
    assert len(calls) == 1


def test_error_cell_is_recorded_not_fatal(tmp_path, tiny_preset, monkeypatch):
    import lengthbench.benchmark.runner as runner

    real_train = runner.train_run

    def flaky(model, task, config, *a, **k):
        if task.name == "copy":
            raise RuntimeError("boom in copy")
        return real_train(model, task, config, *a, **k)

    monkeypatch.setattr(runner, "train_run", flaky)
    preset = tiny_preset.with_grid(encodings=["nope"])
    records = run_grid(preset, tmp_path, progress=False)
    by_task = {r.task: r for r in records}
    assert by_task["copy"].status == "error" and "boom in copy" in by_task["copy"].error
    assert by_task["parity_check"].status == "ok"


def test_record_round_trips(tmp_path, tiny_preset):
    record = run_grid(tiny_preset.with_grid(tasks=["copy"], encodings=["nope"]), tmp_path,
                      progress=False)[0]
    path = tmp_path / f"{record.run_id}.json"
    assert read_record(path) == record
    stored = json.loads(path.read_text())
    assert stored == record.to_json()
    config = RunConfig.from_dict(stored["config"])
    assert config.run_id == stored["run_id"] == record.run_id
    assert config == grid_configs(tiny_preset.with_grid(tasks=["copy"], encodings=["nope"]))[0]
    for key in ("code_version", "torch_version", "device", "wall_time_s", "per_length", "summary",
                "training", "method", "task", "encoding", "seed", "config_hash"):
        assert key in stored
    lengths = [m["length"] for m in record.per_length]
    assert lengths == list(range(1, 8))
    # the kernel level torch ran on: runs are bit-reproducible only on the same level
    assert stored["host"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("crash", [KeyboardInterrupt, lambda: OSError(28, "No space left on device")])
def test_a_write_that_dies_half_way_leaves_the_old_record_whole(crash, tmp_path, monkeypatch):
    """The process is killed (or the disk fills) after half of the new record is
    written: the old record stays complete and no temp file is left behind."""
    old = RunRecord(get_preset("smoke").run_config("copy", "nope", 0), "v", "t", "cpu", {}, "now", status="ok")
    ResultsFolder(tmp_path).write(old)
    name = f"{old.run_id}.json"
    real_write_text = Path.write_text

    def dies_half_way(self, text, *args, **kwargs):
        real_write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise crash()

    monkeypatch.setattr(Path, "write_text", dies_half_way)
    with pytest.raises((KeyboardInterrupt, OSError)):
        ResultsFolder(tmp_path).write(replace(old, status="error", error="x" * 10_000))
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert json.loads((tmp_path / name).read_text()) == old.to_json()


def test_eval_lengths_include_first_ood_length():
    config = get_preset("quick").run_config("copy", "nope", 0)
    config = RunConfig.from_dict({**config.to_dict(), "eval_stride": 4, "train_length": 10,
                                  "test_length": 30})
    lengths = config.eval_lengths()
    assert {10, 11, 30} <= set(lengths) and lengths == sorted(lengths)


@pytest.mark.parametrize("bad", ["copyy", "rev"])
def test_unknown_task_clear_error(tiny_preset, bad):
    with pytest.raises(ValueError, match=rf"unknown task '{bad}'.*; valid choices: .*copy"):
        tiny_preset.run_config(bad, "nope", 0)


def test_summary_includes_first_ood_length():
    """The reference code's average skipped the first OOD length; ours does
    not (the first test length here, with and without a validation band)."""
    from lengthbench.benchmark.records import summarize

    rows = [{"length": n, "status": "ok", "exact_match": float(n == 6), "token_accuracy": 0.5}
            for n in range(1, 9)]
    config = replace(get_preset("smoke").run_config("copy", "nope", 0), train_length=5, validation_length=0)
    summary = summarize(rows, config)
    assert summary["ood_exact_match"] == pytest.approx(1 / 3)
    assert summary["id_exact_match"] == 0.0
    assert "val_exact_match" not in summary
    banded = summarize([{**r, "exact_match": float(r["length"] == 7)} for r in rows],
                       replace(config, validation_length=6))
    assert banded["val_exact_match"] == 0.0
    assert banded["ood_exact_match"] == pytest.approx(1 / 2)


def test_evaluation_has_dropout_off(tiny_preset):
    """Dropout stays on at evaluation in the reference code; not here."""
    from dataclasses import replace

    import torch

    from lengthbench.benchmark.evaluate import evaluate
    from lengthbench.tasks import get_task

    config = tiny_preset.run_config("copy", "nope", 0)
    config = replace(config, model=replace(config.model, dropout=0.5))
    task = get_task("copy")
    model = config.build_model(task.vocab_size)
    model.train()
    first = evaluate(model, task, config, torch.device("cpu"))
    assert not model.training
    model.train()
    assert evaluate(model, task, config, torch.device("cpu")) == first


def test_a_table_too_short_refuses_the_cell_and_evaluation_never_crashes_on_it(tiny_preset):
    """A learned table shorter than the test sequences: the cell is n/a with
    the reason (never trained and scored 0 at its long lengths); evaluation
    itself still records such a length as unsupported, not a crash."""
    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["learned"])
    preset = preset.__class__(**{**preset.__dict__, "encoding_params": {"learned": {"max_positions": 12}}})
    from lengthbench.benchmark.device import default_device
    from lengthbench.benchmark.evaluate import evaluate_length
    from lengthbench.benchmark.runner import execute_run
    from lengthbench.tasks import get_task

    config = grid_configs(preset)[0]
    record = execute_run(config, default_device())
    assert record.status == "not_applicable" and "has 12 positions but position" in record.reason
    model = config.build_model(get_task("copy").vocab_size)
    assert evaluate_length(model, get_task("copy"), 5, config, default_device())["status"] == "ok"
    assert evaluate_length(model, get_task("copy"), 7, config, default_device())["status"] == "unsupported"


def test_dead_worker_is_recorded(tmp_path, tiny_preset, monkeypatch):
    """A worker process that dies becomes an error record; the grid finishes."""
    from concurrent.futures import Future

    class DyingPool:
        def __init__(self, *a, **k):
            pass

        def shutdown(self, *a, **k):
            pass

        def submit(self, job, config, progress=None):
            future = Future()
            if config.task == "copy":
                future.set_exception(RuntimeError("worker killed"))
            else:
                future.set_result(job(config))
            return future

    monkeypatch.setattr(executors_module, "ProcessPoolExecutor", DyingPool)
    records = run_grid(tiny_preset.with_grid(encodings=["nope"]), tmp_path, workers=2, progress=False)
    by_task = {r.task: r for r in records}
    assert by_task["copy"].status == "error" and "worker killed" in by_task["copy"].error
    assert by_task["parity_check"].status == "ok"


def test_adding_seeds_to_stored_runs_builds_a_leaderboard(tmp_path, tiny_preset):
    """Stored records (read back from JSON) and fresh ones of the same cell
    must count as the same settings."""
    from lengthbench.leaderboard.aggregate import leaderboard_frame

    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope"])
    run_grid(preset.with_grid(seeds=[0]), tmp_path, progress=False)
    records = run_grid(preset.with_grid(seeds=[0, 1]), tmp_path, progress=False)
    board = leaderboard_frame(records)
    assert board.n_seeds.tolist() == [2]


def test_mixed_settings_are_refused(tmp_path, tiny_preset, capsys):
    from dataclasses import replace

    from lengthbench.leaderboard.aggregate import MixedConfigError, leaderboard_frame

    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope"])
    first = run_grid(preset, tmp_path / "a", progress=False)
    other = replace(preset, settings={**preset.settings, "steps": 4}).with_grid(seeds=[1])
    second = run_grid(other, tmp_path / "b", progress=False)
    with pytest.raises(MixedConfigError, match="runs of copy/transformer/nope use different settings"):
        leaderboard_frame(first + second)
    for record in second:  # the CLI: one line, exit 2
        ResultsFolder(tmp_path / "a").write(record)
    assert main(["leaderboard", "--results", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lengthbench: error: runs of copy/transformer/nope use different")


def test_the_cpu_description_counts_its_threads_in_words():
    import torch

    from lengthbench.benchmark.device import device_description

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert device_description(torch.device("cpu")) == "cpu (1 thread)"
        torch.set_num_threads(2)
        assert device_description(torch.device("cpu")) == "cpu (2 threads)"
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_a_pool_shows_the_steps_of_the_runs_its_workers_train(tmp_path):
    """The grid's bar counts finished runs; below it, each worker's run counts its steps as it trains (the bar
    once sat at 0/N for minutes on `quick`)."""
    import re
    import subprocess
    import sys

    argv = [sys.executable, "-m", "lengthbench", "run", "--preset", "smoke", "--tasks", "copy,parity_check",
            "--encodings", "nope", "--set", "steps=300", "--results", str(tmp_path / "r"), "--workers", "2"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    steps = {(task, int(done)) for task, done in re.findall(r"train (\w+)/transformer/nope:.*?\| *(\d+)/300", out.stderr)}
    assert {task for task, _ in steps} == {"copy", "parity_check"}  # each worker's run, drawn by the driver
    assert "starts the grid at its top level" not in out.stderr  # python -m lengthbench: a pool, not one process
