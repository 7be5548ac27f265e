"""Checkpoints: a run killed with SIGKILL half-way resumes from its last
checkpoint (the step it saved, not step 0) and ends with the record an
uninterrupted run gets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import sys
    from dataclasses import replace
    import lengthbench.cli as cli
    from lengthbench.benchmark.presets import PRESETS, register_preset
    base = PRESETS["smoke"]
    register_preset(replace(base, name="long", tasks=("copy",), encodings=("randomized-rope",),
                            settings={**base.settings, "steps": 800}))
    if __name__ == "__main__":
        sys.exit(cli.main(sys.argv[1:]))
""")


def _run(tmp_path: Path, results: Path) -> subprocess.Popen:
    script = tmp_path / "lb.py"
    script.write_text(SCRIPT)
    argv = [sys.executable, str(script), "-v", "run", "--preset", "long", "--results", str(results), "--workers", "1",
            "--no-progress", "--checkpoint-every", "0.2"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _record(results: Path) -> dict:
    [path] = results.glob("copy__*.json")
    return json.loads(path.read_text())


def test_a_killed_run_resumes_from_its_checkpoint_to_the_same_record(tmp_path):
    whole = tmp_path / "whole"
    assert _run(tmp_path, whole).wait(timeout=300) == 0

    results = tmp_path / "killed"
    proc = _run(tmp_path, results)
    deadline = time.time() + 120
    while not list((results / "checkpoints").glob("*.pt")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # a few more checkpoints, well before the end
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    [saved] = (results / "checkpoints").glob("*.pt")
    saved_step = torch.load(saved, weights_only=True)["step"]
    assert 0 < saved_step < 800
    assert not list(results.glob("copy__*.json"))  # it died mid-training

    resumed = _run(tmp_path, results)
    _, log = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, log
    [step] = re.findall(r"resumed 1 run\(s\) from their checkpoint at step (\d+) of 800", log)
    assert int(step) == saved_step  # it went on from the saved state, not from step 0
    first, again = _record(whole), _record(results)
    for key in ("per_length", "summary", "training"):
        assert again[key] == first[key], key
    assert not (results / "checkpoints").exists()  # deleted once the record is written
    assert not list(results.glob("*.claim"))
