"""A run's raw predictions (``run --save-predictions``): kept beside the record
without changing it, read back as instances with their predictions, and
rescored to the record's own numbers."""

from __future__ import annotations

import json
import shutil
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

import lengthbench
from lengthbench.benchmark.evaluate import evaluate_at
from lengthbench.benchmark.instances import _AnyModel, evaluation_instances, score_predictions
from lengthbench.benchmark.predictions import read_predictions
from lengthbench.cli import main
from lengthbench.core.errors import InputError
from lengthbench.tasks import get_task

GRID = dict(tasks=["copy", "parity_check", "addition-index-hints"], encodings=["nope", "coupled"], workers=1,
            progress=False)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A smoke grid trained with its predictions kept, and the same grid without."""
    root = tmp_path_factory.mktemp("predictions")
    lengthbench.run("smoke", results=root / "with", save_predictions=True, **GRID)
    lengthbench.run("smoke", results=root / "without", **GRID)
    return root


def _records(folder: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in folder.glob("*__seed*.json")}


@pytest.mark.slow
def test_predictions_rescore_to_the_records_numbers_and_leave_the_records_as_they_were(saved):
    with_, without = _records(saved / "with"), _records(saved / "without")
    assert with_.keys() == without.keys() and len(with_) == 6
    trained = [name for name, record in with_.items() if record["status"] == "ok"]
    assert len(trained) == 5  # coupled is n/a on parity_check: no predictions
    for name in with_:
        assert "predictions" not in with_[name]
        assert with_[name].get("per_length") == without[name].get("per_length")  # the flag changes no number
        path = saved / "with" / "predictions" / name.replace(".json", ".npz")
        assert path.exists() == (name in trained)
        if name not in trained:
            continue
        record = with_[name]
        table = lengthbench.score(record["task"], path)
        assert table.exact_match.tolist() == [r["exact_match"] for r in record["per_length"]]
        assert np.allclose(table.token_accuracy, [r["token_accuracy"] for r in record["per_length"]], atol=1e-6)
        frame = lengthbench.load_predictions(path)
        assert len(frame) == sum(r["n_samples"] for r in record["per_length"])
        assert frame.groupby("length").exact.mean().round(6).tolist() == table.exact_match.tolist()
        assert set(frame.method) == {record["method"]} and set(frame.seed) == {record["seed"]}
        deltas = [abs(p - a) for ps, ans in zip(frame.prediction_ids, frame.answer_ids) for p, a in zip(ps, ans)]
        wide = max(deltas) > 127  # index hints: 527 tokens, differences past int8
        assert json.loads(str(np.load(path)["meta"]))["dtype"] == ("int16" if wide else "int8")


def test_the_command_line_keeps_and_rescores_predictions(saved, capsys, caplog):
    """run --save-predictions on a folder of records trained without it says which have none."""
    with caplog.at_level(logging.WARNING):
        assert main(["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--results",
                     str(saved / "without"), "--save-predictions", "--no-progress", "--workers", "1"]) == 0
    assert "1 of the grid's finished runs have no saved predictions" in caplog.text
    assert "--force retrains them" in caplog.text
    npz = next((saved / "with" / "predictions").glob("copy__nope__*.npz"))
    assert main(["score", "copy", str(npz)]) == 0
    assert "exact_match" in capsys.readouterr().out


def test_a_broken_or_foreign_predictions_file_is_refused_naming_it(saved, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="bad.npz is not a predictions file"):
        read_predictions(bad)
    npz = next((saved / "with" / "predictions").glob("copy__nope__*.npz"))
    with np.load(npz) as archive:
        meta, deltas = json.loads(str(archive["meta"])), archive["deltas"]
    meta["sizes"][2], meta["sizes"][3] = meta["sizes"][2] - 1, meta["sizes"][3] + 1  # lengths 3 and 4 miscounted
    shifted = tmp_path / "shifted.npz"
    np.savez(shifted, meta=np.array(json.dumps(meta)), deltas=deltas)
    with pytest.raises(InputError, match="at length 3, where the task's"):
        read_predictions(shifted)
    truncated = tmp_path / "truncated.npz"
    np.savez(truncated, meta=np.array(json.dumps(meta)), deltas=deltas[:-9])
    with pytest.raises(InputError, match="truncated.npz is not a predictions file"):
        read_predictions(truncated)
    with pytest.raises(InputError, match="task 'copy', not 'parity_check'"):
        lengthbench.score("parity_check", npz)


def test_an_example_with_a_non_finite_logit_is_kept_as_predicted_nothing():
    """Its predictions are -1 (no token), so rescoring counts it wrong, as the harness does."""
    task = get_task("copy")

    def logits(tokens):
        out = torch.nn.functional.one_hot(torch.roll(tokens, -1, 1), 16).float()  # the next token: always right
        out[0, :, :] = float("nan")
        return out

    kept = {}
    row = evaluate_at(_AnyModel(logits, task.vocab_size), task, 5, 7, 8, 4, torch.device("cpu"), predictions=kept)
    assert row["nonfinite"] == 1 and row["exact_match"] == pytest.approx(7 / 8)
    instances = evaluation_instances("copy", [5], 8, 7)
    answers = np.concatenate([i["answer_ids"] for i in instances])
    predicted = answers + kept[5]
    assert (predicted[:5] == -1).all() and (predicted[5:] == answers[5:]).all()
    lines = [(n, {**i, "prediction_ids": predicted[5 * (n - 1):5 * n].tolist()}) for n, i in enumerate(instances, 1)]
    [scored] = score_predictions("copy", lines)
    assert (scored["exact_match"], scored["token_accuracy"]) == (row["exact_match"], row["token_accuracy"])


def test_predictions_are_written_before_their_record(monkeypatch, tmp_path):
    """A record never names predictions that are missing: a failed write of the
    predictions leaves no record, and the run is retried (an error record is not written over)."""
    import lengthbench.benchmark.store as store

    def refuse(*args):
        raise OSError("disk full")

    monkeypatch.setattr(store, "write_predictions", refuse)
    with pytest.raises(OSError, match="disk full"):
        lengthbench.run("smoke", tasks=["copy"], encodings=["nope"], workers=1, progress=False,
                        results=tmp_path, save_predictions=True)
    assert not list(tmp_path.glob("*__seed*.json"))


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_predictions_heal_on_the_next_run_with_a_line_saying_so(saved, tmp_path, caplog, damage):
    """A truncated or corrupted predictions file is found by the next `run --save-predictions`: it and its record
    are set aside and the run trains again, writing both whole (the same numbers, the file readable again)."""
    folder = tmp_path / "r"
    shutil.copytree(saved / "with", folder)
    npz = next((folder / "predictions").glob("copy__nope__*.npz"))
    data = npz.read_bytes()
    npz.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:200] + b"\0" * 64 + data[264:])
    record = folder / npz.name.replace(".npz", ".json")
    before = json.loads(record.read_text())
    with caplog.at_level(logging.WARNING):
        assert main(["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--results", str(folder),
                     "--save-predictions", "--no-progress", "--workers", "1"]) == 0
    assert f"the saved predictions of {record.stem} are damaged" in caplog.text and "trains again" in caplog.text
    assert json.loads(record.read_text())["per_length"] == before["per_length"]
    assert lengthbench.score("copy", npz).exact_match.tolist() == [r["exact_match"] for r in before["per_length"]]
    assert (npz.parent / (npz.name + ".invalid")).exists() and (folder / (record.name + ".invalid")).exists()
