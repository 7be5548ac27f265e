"""A results folder shared by several Unix users: files follow the umask, and
a record this user cannot read is reported, never set aside nor retrained.
The second user is a real one (``setpriv`` to nobody), so these tests need
root; without it they are skipped."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lengthbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
SMOKE = ["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--no-progress", "--workers", "1"]
needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="switching to a second Unix user needs root and setpriv")


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


@pytest.fixture
def shared():
    """A folder outside pytest's private tmp tree (0700), so another user can reach it."""
    folder = Path(tempfile.mkdtemp(prefix="lengthbench-shared-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_every_written_file_follows_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    results = tmp_path / "r"
    assert main([*SMOKE, "--results", str(results)]) == 0
    written = [p for p in results.iterdir() if p.is_file()]
    assert {p.name.split(".")[-1] for p in written} >= {"json", "csv", "md", "html", "png"}
    assert {p.name: _mode(p) for p in written} == {p.name: expected for p in written}


def _as_nobody(args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "MPLCONFIGDIR": str(home / "mpl"), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           sys.executable, "-m", "lengthbench", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@needs_root
@pytest.mark.slow
def test_another_user_reads_what_this_one_wrote(shared, umask):
    results = shared / "r"
    assert main([*SMOKE, "--results", str(results)]) == 0
    home = shared / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    done = _as_nobody(["leaderboard", "--results", str(results), "--out", str(home / "board")], home)
    assert done.returncode == 0, done.stderr
    assert (home / "board" / "leaderboard.csv").read_text() == (results / "leaderboard.csv").read_text()


@needs_root
@pytest.mark.slow
def test_a_record_this_user_cannot_read_is_reported_and_kept(shared, umask):
    results = shared / "r"
    assert main([*SMOKE, "--results", str(results)]) == 0
    [record] = results.glob("copy__nope__seed0__*.json")
    before = record.read_bytes()
    record.chmod(0o600)  # root's own file: nobody may not read it
    results.chmod(0o777)  # but may write the folder: it could set the record aside, and must not
    home = shared / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    done = _as_nobody([*SMOKE, "--results", str(results)], home)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lengthbench: error: 1 record(s) cannot be read") and record.name in last
    assert "Permission denied" in last
    assert record.read_bytes() == before and not list(results.glob("*.invalid"))
    assert sorted(p.name for p in results.glob("copy__*.json")) == [record.name]  # nothing retrained
    board = _as_nobody(["leaderboard", "--results", str(results), "--out", str(home / "b")], home)
    assert board.returncode == 2 and record.name in board.stderr.strip().splitlines()[-1]
