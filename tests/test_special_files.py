"""Only regular files are read: a FIFO, a device, a folder or a symlink to
one where a record, a claim, a checkpoint, a leaderboard CSV or a plugin
should be is refused by name without blocking, and a file far larger than
its kind ever is, before it is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--no-progress", "--workers", "1"]


def _lengthbench(*args: str) -> subprocess.CompletedProcess:
    """The CLI in its own process, with a deadline: a blocked open would hang it."""
    return subprocess.run([sys.executable, "-m", "lengthbench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def _last_line(done: subprocess.CompletedProcess) -> str:
    return done.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One small grid's folder, trained once for the module."""
    results = tmp_path_factory.mktemp("trained") / "r"
    done = _lengthbench(*SMOKE, "--results", str(results))
    assert done.returncode == 0, done.stderr
    return results


@pytest.fixture
def grid(trained, tmp_path):
    """A test's own copy of the trained folder, and its record."""
    results = Path(shutil.copytree(trained, tmp_path / "r"))
    [record] = results.glob("copy__nope__seed0__*.json")
    return results, record


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-fifo", "folder", "device", "huge"])
@pytest.mark.slow
def test_a_record_that_is_not_a_regular_file_is_refused_by_name(grid, kind):
    results, record = grid
    record.unlink()
    if kind == "fifo":
        os.mkfifo(record)
    elif kind == "symlink-to-fifo":
        os.mkfifo(results / "pipe")
        record.symlink_to(results / "pipe")
    elif kind == "folder":
        record.mkdir()
    elif kind == "device":
        record.symlink_to("/dev/zero")
    else:
        with open(record, "wb") as f:
            f.truncate(64 << 20)  # sparse: 64 MB that would be read into memory
    commands = ((SMOKE + ["--results", str(results)], "cannot be read"),
                (["leaderboard", "--results", str(results)], record.name))
    started = [subprocess.Popen([sys.executable, "-m", "lengthbench", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
               for args, _ in commands]  # side by side, one thread each: both only read
    for proc, (_, what) in zip(started, commands):
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err
        last = err.strip().splitlines()[-1]
        assert record.name in last and what in last
    assert not list(results.glob("*.invalid"))  # refused, not set aside


@pytest.mark.slow
def test_special_files_as_claims_and_checkpoints_never_block_a_run(tmp_path):
    from lengthbench.benchmark.checkpoints import Checkpoint
    from lengthbench.benchmark.grid import grid_configs
    from lengthbench.benchmark.presets import get_preset

    results = tmp_path / "r"
    results.mkdir()
    [config] = grid_configs(get_preset("smoke").with_grid(tasks=["copy"], encodings=["nope"]))
    os.mkfifo(results / f"{config.run_id}.claim")
    checkpoint = Checkpoint(results, config.run_id)
    checkpoint.folder.mkdir()
    os.mkfifo(checkpoint.path)
    (checkpoint.folder / "0000000000000000.json").symlink_to("/dev/zero")  # an index that is a device
    done = _lengthbench(*SMOKE, "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert "is a FIFO (named pipe), not a regular file; it does not hold its run" in done.stderr
    assert "cannot be used (ValueError: a FIFO (named pipe), not a regular file); moved to" in done.stderr


@pytest.mark.parametrize("where", ["csv", "plugin"])
@pytest.mark.slow
def test_a_fifo_for_a_csv_or_a_plugin_is_refused_by_name(tmp_path, where):
    pipe = tmp_path / ("board.csv" if where == "csv" else "enc.py")
    os.mkfifo(pipe)
    args = ["compare", str(pipe), str(pipe)] if where == "csv" else ["check", str(pipe)]
    done = _lengthbench(*args)
    assert done.returncode == 2 and pipe.name in _last_line(done) and "not a regular file" in _last_line(done)


@pytest.mark.slow
def test_a_huge_plugin_or_csv_is_refused_before_it_is_read(tmp_path):
    for name, args in (("enc.py", ["check"]), ("board.csv", ["compare"])):
        big = tmp_path / name
        with open(big, "wb") as f:
            f.truncate(2 << 30)
        done = _lengthbench(*args, str(big), *([str(big)] if args == ["compare"] else []))
        assert done.returncode == 2 and "bytes" in _last_line(done) and name in _last_line(done)
