"""The Ray executor on a real local Ray cluster: the same leaderboard as
the local executor, and a grid that completes when a Ray worker process is
killed mid-run. Skipped only when the ``[ray]`` extra is not installed."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import replace

import pytest

from lengthbench.benchmark.claims import CLAIM_SUFFIX
from lengthbench.cli import main

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    from lengthbench.benchmark.ray_executor import init_local_ray

    init_local_ray(ray, num_cpus=2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_a_local_instances_workers_run_at_the_drivers_priority(cluster):
    """Ray's default niceness (15) starves its workers behind any other process on the machine."""

    @ray.remote(num_cpus=1)
    def niceness():
        return os.nice(0)

    assert ray.get(niceness.remote()) == os.nice(0)
    assert "RAY_worker_niceness" not in os.environ  # the driver's environment is left as it was


@pytest.mark.slow
def test_smoke_through_ray_gives_the_local_leaderboard(tmp_path, cluster, monkeypatch, tiny_preset):
    common = ["run", "--preset", "tiny", "--seeds", "0,1", "--no-progress"]
    assert main([*common, "--results", str(tmp_path / "local"), "--workers", "1"]) == 0
    assert main([*common, "--results", str(tmp_path / "ray"), "--executor", "ray", "--save-predictions"]) == 0
    for name in ("leaderboard.csv", "leaderboard.md", "leaderboard_levels.csv"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    trained = [p.stem for p in (tmp_path / "ray").glob("*__seed*.json") if json.loads(p.read_text())["status"] == "ok"]
    assert trained and sorted(trained) == sorted(p.stem for p in (tmp_path / "ray" / "predictions").glob("*.npz"))
    pids = {json.loads(p.read_text())["host"]["pid"] for p in (tmp_path / "ray").glob("*__seed*.json")}
    assert os.getpid() not in pids  # trained in Ray worker processes


@pytest.mark.slow
def test_a_killed_ray_worker_is_retried_and_the_grid_completes(tmp_path, cluster, tiny_preset):
    from lengthbench.benchmark.grid import run_grid

    preset = replace(tiny_preset.with_grid(tasks=["copy"], encodings=["nope"], seeds=[0, 1]),
                     settings={**tiny_preset.settings, "steps": 400})
    killed = []

    def kill_first_worker():
        deadline = time.time() + 120
        while not killed and time.time() < deadline:
            for claim in tmp_path.glob(f"*{CLAIM_SUFFIX}"):
                try:
                    pid = json.loads(claim.read_text())["pid"]
                except (OSError, ValueError):
                    continue
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_worker)
    killer.start()
    records = run_grid(preset, tmp_path, progress=False, executor="ray")
    killer.join()
    assert killed, "no worker was killed"
    assert [r.status for r in records] == ["ok", "ok"]
    assert all(r.host["pid"] not in killed for r in records)  # the killed run was retried elsewhere
    assert not list(tmp_path.glob(f"*{CLAIM_SUFFIX}"))
