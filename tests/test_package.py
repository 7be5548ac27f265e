"""The installed package: one ``lengthbench`` namespace, nothing under a generic
top-level name, its reference records shipped, its code digests those of the
checkout so that it runs (a real install outside the repository)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERIC = ("tasks", "models", "benchmark", "leaderboard")

CHECK = """
import importlib.util, sys
from pathlib import Path
import lengthbench
site = Path(sys.argv[1]).resolve()
assert Path(lengthbench.__file__).resolve().is_relative_to(site), lengthbench.__file__
records = site / "lengthbench" / "leaderboard" / "reference" / "quick" / "records"
runs = lengthbench.load_records(records)
board = lengthbench.load_leaderboard(records)
print(len(runs), len(board), *(name for name in %r if importlib.util.find_spec(name) is not None))
""" % (GENERIC,)


DIGESTS = """
import json
from lengthbench.benchmark.versions import components, unrecorded_changes
print(json.dumps({"components": components(), "unrecorded": unrecorded_changes()}))
"""


@pytest.mark.slow
def test_a_fresh_install_is_one_namespace(tmp_path):
    source, site = tmp_path / "source", tmp_path / "site"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "results", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
    # build with this environment's setuptools when it has one (no download); else pip fetches it
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *offline,
                    "--target", str(site), str(source)], check=True, capture_output=True)
    installed = {p.name for p in site.iterdir() if not p.name.endswith(".dist-info")}
    assert installed == {"lengthbench", "bin"}, installed
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", CHECK, str(site)], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows, cells, *importable = out.stdout.split()
    assert int(rows) > 100 and int(cells) == 20
    assert importable == [], f"generic top-level modules importable: {importable}"
    cli = subprocess.run([str(site / "bin" / "lengthbench"), "list", "models"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert cli.returncode == 0 and "lstm" in cli.stdout, cli.stderr
    # the code digests are the same from the installed wheel as from this checkout (its links aside), so
    # the installed package's own code_digests.json holds and a run is not refused
    from lengthbench.benchmark.versions import components

    digests = subprocess.run([sys.executable, "-c", DIGESTS], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert digests.returncode == 0, digests.stderr
    assert json.loads(digests.stdout) == {"components": components(), "unrecorded": []}
    run = subprocess.run([str(site / "bin" / "lengthbench"), "run", "--preset", "smoke", "--tasks", "copy",
                          "--encodings", "nope", "--set", "steps=2", "--results", str(tmp_path / "runs"),
                          "--no-progress", "--workers", "1"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # the wheel ships quick's and smoke's references alone (what submit reuses), not the clone's 30 MB of study records
    shipped = site / "lengthbench" / "leaderboard" / "reference"
    assert sorted(p.name for p in shipped.iterdir() if p.is_dir()) == ["quick", "smoke"]
    assert [len(list((shipped / p / "records").glob("*.json"))) for p in ("quick", "smoke")] == [20, 20]
    # submit from the wheel: the built-in cells are the shipped records, only the new encoding's one run trains
    # (at smoke's 30 steps: what this shows is which runs train, not what they learn; quick's shipped records are
    # held to today's run ids by tests/test_reference.py, so `submit --preset quick` reuses them the same way)
    results = tmp_path / "submitted"
    example = source / "examples" / "log_decay_sink.py"
    submit = subprocess.run([str(site / "bin" / "lengthbench"), "-v", "submit", str(example), "--preset", "smoke",
                             "--tasks", "parity_check", "--results", str(results), "--no-progress", "--workers", "1"],
                            cwd=tmp_path, env=env, capture_output=True, text=True)
    assert submit.returncode == 0, submit.stderr
    assert "5 runs of the grid taken from the shipped smoke reference" in submit.stderr
    assert "1 runs trained here" in submit.stderr and (results / "submission-log-decay-sink.md").exists()
    # and the third job: two leaderboard CSVs compared, from the wheel
    board, submitted = shipped / "smoke" / "leaderboard.csv", results / "submission-log-decay-sink.csv"
    compare = subprocess.run([str(site / "bin" / "lengthbench"), "compare", str(board), str(submitted), "--out",
                              str(tmp_path / "cmp")],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
    assert compare.returncode == 0 and (tmp_path / "cmp" / "compare.csv").exists(), compare.stderr
