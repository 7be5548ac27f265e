"""``run --log tensorboard`` and ``--log wandb``: each run's training written
as it runs, read back from TensorBoard's own event files and from W&B's
offline run file; nothing written without it; a log that cannot be written
is refused before any run starts."""

from __future__ import annotations

import struct
import sys

import pytest
import torch

from lengthbench.api import run
from lengthbench.cli import main
from lengthbench.core.errors import InputError


def _scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.mark.slow
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


def _wandb_history(folder):
    """The history rows of the offline W&B run under ``folder``: its ``run-*.wandb`` file is a LevelDB-style
    log (a 7-byte header, then records of 7-byte headers in 32 KiB blocks) of W&B's protobuf records."""
    from wandb.proto import wandb_internal_pb2

    (path,) = folder.glob("wandb/offline-run-*/run-*.wandb")
    data, pos, parts, rows = path.read_bytes(), 7, b"", []
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk  # full or first; middle or last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): float(item.value_json)
                             for item in record.history.item})
    return rows


@pytest.mark.slow
def test_each_run_writes_the_same_scalars_to_an_offline_wandb_run(tiny_preset, tmp_path):
    pytest.importorskip("wandb")
    run("tiny", results=tmp_path, progress=False, live_log="wandb", settings={"fit_check_every": 2})
    logs = sorted((tmp_path / "logs").iterdir())
    assert logs and {folder.name for folder in logs} <= {p.stem for p in tmp_path.glob("*__seed*__*.json")}
    history = _wandb_history(logs[0])
    assert [int(row["_step"]) for row in history if "train/loss" in row] == [1, 2, 3]
    assert [int(row["_step"]) for row in history if "fit/held_out_exact_match" in row] == [2]
    assert any("test/ood_exact_match" in row for row in history)


@pytest.mark.slow
def test_without_log_nothing_is_written_and_a_log_that_cannot_be_written_is_refused(tiny_preset, tmp_path,
                                                                                       monkeypatch, capsys):
    run("tiny", results=tmp_path / "plain", progress=False)
    assert not (tmp_path / "plain" / "logs").exists()
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # not installed
    with pytest.raises(InputError, match="--log tensorboard needs the tensorboard package: pip install tensorboard"):
        run("tiny", results=tmp_path / "missing", progress=False, live_log="tensorboard")
    assert not list((tmp_path / "missing").glob("*.json"))  # refused before any run
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(InputError, match="--log wandb needs the wandb package: pip install wandb"):
        run("tiny", results=tmp_path / "missing", progress=False, live_log="wandb")
    with pytest.raises(SystemExit) as refused:
        main(["run", "--preset", "tiny", "--log", "mlflow", "--results", str(tmp_path / "x")])
    assert refused.value.code == 2 and "invalid choice: 'mlflow' (choose from 'tensorboard', 'wandb')" in \
        capsys.readouterr().err


def test_a_resumed_runs_tensorboard_log_holds_each_step_once(tmp_path):
    """Interrupted after its checkpoint at step 39 and at its fourth fit check (step 40), a run resumes at step 40:
    its event file, read as TensorBoard reads it, holds every step once (the steps after the checkpoint that
    the interrupted attempt logged are purged, not repeated)."""
    pytest.importorskip("tensorboard")
    from test_fit_budget import TASK, Scripted, _config

    from lengthbench.benchmark.checkpoints import Checkpoint
    from lengthbench.benchmark.live_log import open_live_log
    from lengthbench.benchmark.train import train_run

    config = _config(steps=60)
    checkpoint = Checkpoint(tmp_path, config.run_id, every_s=0)
    scores = [0.1, 0.1, 0.1, 0.95, 0.95]
    for attempt in (Scripted(scores, fail_at_call=4), Scripted(scores[3:])):
        log = open_live_log("tensorboard", tmp_path, config.run_id)
        try:
            train_run(config.build_model(TASK.vocab_size), TASK, config, torch.device("cpu"), checkpoint=checkpoint,
                      fit_check=attempt, live_log=log)
        except KeyboardInterrupt:
            assert checkpoint.load()["step"] == 39
        finally:
            log.close()
    scalars = _scalars(tmp_path / "logs" / config.run_id)
    assert [step for step, _ in scalars["train/loss"]] == list(range(1, 51))  # stopped at fit, step 50
    assert [step for step, _ in scalars["fit/held_out_exact_match"]] == [10, 20, 30, 40, 50]
