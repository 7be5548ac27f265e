"""Interrupts and faults of a real ``lengthbench`` process: Ctrl-C, SIGTERM,
kill -9 of the driver, a file-size limit. Each test starts the command line
in its own process group and looks at what is left afterwards."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# The smoke model at 300 steps: about a second per run on one core, six runs.
SCRIPT = textwrap.dedent("""
    import sys
    from dataclasses import replace
    import lengthbench.cli as cli
    from lengthbench.benchmark.presets import PRESETS, register_preset
    base = PRESETS["smoke"]
    register_preset(replace(base, name="slow", tasks=("copy", "parity_check"),
                            encodings=("nope", "rope", "alibi"),
                            settings={**base.settings, "steps": 300}))
    if __name__ == "__main__":
        sys.exit(cli.main(sys.argv[1:]))
""")


def _interruptible() -> None:
    """In the child before exec: SIGINT at its default, so Python installs its
    Ctrl-C handler even when this suite was started as a background job (which
    ignores SIGINT, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(tmp_path: Path, *argv, preexec_fn=None) -> subprocess.Popen:
    """The CLI in its own session; ``preexec_fn`` runs in the child too (after ``_interruptible``)."""
    script = tmp_path / "lb.py"
    script.write_text(SCRIPT)

    def before_exec():
        _interruptible()
        if preexec_fn is not None:
            preexec_fn()

    return subprocess.Popen([sys.executable, str(script), *map(str, argv)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=before_exec)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def wait_for(condition, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def records_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*__seed*__*.json"))


def assert_clean_folder(folder: Path) -> None:
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".tmp-")]
    assert not leftovers, leftovers
    for path in records_in(folder):  # every kept record is whole and valid
        from lengthbench.benchmark.records import read_record
        read_record(path)


@pytest.mark.parametrize("workers,how", [(2, "group"), (2, "driver"), (1, "group"), (2, "sigterm")])
@pytest.mark.slow
def test_interrupt_stops_quickly_and_keeps_finished_records(tmp_path, workers, how):
    results = tmp_path / "res"
    proc = start(tmp_path, "run", "--preset", "slow", "--results", results, "--workers", workers,
                 "--no-progress")
    # the first record, or the driver's end (then fail with its output); the bound only guards against a hang
    assert wait_for(lambda: records_in(results) or proc.poll() is not None, 900) and proc.poll() is None, \
        proc.communicate()
    if how == "group":  # a terminal's Ctrl-C reaches every process of the group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=300)
    assert time.monotonic() - sent < 30  # a run of the grid takes minutes at the load this must hold under
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("lengthbench: interrupted: ") and "rerun the same command to resume" in last
    assert wait_for(lambda: not group_members(proc.pid), 60), "worker processes outlived the driver"
    assert_clean_folder(results)
    kept = len(records_in(results))
    assert 1 <= kept < 6 and f"{kept} of 6 runs have records" in last
    sitting, = results.glob("provenance-interrupted-*.json")  # a grid made in sittings keeps each one's provenance
    provenance = json.loads(sitting.read_text())
    assert provenance["interrupted"] and (provenance["runs"], provenance["runs_in_grid"]) == (kept, 6)
    assert provenance["runs_finished_this_invocation"] == kept and provenance["wall_time_s_this_invocation"] > 0
    assert "run --preset slow" in provenance["command"]


def ignores_sigint(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))


def test_ctrl_c_while_workers_start_prints_no_worker_traceback(tmp_path):
    """Workers ignore SIGINT from their first instruction (a terminal's Ctrl-C
    reaches the whole group, also while workers still import torch): only the
    driver reacts, so no worker dies with a KeyboardInterrupt traceback."""
    results = tmp_path / "res"
    proc = start(tmp_path, "run", "--preset", "slow", "--results", results, "--workers", 2, "--no-progress")
    # driver, resource tracker and two workers, which now spend a second importing torch
    assert wait_for(lambda: len(group_members(proc.pid)) >= 4, 300)
    workers = [pid for pid in group_members(proc.pid)
               if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(workers) == 2 and all(ignores_sigint(pid) for pid in workers)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "0 of 6 runs have records" in err.strip().splitlines()[-1]
    assert wait_for(lambda: not group_members(proc.pid), 60)


@pytest.mark.slow
def test_killed_driver_takes_its_workers_along(tmp_path):
    results = tmp_path / "res"
    proc = start(tmp_path, "run", "--preset", "slow", "--results", results, "--workers", 2, "--no-progress")
    assert wait_for(lambda: len(group_members(proc.pid)) >= 3, 300)  # driver + 2 workers
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=300)
    assert wait_for(lambda: not group_members(proc.pid), 60), "workers outlived a killed driver"
    for path in records_in(results):
        json.loads(path.read_text())


@pytest.mark.slow
def test_full_disk_leaves_previous_outputs_whole(tmp_path):
    """Under a file-size limit a leaderboard cannot be rewritten: the command
    fails with one line and the previous leaderboard files stay whole."""
    results, out = tmp_path / "res", tmp_path / "out"
    proc = start(tmp_path, "run", "--preset", "smoke", "--tasks", "copy,parity_check",
                 "--encodings", "nope,coupled", "--results", results, "--out", out, "--no-progress",
                 "--workers", 1)
    assert proc.wait(timeout=900) == 0, proc.communicate()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"leaderboard.csv", "accuracy_vs_length.png"} <= set(before)
    for record in results.glob("copy__*.json"):  # the new leaderboard would differ
        record.unlink()

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    proc = start(tmp_path, "leaderboard", "--results", results, "--out", out, preexec_fn=small_files)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "could not write" in last and "leaderboard.csv" in last and "previous file is unchanged" in last
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.slow
def test_interrupted_grid_in_a_long_lived_process_kills_its_workers(tmp_path, tiny_preset):
    """A notebook keeps running after Ctrl-C: the pool's workers must not go
    on training in the background."""
    import multiprocessing
    import threading

    from lengthbench.benchmark.grid import GridInterrupted, run_grid

    preset = tiny_preset.with_grid(encodings=["nope"])
    preset = preset.__class__(**{**preset.__dict__, "settings": {**preset.settings, "steps": 5000}})
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # even in a suite started in the background
    try:
        # A real SIGINT, as Jupyter interrupts its kernel (``_thread.interrupt_main`` would only be
        # seen once the driver's wait for a finished run returns, long after the interrupt).
        threading.Timer(4.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(GridInterrupted) as stop:
            run_grid(preset, tmp_path, workers=2, progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (stop.value.finished, stop.value.total) == (0, 2)
    assert wait_for(lambda: not multiprocessing.active_children(), 2.0)
    assert not list(tmp_path.iterdir())


def test_an_interrupt_just_after_a_record_is_written_counts_that_record(tmp_path, tiny_preset, monkeypatch):
    """Ctrl-C can land inside the driver's bookkeeping, between writing a record and counting it: the
    message and the sitting's provenance must still count every record on disk."""
    from lengthbench.benchmark.grid import GridInterrupted, run_grid
    from lengthbench.benchmark.store import ResultsFolder

    def interrupted_release(self, run_id):
        raise KeyboardInterrupt

    monkeypatch.setattr(ResultsFolder, "release", interrupted_release)  # right after the first record's write
    with pytest.raises(GridInterrupted) as stop:
        run_grid(tiny_preset.with_grid(encodings=["nope"]), tmp_path, workers=1, progress=False)
    assert len(records_in(tmp_path)) == 1
    assert (stop.value.finished, stop.value.finished_now, len(stop.value.records)) == (1, 1, 1)
    assert str(stop.value).startswith("interrupted: 1 of 2 runs have records (1 finished in this invocation)")
