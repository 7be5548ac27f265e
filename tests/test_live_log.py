"""``run --log tensorboard``: each run's training written as it runs, read
back from TensorBoard's own event files; nothing written without it; a log
that cannot be written is refused before any run starts."""

from __future__ import annotations

import sys

import pytest

from lengthbench.api import run
from lengthbench.cli import main
from lengthbench.core.errors import InputError


def _scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_each_run_writes_its_loss_learning_rate_fit_checks_and_scores_as_tensorboard_events(tiny_preset, tmp_path):
    board = run("tiny", results=tmp_path, progress=False, live_log="tensorboard", settings={"fit_check_every": 2})
    trained = board[board.status == "ok"]
    logs = sorted((tmp_path / "logs").iterdir())
    assert len(logs) == int(trained.n_seeds.sum())  # one folder per trained run, named by its run id
    assert {folder.name for folder in logs} <= {p.stem for p in tmp_path.glob("*__seed*__*.json")}
    scalars = _scalars(logs[0])
    assert [step for step, _ in scalars["train/loss"]] == [1, 2, 3]  # every step, as it trained
    assert all(value > 0 for _, value in scalars["train/learning_rate"])
    assert [step for step, _ in scalars["fit/held_out_exact_match"]] == [2]
    assert "test/ood_exact_match" in scalars


def test_without_log_nothing_is_written_and_a_log_that_cannot_be_written_is_refused(tiny_preset, tmp_path,
                                                                                       monkeypatch, capsys):
    run("tiny", results=tmp_path / "plain", progress=False)
    assert not (tmp_path / "plain" / "logs").exists()
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # not installed
    with pytest.raises(InputError, match="--log tensorboard needs the tensorboard package: pip install tensorboard"):
        run("tiny", results=tmp_path / "missing", progress=False, live_log="tensorboard")
    assert not list((tmp_path / "missing").glob("*.json"))  # refused before any run
    with pytest.raises(SystemExit) as refused:
        main(["run", "--preset", "tiny", "--log", "wandb", "--results", str(tmp_path / "x")])
    assert refused.value.code == 2 and "invalid choice: 'wandb' (choose from 'tensorboard')" in capsys.readouterr().err
