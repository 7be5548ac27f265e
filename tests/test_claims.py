"""Run claims: of processes racing for a run exactly one trains it, a
claim of a stopped owner is taken over, and two drivers on one results
folder split the grid and train every cell once."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import lengthbench.benchmark.claims as claims
from lengthbench.benchmark.claims import STALE_AFTER_S, Heartbeat
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.benchmark.grid import grid_configs, run_grid

ROOT = Path(__file__).resolve().parent.parent


def test_a_claim_is_exclusive_until_released(tmp_path):
    assert ResultsFolder(tmp_path).claim("run-a")
    owner = json.loads(ResultsFolder(tmp_path).claim_path("run-a").read_text())
    assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
    assert not ResultsFolder(tmp_path).claim("run-a")  # this process is alive: the claim holds
    ResultsFolder(tmp_path).release("run-a")
    assert ResultsFolder(tmp_path).claim("run-a")


def test_claims_of_stopped_owners_are_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    ResultsFolder(tmp_path).claim_path("dead-owner").write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead)}))
    assert not ResultsFolder(tmp_path).held_elsewhere("dead-owner") and ResultsFolder(tmp_path).claim("dead-owner")
    remote = ResultsFolder(tmp_path).claim_path("remote-owner")
    remote.write_text(json.dumps({"host": "another-node", "pid": 1}))
    assert ResultsFolder(tmp_path).held_elsewhere("remote-owner") and not ResultsFolder(tmp_path).claim("remote-owner")
    old = time.time() - STALE_AFTER_S - 1
    os.utime(remote, (old, old))  # its heartbeat stopped
    assert not ResultsFolder(tmp_path).held_elsewhere("remote-owner") and ResultsFolder(tmp_path).claim("remote-owner")


def test_the_heartbeat_keeps_a_claim_fresh(tmp_path):
    assert ResultsFolder(tmp_path).claim("run-b")
    path = ResultsFolder(tmp_path).claim_path("run-b")
    os.utime(path, (0, 0))
    with Heartbeat([path], every=0.05):
        deadline = time.monotonic() + 120  # a bound against a hang only: a loaded machine may be slow to beat
        while path.stat().st_mtime == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert time.time() - path.stat().st_mtime < 120


RACER = ("import sys, time\n"
         "from pathlib import Path\n"
         "from lengthbench.benchmark.claims import try_claim\n"
         "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
         "print(int(try_claim(Path(sys.argv[1]))), flush=True)\n"
         "sys.stdin.read()  # alive until every racer has tried, as a run's owner is while it trains\n")


def test_of_racing_processes_exactly_one_wins(tmp_path):
    """Eight interpreters (importing the claims module only, so they start in
    a fraction of a second) take the same claim at the same instant. Each
    stays alive until all have tried: a winner that exited would leave a claim
    of a dead process, which a late racer rightly takes over (under load the
    racers do not all start at the instant)."""
    start = time.time() + 2.0
    path = ResultsFolder(tmp_path).claim_path("contested")
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(path), str(start)], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(8)]
    wins = [int(p.stdout.readline()) for p in racers]  # blocks until each has tried (a bound: the timeout below)
    for p in racers:
        p.stdin.close()
        p.wait(timeout=180)
    assert all(p.returncode == 0 for p in racers) and sum(wins) == 1


@pytest.mark.slow
def test_a_run_whose_claimant_stops_without_a_record_is_trained(tmp_path, tiny_preset):
    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope"])
    [config] = grid_configs(preset)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    threading.Thread(target=holder.wait, daemon=True).start()  # reaped when it ends, not left a zombie
    ResultsFolder(tmp_path).claim_path(config.run_id).write_text(json.dumps({"host": socket.gethostname(), "pid": holder.pid}))
    start = time.time()
    [record] = run_grid(preset, tmp_path, progress=False)
    assert record.status == "ok" and 2.5 <= time.time() - start < 60  # it waited for the holder, not longer
    assert not ResultsFolder(tmp_path).claim_path(config.run_id).exists()


SCRIPT = """
import sys
from dataclasses import replace
import lengthbench.cli as cli
from lengthbench.benchmark.presets import PRESETS, register_preset
base = PRESETS["smoke"]
register_preset(replace(base, name="pair", tasks=("copy",), encodings=("nope", "rope"), seeds=(0, 1, 2, 3),
                        settings={**base.settings, "steps": 150}))
if __name__ == "__main__":
    sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_two_drivers_on_one_folder_split_the_grid(tmp_path):
    """Two real ``lengthbench run`` processes started together (8 runs of
    about a second): every cell is trained once, by one of them, and both
    get work."""
    script = tmp_path / "lb.py"
    script.write_text(SCRIPT)
    argv = [sys.executable, str(script), "-v", "run", "--preset", "pair", "--workers", "1", "--no-progress",
            "--results", str(tmp_path / "results")]
    # one thread each: two drivers spinning two OpenMP threads each on a 2-core machine slowed the
    # runs from about 2 s to 25 s each (seen: 12 s to 220 s for the whole test)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    drivers = [subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for _ in range(2)]
    outputs = [d.communicate(timeout=300) for d in drivers]
    assert [d.returncode for d in drivers] == [0, 0], outputs
    trained = [int(re.search(r"(\d+) runs trained here", err).group(1)) for _, err in outputs]
    assert sum(trained) == 8 and min(trained) >= 1, trained
    records = list((tmp_path / "results").glob("copy__*.json"))
    assert len(records) == 8 and not list((tmp_path / "results").glob("*.claim"))
    pids = [json.loads(p.read_text())["host"]["pid"] for p in records]
    assert sorted(pids.count(d.pid) for d in drivers) == sorted(trained)  # each record names its trainer


DAMAGED = {
    "empty": b"",
    "not-json": b"\x00\x01 not a claim",
    "a-list": b"[1, 2]",
    "null": b"null",
    "a-number": b"42",
    "no-fields": b"{}",
    "wrong-types": b'{"host": 5, "pid": "abc"}',
    "bool-pid": b'{"host": "another-node", "pid": true}',
}


@pytest.mark.parametrize("shape", list(DAMAGED))
def test_a_damaged_claim_never_crashes_and_is_taken_over_in_bounded_time(tmp_path, shape, monkeypatch, caplog):
    monkeypatch.setattr(claims, "STALE_AFTER_S", 2.0)  # wide enough that a loaded machine's pause is no staleness
    path = ResultsFolder(tmp_path).claim_path(f"run-{shape}")
    path.write_bytes(DAMAGED[shape])
    with caplog.at_level(logging.WARNING):
        assert ResultsFolder(tmp_path).held_elsewhere(f"run-{shape}")  # fresh: respected for now
        time.sleep(2.1)
        assert not ResultsFolder(tmp_path).held_elsewhere(f"run-{shape}")  # unchanged while watched: stale
        assert ResultsFolder(tmp_path).claim(f"run-{shape}")
    assert json.loads(path.read_text())["pid"] == os.getpid()
    warnings = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert len(warnings) == 1 and str(path) in warnings[0]  # one warning naming the file


def test_a_claim_from_the_future_is_not_waited_on_forever(tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "STALE_AFTER_S", 0.3)
    path = ResultsFolder(tmp_path).claim_path("future")
    path.write_text(json.dumps({"host": "another-node", "pid": 1, "claimed_at": time.time() + 86400}))
    os.utime(path, (time.time() + 86400, time.time() + 86400))  # a clock a day ahead
    assert ResultsFolder(tmp_path).held_elsewhere("future")
    time.sleep(0.4)
    assert not ResultsFolder(tmp_path).held_elsewhere("future") and ResultsFolder(tmp_path).claim("future")


def test_a_live_remote_claim_that_keeps_beating_is_respected(tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "STALE_AFTER_S", 0.3)
    path = ResultsFolder(tmp_path).claim_path("beating")
    path.write_text(json.dumps({"host": "another-node", "pid": 1}))
    for _ in range(4):
        time.sleep(0.15)
        os.utime(path)  # its owner's heartbeat
        assert ResultsFolder(tmp_path).held_elsewhere("beating")


def test_a_driver_trains_a_cell_whose_claim_is_garbage(tmp_path, tiny_preset, monkeypatch):
    monkeypatch.setattr(claims, "STALE_AFTER_S", 1.0)
    preset = tiny_preset.with_grid(tasks=["copy"], encodings=["nope"])
    [config] = grid_configs(preset)
    ResultsFolder(tmp_path).claim_path(config.run_id).write_bytes(b"[]")
    [record] = run_grid(preset, tmp_path, progress=False, workers=1)
    assert record.status == "ok" and not ResultsFolder(tmp_path).claim_path(config.run_id).exists()
