"""The Python API (``lengthbench.run``, ``load_records``, ``leaderboard``,
``compare``) against the files and records it writes."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_tiny_preset

import lengthbench
from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.leaderboard.schema import read_leaderboard


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One real run of the tiny grid through the API: (board, results folder)."""
    results = tmp_path_factory.mktemp("api") / "records"
    register_preset(make_tiny_preset())
    try:
        board = lengthbench.run("tiny", seeds=[0, 1], results=results, progress=False)
    finally:
        PRESETS.remove("tiny")
    return board, results


@pytest.mark.slow
def test_run_returns_the_leaderboard_it_wrote(tiny_run):
    board, results = tiny_run
    assert isinstance(board, pd.DataFrame) and len(board) == 4
    assert set(board.method) == {"transformer/nope", "transformer/coupled"}
    written = board.attrs["written"]
    assert written["csv"] == results / "leaderboard.csv" and board.attrs["failed"] == []
    on_disk = read_leaderboard(written["csv"])
    pd.testing.assert_frame_equal(on_disk.reset_index(drop=True)[["task", "method", "n_seeds"]],
                                  board.reset_index(drop=True)[["task", "method", "n_seeds"]], check_dtype=False)
    provenance = json.loads(written["provenance"].read_text())
    assert provenance["command"] == f"lengthbench.run('tiny', seeds=[0, 1], results={results!r})"
    assert len(list(results.glob("*__seed*__*.json"))) == 8
    assert provenance["runs"] == provenance["runs_finished_this_invocation"] == 8  # the first runs too


@pytest.mark.slow
def test_a_second_grid_run_into_the_folder_keeps_the_first_runs_provenance(tiny_run, tmp_path):
    _, first = tiny_run
    results = tmp_path / "records"
    shutil.copytree(first, results)
    earlier = json.loads((results / "provenance.json").read_text())
    register_preset(make_tiny_preset())
    try:  # its records are all there: the second command trains nothing, so the first's provenance stays
        lengthbench.run("tiny", seeds=[0], results=results, progress=False)
        assert json.loads((results / "provenance.json").read_text()) == earlier
        assert not list(results.glob("provenance-*.json"))
        lengthbench.run("tiny", seeds=[0, 2], results=results, progress=False)  # one that trains: its own
    finally:
        PRESETS.remove("tiny")
    kept, = results.glob("provenance-*.json")
    assert json.loads(kept.read_text()) == earlier and kept.name.startswith("provenance-20")
    latest = json.loads((results / "provenance.json").read_text())
    assert latest["command"].startswith("lengthbench.run('tiny', seeds=[0, 2],")
    assert latest["runs_finished_this_invocation"] == 4 and latest["runs"] == 8


@pytest.mark.slow
def test_a_runs_provenance_counts_its_first_runs_however_long_the_board_takes(tmp_path, monkeypatch):
    """The runs an invocation finished are those that started after it began, not in the last
    ``seconds`` before the provenance is written: building the board comes between."""
    import time

    import lengthbench.leaderboard.build as board_files

    build = board_files.build_leaderboard
    monkeypatch.setattr(board_files, "build_leaderboard", lambda *a, **k: (time.sleep(3), build(*a, **k))[1])
    register_preset(make_tiny_preset())
    try:
        board = lengthbench.run("tiny", seeds=[0], results=tmp_path / "r", progress=False)
    finally:
        PRESETS.remove("tiny")
    provenance = json.loads(board.attrs["written"]["provenance"].read_text())
    assert provenance["runs"] == provenance["runs_finished_this_invocation"] == 4


def test_run_refuses_an_unknown_preset_naming_the_valid_ones(tmp_path):
    with pytest.raises(UnknownNameError, match="'quik'.*quick"):
        lengthbench.run("quik", results=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_load_records_is_one_row_per_run_and_length_with_every_config_field(tiny_run):
    _, results = tiny_run
    runs = lengthbench.load_records(results)
    records = [json.loads(p.read_text()) for p in sorted(results.glob("*__seed*__*.json"))]
    finished = [r for r in records if r["status"] == "ok"]
    assert len(runs) == sum(len(r["per_length"]) for r in finished) + len(records) - len(finished)
    for record in records:
        rows = runs[runs.run_id == record["run_id"]]
        config = record["config"]
        for field in ("steps", "batch_size", "lr", "train_length", "test_length", "eval_samples"):
            assert set(rows[field]) == {config[field]}
        assert set(rows["model.d_model"]) == {config["model"]["d_model"]}
        if record["status"] != "ok":  # n/a: one row, no length
            assert len(rows) == 1 and rows.length.isna().all()
            continue
        assert list(rows.length) == [m["length"] for m in record["per_length"]]
        np.testing.assert_allclose(rows.exact_match, [m["exact_match"] for m in record["per_length"]])
        assert list(rows.split) == ["id" if m["length"] <= config["train_length"]
                                    else "val" if m["length"] <= config.get("validation_length", 0) else "ood"
                                    for m in record["per_length"]]


def test_load_records_refuses_a_missing_folder(tmp_path):
    with pytest.raises(InputError, match="'.*nowhere' does not exist"):
        lengthbench.load_records(tmp_path / "nowhere")
    with pytest.raises(InputError, match="holds no run records"):
        lengthbench.load_records(tmp_path)


def test_leaderboard_matches_the_written_csv_and_writes_only_when_asked(tiny_run, tmp_path):
    _, results = tiny_run
    board = lengthbench.load_leaderboard(results)
    assert "written" not in board.attrs
    stored = read_leaderboard(results / "leaderboard.csv")
    pd.testing.assert_frame_equal(board.reset_index(drop=True), stored.reset_index(drop=True), check_dtype=False)
    written = lengthbench.write_leaderboard(results, tmp_path / "board").attrs["written"]
    assert written["csv"].read_bytes() == (results / "leaderboard.csv").read_bytes()


def test_loading_a_leaderboard_writes_nothing(tiny_run, tiny_preset, monkeypatch):
    """Every file opened for writing and every rename while ``load_leaderboard`` reads a folder (its records,
    its preset's grid) is recorded: none happens. Writing is ``write_leaderboard``'s."""
    import builtins
    import io
    import os

    _, results = tiny_run
    writes, real_open = [], io.open

    def watching(file, mode="r", *args, **kwargs):
        if set(mode) & set("wax+"):
            writes.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    for module, name in ((builtins, "open"), (io, "open")):
        monkeypatch.setattr(module, name, watching)
    for name in ("replace", "rename"):
        monkeypatch.setattr(os, name, lambda *args: writes.append(args))
    lengthbench.load_leaderboard(results, preset="tiny")
    monkeypatch.undo()
    assert writes == []


def test_compare_takes_paths_or_frames(tiny_run, tmp_path):
    _, results = tiny_run
    board = lengthbench.load_leaderboard(results)
    board.loc[board.status == "ok", "n_fit"] = board.n_seeds  # as if fit: compare judges fit cells only
    csv = tmp_path / "fit.csv"
    board.to_csv(csv, index=False)
    moved = board.copy()
    moved["ood_exact_match_mean"] = np.minimum(1.0, moved.ood_exact_match_mean + 0.5)
    diff = lengthbench.compare(csv, moved, correction="none", out=tmp_path / "cmp")
    tested = diff[diff.p_value.notna()]
    assert len(tested) >= 1 and (tested.delta > 0).all() and set(diff.correction) == {"none"}
    assert (tmp_path / "cmp" / "compare.csv").exists() and diff.attrs["written"]["md"].exists()
    same = lengthbench.compare(csv, csv)
    assert set(same.correction) == {"bh"} and not same.verdict.isin(["improved", "worse"]).any()
    with pytest.raises(UnknownNameError, match="'accuracy'.*exact_match, token_accuracy"):
        lengthbench.compare(csv, csv, metric="accuracy")


GRID_SCRIPT = """
import lengthbench
{guard}lengthbench.run("smoke", tasks=["parity_check"], encodings=["nope", "rope"], results={results!r},
{indent}                workers=2, progress=False)
"""


@pytest.mark.parametrize("guarded", [True, False])
@pytest.mark.slow
def test_a_script_trains_its_grid_guarded_or_not(guarded, tmp_path):
    """Worker processes import the main script: a guarded script trains its
    grid in them; one that starts the grid at its top level (worker processes
    would start it again and die) trains it in its own process, saying so."""
    import subprocess
    import sys

    results = tmp_path / "records"
    script = tmp_path / "grid.py"
    script.write_text(GRID_SCRIPT.format(guard='if __name__ == "__main__":\n    ' if guarded else "",
                                         indent="    " if guarded else "", results=str(results)))
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert set(lengthbench.load_records(results).status) == {"ok"}
    said = "starts the grid at its top level" in out.stderr
    assert said != guarded and (guarded or 'under `if __name__ == "__main__":` to use 2 workers' in out.stderr)


@pytest.mark.slow
def test_the_readme_python_example_runs_verbatim_as_a_script(tmp_path):
    import re
    import subprocess
    import sys

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"## From Python\n\n```python\n(.*?)```", readme, re.S).group(1)
    (tmp_path / "example.py").write_text(code)
    out = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert set(lengthbench.load_records(tmp_path / "results" / "nb").status) == {"ok"}


@pytest.fixture
def crashing_encoding():
    from lengthbench.models.encodings import ENCODINGS, PositionEncoding, register_encoding

    @register_encoding("test-crashes-in-run")
    class Crashes(PositionEncoding):
        def rotate(self, q, k, pos):
            raise RuntimeError("boom in rotate")

    yield "test-crashes-in-run"
    ENCODINGS.remove("test-crashes-in-run")


def test_a_grid_whose_every_run_errored_is_an_error_from_python_and_the_command_line(crashing_encoding, tmp_path,
                                                                                      capsys):
    """Nothing was measured: the API raises (a script exits non-zero) after
    writing the records and tables; the command line lists the runs and exits 1."""
    from lengthbench.cli import main

    with pytest.raises(lengthbench.api.RunsFailed, match="all 2 runs of the grid ended in error.*boom in rotate"):
        lengthbench.run("smoke", tasks=["copy", "parity_check"], encodings=[crashing_encoding],
                        results=tmp_path / "r", workers=1, progress=False)
    assert set(lengthbench.load_records(tmp_path / "r").status) == {"error"}
    assert (tmp_path / "r" / "leaderboard.csv").exists()
    argv = ["run", "--preset", "smoke", "--tasks", "copy", "--encodings", crashing_encoding, "--results",
            str(tmp_path / "c"), "--workers", "1", "--no-progress"]
    assert main(argv) == 1
    assert "1 of 1 runs ended in error" in capsys.readouterr().err
    # one run that errors beside one that trains is no grid failure: the board comes back
    board = lengthbench.run("smoke", tasks=["copy"], encodings=["nope", crashing_encoding], results=tmp_path / "m",
                            workers=1, progress=False)
    assert len(board.attrs["failed"]) == 1


def test_ordinary_misuse_of_the_grid_arguments_does_what_was_meant_or_says_why():
    """A string where a list is expected is a comma-separated list (never its
    characters); numpy integers are seeds like any others (plain ints in every
    config); a seed of another type is refused naming its type."""
    from lengthbench.benchmark.grid import grid_configs
    from lengthbench.benchmark.presets import get_preset

    text = lengthbench.api.plan("smoke", tasks="copy", encodings="rope,alibi")
    assert "1 tasks x 2 methods x 1 seeds = 2 runs" in text
    configs = grid_configs(get_preset("smoke").with_grid(seeds=np.array([0, 3])))
    assert {type(c.seed) for c in configs} == {int} and {c.seed for c in configs} == {0, 3}
    with pytest.raises(lengthbench.api.InputError, match=r"seed '0' \(a str\) is not valid"):
        lengthbench.api.plan("smoke", seeds=["0"])


def test_compare_refuses_a_frame_that_is_not_a_leaderboard_in_one_line():
    from lengthbench.leaderboard.schema import read_leaderboard

    board = read_leaderboard(Path(__file__).resolve().parent.parent / "leaderboard/reference/quick/leaderboard.csv")
    with pytest.raises(lengthbench.api.InputError, match="leaderboard A is a DataFrame without the column.s. status"):
        lengthbench.compare(board.drop(columns=["status"]), board)
    with pytest.raises(lengthbench.api.InputError, match="leaderboard B is a list without the column"):
        lengthbench.compare(board, [1, 2])
