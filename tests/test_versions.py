"""Code versions: a record is reused only while the code that made it is
unchanged in effect, and a change without a bump does not go unnoticed."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

import lengthbench.benchmark.versions as versions
from lengthbench.benchmark.grid import grid_configs, run_grid
from lengthbench.benchmark.records import superseded_runs
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.leaderboard.aggregate import MixedConfigError, leaderboard_frame
from lengthbench.tasks import get_task


def test_every_source_change_is_recorded_with_its_version():
    """Fails when a task, an encoding or the trainer changed since
    ``benchmark/code_digests.json``: bump its version if results change,
    then run ``python -m lengthbench.generated --update``."""
    assert versions.unrecorded_changes() == []


def test_an_edited_sampler_without_a_bump_is_caught(monkeypatch):
    module = Path(versions.inspect.getfile(type(get_task("copy")))).resolve()
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes",
                        lambda self: real(self) + b"\n# edited sampler\n" if self == module else real(self))
    changed = versions.unrecorded_changes()
    assert "task:copy" in changed and "trainer" not in changed and "encoding:rope" not in changed


def test_configs_name_only_the_bumped_versions(tiny_preset, monkeypatch):
    """Versions at 1 stay out of a config (so configs of unbumped code keep their hashes)."""
    config = tiny_preset.run_config("copy", "nope", 0)
    assert config.code_versions == {"trainer": versions.TRAINER_VERSION}
    monkeypatch.setattr(versions, "TRAINER_VERSION", 1)
    config = tiny_preset.run_config("copy", "nope", 0)
    assert config.code_versions == {} and "code_versions" not in config.to_dict()


def test_a_bumped_task_reruns_its_cells_and_reuses_the_others(tmp_path, tiny_preset, monkeypatch, caplog):
    tiny_preset = replace(tiny_preset, seeds=(0, 1))
    first = {r.run_id: r for r in run_grid(tiny_preset, tmp_path, progress=False)}
    monkeypatch.setattr(type(get_task("copy")), "version", 2)
    with caplog.at_level(logging.WARNING):
        second = run_grid(tiny_preset, tmp_path, progress=False)
    for record in second:
        if record.task == "copy":
            assert record.run_id not in first and record.config.code_versions == {"task": 2, "trainer": versions.TRAINER_VERSION}
        else:
            assert first[record.run_id] == record  # reused as it was
    assert "4 records were made by other code versions (stale)" in caplog.text
    assert len(grid_configs(tiny_preset)) == len(second)
    # old and new copy records side by side: a board counts the latest code's, the old ones kept on disk
    records = ResultsFolder(tmp_path).records()
    assert sorted(r.run_id for r in superseded_runs(records)) == sorted(i for i in first if first[i].task == "copy")
    assert leaderboard_frame(records).equals(leaderboard_frame(second))
    # a cell whose seeds were made by different code versions is refused, never averaged
    rerun = next(r for r in second if r.task == "copy" and r.seed == 1 and r.status == "ok")
    ResultsFolder(tmp_path).record_path(rerun.run_id).unlink()
    with pytest.raises(MixedConfigError, match="made by different code versions"):
        leaderboard_frame(ResultsFolder(tmp_path).records())


def test_run_refuses_a_grid_whose_sources_drifted_and_runs_one_that_did_not(tmp_path, monkeypatch, capsys):
    from lengthbench.cli import main

    module = Path(versions.inspect.getfile(type(get_task("copy")))).resolve()
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes",
                        lambda self: real(self) + b"\n# edited sampler\n" if self == module else real(self))
    results = tmp_path / "r"
    argv = ["run", "--preset", "smoke", "--encodings", "nope", "--seeds", "0", "--results", str(results),
            "--no-progress", "--workers", "1"]
    assert main([*argv, "--tasks", "copy,parity_check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("lengthbench: error: the source of task:copy changed since code_digests.json")
    assert not results.exists() or not list(results.glob("*.json"))  # nothing ran
    assert main([*argv, "--tasks", "parity_check"]) == 0  # copy is not in this grid


@pytest.mark.parametrize("source", ["benchmark/config.py", "benchmark/runner.py", "tasks/expressions.py"])
def test_an_edited_harness_module_without_a_bump_makes_run_refuse(source, tmp_path, monkeypatch, capsys):
    """The trainer's digest covers every module the run harness imports that
    decides a result (configs and lengths, the runner, task helpers), not a
    hand-kept list."""
    from lengthbench.cli import main

    assert source in versions.trainer_sources(set())
    module = versions.source_file(source)
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes",
                        lambda self: real(self) + b"\n# edited\n" if self == module else real(self))
    assert versions.unrecorded_changes() == ["trainer"]
    argv = ["run", "--preset", "smoke", "--encodings", "nope", "--seeds", "0", "--tasks", "copy", "--results",
            str(tmp_path), "--no-progress", "--workers", "1"]
    assert main(argv) == 2
    assert "the source of trainer changed since code_digests.json" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))  # nothing ran


def test_the_harness_imports_are_read_from_its_import_statements():
    sources = versions.imported_sources(versions.HARNESS)
    assert {"benchmark/runner.py", "benchmark/config.py", "benchmark/train.py", "models/transformer.py",
            "tasks/base.py", "models/encodings/rope.py", "core/errors.py", "core/registry.py"} <= sources
    assert not {"leaderboard/aggregate.py", "cli.py", "benchmark/grid.py"} & sources


def test_a_record_is_marked_dirty_by_code_changes_not_by_a_references_data(tmp_path):
    """A chain of reference runs rewrites the records folder's tracked ``provenance.json`` between commands:
    that is data and leaves the next command's runs clean; an edited source file marks them ``.dirty``; an
    installed package inside another checkout gets the plain version, not that checkout's commit."""
    import subprocess

    from lengthbench.benchmark.version import __version__, code_version

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    provenance = tmp_path / "leaderboard" / "reference" / "horizon" / "records" / "provenance.json"
    source = tmp_path / "tasks" / "copy.py"
    for path in (provenance, source):
        path.parent.mkdir(parents=True)
        path.write_text("1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "records and code")
    code_version.cache_clear()
    assert not code_version(tmp_path).endswith(".dirty")
    provenance.write_text("2\n")
    code_version.cache_clear()
    assert not code_version(tmp_path).endswith(".dirty")
    source.write_text("2\n")
    code_version.cache_clear()
    assert code_version(tmp_path).endswith(".dirty")
    code_version.cache_clear()
    # a package installed inside someone else's checkout (a virtual environment in a project) is not that checkout
    installed = tmp_path / ".venv" / "lib" / "site-packages" / "lengthbench"
    installed.mkdir(parents=True)
    assert code_version(installed) == __version__
    code_version.cache_clear()
