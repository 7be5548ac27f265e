"""Checkpoints: a run killed with SIGKILL half-way resumes from its last
checkpoint (the step it saved, not step 0) and ends with the record an
uninterrupted run gets."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent

STEPS = 600  # about 4 s of training on one thread: ample time to kill it between checkpoints

SCRIPT = textwrap.dedent(f"""
    import sys
    from dataclasses import replace
    import lengthbench.cli as cli
    from lengthbench.benchmark.presets import PRESETS, register_preset
    base = PRESETS["smoke"]
    register_preset(replace(base, name="long", tasks=("copy",), encodings=("randomized-rope",),
                            settings={{**base.settings, "steps": {STEPS}}}))
    if __name__ == "__main__":
        sys.exit(cli.main(sys.argv[1:]))
""")


def _run(tmp_path: Path, results: Path) -> subprocess.Popen:
    script = tmp_path / "lb.py"
    script.write_text(SCRIPT)
    argv = [sys.executable, str(script), "-v", "run", "--preset", "long", "--results", str(results), "--workers", "1",
            "--no-progress", "--checkpoint-every", "0.2"]
    # one thread each: the test runs two of these side by side on 2 cores
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "OMP_NUM_THREADS": "1"})


def _next_checkpoint(results: Path, proc: subprocess.Popen, after: int | None) -> int:
    """Wait for a checkpoint file other than ``after`` (an inode: each save
    renames a new file into place) and return its inode; the run must still
    be training."""
    deadline = time.monotonic() + 600  # a bound against a hang only (the machine may be loaded)
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed mid-training"
        for path in (results / "checkpoints").glob("*.pt"):
            try:
                inode = path.stat().st_ino
            except FileNotFoundError:  # replaced while listed
                continue
            if inode != after:
                return inode
        time.sleep(0.02)
    raise AssertionError("no checkpoint within 600 s")


def _record(results: Path) -> dict:
    [path] = results.glob("copy__*.json")
    return json.loads(path.read_text())


@pytest.mark.slow
def test_a_killed_run_resumes_from_its_checkpoint_to_the_same_record(tmp_path):
    whole = tmp_path / "whole"
    uninterrupted = _run(tmp_path, whole)  # side by side with the run to kill: the same record, less waiting

    results = tmp_path / "killed"
    proc = _run(tmp_path, results)
    # Killed right after its second checkpoint (the newest one is what must resume), by events, not a
    # blind sleep: a fixed wait let an unloaded run finish before the kill, a loaded test process wake late.
    first = _next_checkpoint(results, proc, after=None)
    _next_checkpoint(results, proc, after=first)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    [saved] = (results / "checkpoints").glob("*.pt")
    saved_step = torch.load(saved, weights_only=True)["step"]
    assert 0 < saved_step < STEPS
    assert not list(results.glob("copy__*.json"))  # it died mid-training

    resumed = _run(tmp_path, results)
    _, log = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, log
    [step] = re.findall(rf"resumed from its checkpoint at step (\d+) of {STEPS}", log)
    assert int(step) == saved_step  # it went on from the saved state, not from step 0
    assert uninterrupted.wait(timeout=900) == 0
    first, again = _record(whole), _record(results)
    for key in ("per_length", "summary", "training"):
        assert again[key] == first[key], key
    assert not (results / "checkpoints").exists()  # deleted once the record is written
    assert not list(results.glob("*.claim"))


# --- failing safe: a checkpoint never costs a run ---------------------------------------------------------------

def _config():
    from dataclasses import replace

    from lengthbench.benchmark.presets import get_preset

    return replace(get_preset("smoke").run_config("copy", "rope", 0), steps=40)


def _train(config, results, every_s=1e9):
    from lengthbench.benchmark.checkpoints import Checkpoint
    from lengthbench.benchmark.train import train_run
    from lengthbench.tasks import get_task

    task, cpu = get_task("copy"), torch.device("cpu")
    checkpoint = Checkpoint(results, config.run_id, every_s)
    return train_run(config.build_model(task.vocab_size), task, config, cpu, checkpoint=checkpoint), checkpoint


class Pickled:
    """Not a tensor: the safe loader refuses it (it would run code on load)."""


def _damage(kind: str, path: Path, run_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "truncated":
        torch.save({"step": 5, "model": {}, "run_id": run_id}, path)
        path.write_bytes(path.read_bytes()[:40])
    elif kind == "not-torch":
        path.write_text("this is not a checkpoint\n")
    elif kind == "missing-keys":
        torch.save({"step": 5, "run_id": run_id}, path)
    elif kind == "no-run":
        torch.save({k: [] for k in ("step", "model", "optimizer", "data_rng", "position_rng", "losses")}, path)
    elif kind == "refused-pickle":
        torch.save({"step": 5, "run_id": run_id, "payload": Pickled()}, path)
    elif kind == "bad-state":
        torch.save({**{k: [] for k in ("step", "model", "optimizer", "data_rng", "position_rng", "losses")},
                    "run_id": run_id}, path)


@pytest.mark.parametrize("kind", ["truncated", "not-torch", "missing-keys", "no-run", "refused-pickle", "bad-state"])
def test_an_unloadable_checkpoint_is_set_aside_and_training_starts_over(tmp_path, kind, caplog):
    config = _config()
    clean, _ = _train(config, tmp_path / "clean")
    _, checkpoint = _train(config, tmp_path / "damaged", every_s=1e9)
    _damage(kind, checkpoint.path, checkpoint.run_id)
    with caplog.at_level(logging.WARNING):
        again, _ = _train(config, tmp_path / "damaged")
    assert again.step_losses == clean.step_losses  # from step 0, not an error
    assert not checkpoint.path.exists() and checkpoint.path.with_name(checkpoint.path.name + ".invalid").exists()
    warnings = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1 and str(checkpoint.path) in warnings[0]


def test_a_checkpoint_of_other_runs_is_ignored_with_a_warning(tmp_path, caplog):
    from dataclasses import replace

    config = _config()
    _, theirs = _train(replace(config, seed=1), tmp_path, every_s=0)  # saved every step
    assert theirs.path.exists()
    _, mine = _train(config, tmp_path / "unused")
    mine.path.parent.mkdir(parents=True, exist_ok=True)
    theirs_copy = (tmp_path / "checkpoints" / theirs.path.name).read_bytes()
    clean, _ = _train(config, tmp_path / "clean")
    target = tmp_path / "mine"
    (target / "checkpoints").mkdir(parents=True)
    (target / "checkpoints" / mine.path.name).write_bytes(theirs_copy)  # copied and renamed
    with caplog.at_level(logging.WARNING):
        again, _ = _train(config, target)
    assert again.step_losses == clean.step_losses
    assert any("holds another run" in r.getMessage() for r in caplog.records)


def test_a_checkpoint_of_the_stacked_trainer_still_resumes_and_is_removed(tmp_path, caplog):
    """Checkpoints written before runs stopped being groups hold ``run_ids``,
    a list of one: the run resumes from it, and its index still lets the
    finished run's checkpoint be deleted."""
    from lengthbench.benchmark.checkpoints import FOLDER, remove_finished

    config = _config()
    whole, _ = _train(config, tmp_path / "whole")
    (tmp_path / "old").mkdir()
    _, checkpoint = _train(config, tmp_path / "old", every_s=0)  # saved at every step, the last one kept
    state = torch.load(checkpoint.path, weights_only=True)
    state["run_ids"] = [state.pop("run_id")]
    torch.save(state, checkpoint.path)
    checkpoint.index.write_text(json.dumps({"run_ids": [config.run_id]}))
    with caplog.at_level(logging.INFO):
        again, _ = _train(config, tmp_path / "old")
    assert not any("cannot be used" in r.getMessage() or "another run" in r.getMessage() for r in caplog.records)
    assert any(f"resumed from its checkpoint at step {state['step']}" in r.getMessage() for r in caplog.records)
    assert again.step_losses == whole.step_losses
    remove_finished(tmp_path / "old", {config.run_id})
    assert not (tmp_path / "old" / FOLDER).exists()


@pytest.mark.slow
def test_a_checkpoint_that_cannot_be_written_never_loses_the_run(tmp_path):
    """A real file-size limit (ulimit -f): checkpoints fail to write, the run
    finishes with its record and one warning."""
    script = tmp_path / "lb.py"
    script.write_text(SCRIPT)
    results = tmp_path / "res"
    argv = [sys.executable, str(script), "run", "--preset", "long", "--results", str(results), "--workers", "1",
            "--no-progress", "--checkpoint-every", "0.05"]
    limit_kib = 60  # records and tables fit; the model and optimizer state does not
    done = subprocess.run(["bash", "-c", f"ulimit -f {limit_kib} && exec \"$@\"", "bash", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _record(results)["status"] == "ok"
    assert done.stderr.count("could not be written") == 1


def test_drivers_creating_and_removing_the_folder_do_not_break_each_other(tmp_path):
    """One driver keeps removing the folder when it is empty (its own runs
    finished) while another keeps creating it for new checkpoints."""
    from lengthbench.benchmark.checkpoints import Checkpoint, remove_finished

    stop, errors = threading.Event(), []

    def sweep():
        while not stop.is_set():
            try:
                remove_finished(tmp_path, set())
            except Exception as err:  # noqa: BLE001
                errors.append(err)

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    failed = []
    try:
        for i in range(300):
            checkpoint = Checkpoint(tmp_path, f"copy__nope__seed{i}__1", 0)
            checkpoint.save({"step": 1})
            failed += [i] if checkpoint.write_failed or not checkpoint.path.exists() else []
            remove_finished(tmp_path, {f"copy__nope__seed{i}__1"})
    finally:
        stop.set()
        sweeper.join()
    assert errors == [] and failed == []
