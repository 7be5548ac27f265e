"""The bad-input corpus: every command, fed what a new user (or a broken
disk) feeds it. Each case must exit nonzero with no traceback, end with one
line that names the bad value (or file) and says what is valid, train
nothing, and leave every previously valid file byte-identical.

Only ``benchmark.cli.main`` is driven, so the corpus measures the command
line as users meet it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import make_tiny_preset, set_csv_cell

import lengthbench.benchmark.grid as grid_module
import lengthbench.benchmark.runner as runner_module
import lengthbench.benchmark.sitting as sitting_module
from lengthbench.benchmark.grid import run_grid
from lengthbench.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def valid_results(tmp_path_factory):
    """A finished tiny grid with its leaderboard files (built once)."""
    folder = tmp_path_factory.mktemp("valid") / "results"
    run_grid(make_tiny_preset(), folder, progress=False)
    assert main(["leaderboard", "--results", str(folder)]) == 0
    return folder


@pytest.fixture
def ctx(tmp_path, valid_results, monkeypatch, tiny_preset):
    """Paths for the cases: a copy of the valid results, a plain file, ...;
    training is forbidden (every case must be refused before it)."""
    results = tmp_path / "results"
    shutil.copytree(valid_results, results)
    (tmp_path / "a_file.txt").write_text("not a folder\n")

    def no_training(*args, **kwargs):
        raise AssertionError("a run was trained although the input was bad")

    monkeypatch.setattr(runner_module, "execute_run", no_training)
    return {"tmp": tmp_path, "results": results, "board": results / "leaderboard.csv",
            "file": tmp_path / "a_file.txt"}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def exit_code(argv) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as stop:  # argparse usage errors
        return stop.code


def assert_refused(capsys, argv, *needles, code=2) -> str:
    """Nonzero exit, no traceback, none of our temporary file names nor an errno, and the last stderr line
    holds every needle."""
    assert exit_code(argv) == code
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    assert not re.search(r"\.tmp-|Errno", out.err + out.out), out.err
    lines = out.err.strip().splitlines()
    assert lines, "nothing on stderr"
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])
    return lines[-1]


RUN = ["run", "--preset", "tiny", "--no-progress", "--workers", "1"]

# (id, argv given the ctx paths, what the last line must contain: the bad value, then what is valid)
ARGV_CASES = [
    ("run-tasks-empty", lambda c: RUN + ["--tasks", "", "--results", c["results"]], "tasks", "empty", "give at least one"),
    ("run-set-unknown", lambda c: RUN + ["--set", "stepz=5", "--results", c["results"]], "KEY one of", "steps"),
    ("run-set-type", lambda c: RUN + ["--set", "steps=1.5", "--results", c["results"]], "'1.5' is not an integer"),
    ("run-set-range", lambda c: RUN + ["--set", "lr=0", "--results", c["results"]], "lr must be a finite number > 0"),
    ("run-set-bands", lambda c: RUN + ["--set", "validation_length=99", "--results", c["results"]],
     "validation_length 99 must lie strictly between"),
    ("run-set-twice", lambda c: RUN + ["--set", "steps=5", "--set", "steps=7", "--results", c["results"]],
     "--set steps is given twice (steps=5 and steps=7)"),
    ("run-set-and-select", lambda c: RUN + ["--set", "lr=0.01", "--select", "lr=1e-3,2e-3", "--results", c["results"]],
     "lr is both fixed (--set lr=0.01) and chosen on the validation band (--select lr=1e-3,2e-3)"),
    ("plan-set-and-preset-select", lambda c: ["run", "--preset", "arithmetic", "--set", "lr=0.01", "--plan",
                                              "--results", c["results"]],
     "lr is both fixed (--set lr=0.01)", "preset 'arithmetic' selects lr=5e-4,1e-3,2e-3"),
    ("run-tasks-comma", lambda c: RUN + ["--tasks", ",", "--results", c["results"]], "tasks", "empty", "give at least one"),
    ("run-encodings-empty", lambda c: RUN + ["--encodings", "", "--results", c["results"]], "encodings", "empty", "give at least one"),
    ("run-seeds-empty", lambda c: RUN + ["--seeds", "", "--results", c["results"]], "seeds", "empty", "give at least one"),
    ("run-seeds-comma", lambda c: RUN + ["--seeds", " , ", "--results", c["results"]], "seeds", "empty", "give at least one"),
    ("run-seeds-duplicate", lambda c: RUN + ["--seeds", "0,0", "--results", c["results"]], "0 is listed twice", "give each once"),
    ("run-tasks-duplicate", lambda c: RUN + ["--tasks", "copy,copy", "--results", c["results"]], "'copy' is listed twice", "give each once"),
    ("run-encodings-duplicate", lambda c: RUN + ["--encodings", "nope,nope", "--results", c["results"]], "'nope' is listed twice", "give each once"),
    ("run-seed-negative", lambda c: RUN + ["--seeds", "-1", "--results", c["results"]], "seed -1", "integers >= 0"),
    ("run-seed-float", lambda c: RUN + ["--seeds", "1.5", "--results", c["results"]], "'1.5'", "integers >= 0"),
    ("run-seed-word", lambda c: RUN + ["--seeds", "one", "--results", c["results"]], "'one'", "integers >= 0"),
    ("run-workers-negative", lambda c: RUN + ["--workers", "-3", "--results", c["results"]], "'-3'", "0 (auto) or a positive"),
    ("run-workers-word", lambda c: RUN + ["--workers", "many", "--results", c["results"]], "'many'", "0 (auto) or a positive"),
    ("run-checkpoint-zero", lambda c: RUN + ["--checkpoint-every", "0", "--results", c["results"]], "'0'", "seconds > 0"),
    ("run-checkpoint-word", lambda c: RUN + ["--checkpoint-every", "often", "--results", c["results"]], "'often'", "seconds > 0"),
    ("run-executor-unknown", lambda c: RUN + ["--executor", "slurm", "--results", c["results"]], "'slurm'", "choose from 'local', 'ray'"),
    ("run-task-unknown", lambda c: RUN + ["--tasks", "copyy", "--results", c["results"]], "'copyy'", "valid choices: addition"),
    ("run-encoding-unknown", lambda c: RUN + ["--encodings", "rop", "--results", c["results"]], "'rop'", "valid choices:"),
    ("run-preset-unknown", lambda c: ["run", "--preset", "huge", "--results", c["results"]], "'huge'", "valid choices: arithmetic"),
    ("run-preset-empty", lambda c: ["run", "--preset", "", "--results", c["results"]], "''", "valid choices: arithmetic"),
    ("run-results-is-file", lambda c: RUN + ["--results", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("run-out-is-file", lambda c: RUN + ["--results", c["results"], "--out", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("generate-out-under-file", lambda c: ["generate", "copy", "--lengths", "8", "--out", c["file"] / "g.jsonl"],
     "could not write", "a_file.txt/g.jsonl", "a_file.txt is a file, not a folder"),
    ("generate-out-missing-parent", lambda c: ["generate", "copy", "--lengths", "8", "--out",
                                               c["tmp"] / "no" / "such" / "g.jsonl"],
     "could not write", "no/such/g.jsonl", "its folder", "does not exist"),
    ("generate-out-is-folder", lambda c: ["generate", "copy", "--lengths", "8", "--out", c["tmp"]],
     "could not write", "it is a folder; give a file path"),
    ("score-predictions-folder", lambda c: ["score", "copy", c["tmp"]], "predictions", "a folder, not a regular file",
     "give the path of a readable predictions file"),
    ("run-results-unwritable", lambda c: RUN + ["--results", "/sys/kernel"], "/sys/kernel", "give a folder you can write to"),
    ("run-results-uncreatable", lambda c: RUN + ["--results", "/sys/lengthbench/results"], "/sys/lengthbench", "not a writable folder"),
    ("run-out-under-file", lambda c: RUN + ["--results", c["results"], "--out", c["file"] / "sub"], "a_file.txt/sub", "not a writable folder"),
    ("run-plan-results-is-file", lambda c: RUN + ["--plan", "--results", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("run-plan-seeds-duplicate", lambda c: RUN + ["--plan", "--seeds", "1,1"], "1 is listed twice", "give each once"),
    ("perf-config-unknown", lambda c: ["perf", "--configs", "huge"], "'huge'", "valid choices: horizon, quick, reference"),
    ("perf-steps-zero", lambda c: ["perf", "--steps", "0"], "'0'", "positive number of training steps"),
    ("perf-out-under-file", lambda c: ["perf", "--configs", "quick", "--out", c["file"] / "perf.json"], "a_file.txt", "is a file, not a folder"),
    ("run-unknown-flag", lambda c: RUN + ["--sedes", "0"], "--sedes", "--help"),
    ("leaderboard-missing", lambda c: ["leaderboard", "--results", c["tmp"] / "nowhere"], "nowhere", "does not exist; give the folder"),
    ("leaderboard-is-file", lambda c: ["leaderboard", "--results", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("leaderboard-empty-folder", lambda c: ["leaderboard", "--results", c["tmp"]], str("holds no run records"), "run `lengthbench run` first"),
    ("leaderboard-out-is-file", lambda c: ["leaderboard", "--results", c["results"], "--out", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("leaderboard-out-unwritable", lambda c: ["leaderboard", "--results", c["results"], "--out", "/sys/kernel"], "/sys/kernel", "give a folder you can write to"),
    ("compare-a-missing", lambda c: ["compare", c["tmp"] / "no.csv", c["board"], "--out", c["tmp"] / "cmp"], "no.csv", "no such file"),
    ("compare-b-folder", lambda c: ["compare", c["board"], c["results"], "--out", c["tmp"] / "cmp"], "results", "a folder, not a regular file; give the path of a readable leaderboard CSV file"),
    ("compare-not-leaderboard", lambda c: ["compare", c["file"], c["board"], "--out", c["tmp"] / "cmp"], "a_file.txt", "give a leaderboard.csv"),
    ("compare-out-is-file", lambda c: ["compare", c["board"], c["board"], "--out", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("compare-metric-unknown", lambda c: ["compare", c["board"], c["board"], "--metric", "f1"], "'f1'", "exact_match"),
    ("check-missing", lambda c: ["check", c["tmp"] / "none.py"], "none.py", "does not exist"),
    ("check-folder", lambda c: ["check", c["tmp"]], str("is a folder, not a file"), "give a .py file"),
    ("submit-preset-unknown", lambda c: ["submit", FIXTURES.parent.parent / "examples" / "log_decay_sink.py", "--preset", "huge"], "'huge'", "valid choices"),
    ("submit-name-collision", lambda c: ["submit", FIXTURES.parent.parent / "examples" / "log_decay_sink.py", "--preset", "tiny", "--name", "rope", "--results", c["results"]], "'rope' is already registered", "choose another name"),
    ("submit-name-invalid", lambda c: ["submit", FIXTURES.parent.parent / "examples" / "log_decay_sink.py", "--preset", "tiny", "--name", "my/enc", "--results", c["results"]], "'my/enc'", "use letters, digits"),
    ("submit-workers-negative", lambda c: ["submit", FIXTURES.parent.parent / "examples" / "log_decay_sink.py", "--preset", "tiny", "--workers", "-1"], "'-1'", "0 (auto) or a positive"),
    ("submit-results-is-file", lambda c: ["submit", FIXTURES.parent.parent / "examples" / "log_decay_sink.py", "--preset", "tiny", "--results", c["file"]], "a_file.txt", "is a file, not a folder"),
    ("bench-lengths-empty", lambda c: ["bench-generation", "--lengths", ""], "''", "lengths >= 1"),
    ("bench-lengths-zero", lambda c: ["bench-generation", "--lengths", "0"], "'0'", "integers >= 1"),
    ("bench-lengths-negative", lambda c: ["bench-generation", "--lengths", "40,-5"], "'-5'", "integers >= 1"),
    ("bench-lengths-word", lambda c: ["bench-generation", "--lengths", "long"], "'long'", "integers >= 1"),
    ("bench-batch-zero", lambda c: ["bench-generation", "--batch", "0"], "'0'", "positive number of examples"),
    ("bench-batch-negative", lambda c: ["bench-generation", "--batch", "-4"], "'-4'", "positive number of examples"),
    ("bench-tasks-empty", lambda c: ["bench-generation", "--tasks", ""], "--tasks", "give task names"),
    ("bench-task-unknown", lambda c: ["bench-generation", "--tasks", "sortt"], "'sortt'", "valid choices"),
    ("list-unknown", lambda c: ["list", "methods"], "'methods'", "choose from 'tasks'"),
    ("command-unknown", lambda c: ["trian"], "'trian'", "choose from 'run'"),
    ("command-missing", lambda c: [], "command", "--help"),
]


@pytest.mark.parametrize("case", ARGV_CASES, ids=[c[0] for c in ARGV_CASES])
def test_bad_arguments_are_refused_before_any_work(case, ctx, capsys):
    _, argv, *needles = case
    before = snapshot(ctx["tmp"])
    assert_refused(capsys, argv(ctx), *needles)
    assert snapshot(ctx["tmp"]) == before
    assert not Path("/sys/lengthbench").exists()


def test_ray_executor_without_ray_says_how_to_install_it(ctx, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the [ray] extra were not installed
    before = snapshot(ctx["tmp"])
    assert_refused(capsys, RUN + ["--executor", "ray", "--results", str(ctx["tmp"] / "new")],
                   "--executor ray needs Ray", 'pip install "lengthbench[ray]"')
    assert snapshot(ctx["tmp"]) == before


def test_too_many_workers_are_capped_and_said(ctx, caplog, monkeypatch):
    monkeypatch.setattr(grid_module.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(sitting_module, "run_grid", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert exit_code(RUN + ["--workers", "100000", "--results", ctx["results"]]) == 130
    assert "--workers 100000 capped at 2, the number of CPU cores here" in caplog.text


# ---------------------------------------------------------------- stored records


def _record_file(results: Path, cell: str) -> Path:
    return next(results.glob(f"{cell}__seed0__*.json"))


def _edit(results, cell, change):
    path = _record_file(results, cell)
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    return path


RECORD_CASES = [
    ("schema-99", lambda r: _edit(r, "copy__nope", lambda x: x.update(schema_version=99)), "schema_version 99", "reads version 1"),
    ("schema-banana", lambda r: _edit(r, "copy__nope", lambda x: x.update(schema_version="banana")), "schema_version 'banana'", "reads version 1"),
    ("ok-without-summary", lambda r: _edit(r, "copy__nope", lambda x: x.pop("summary")), "status ok but no summary", "move the file out"),
    ("ok-without-per-length", lambda r: _edit(r, "copy__nope", lambda x: x.pop("per_length")), "no per_length", "move the file out"),
    ("status-unknown", lambda r: _edit(r, "copy__nope", lambda x: x.update(status="great")), "status 'great'", "valid: ok, diverged"),
    ("summary-above-one", lambda r: _edit(r, "copy__nope", lambda x: x["summary"].update(ood_exact_match=7.5)), "7.5", "fraction in [0, 1]"),
    ("length-metric-negative", lambda r: _edit(r, "copy__nope", lambda x: x["per_length"][0].update(exact_match=-0.1)), "-0.1", "fraction in [0, 1]"),
    ("config-edited", lambda r: _edit(r, "copy__nope", lambda x: x["config"].update(steps=99)), "does not match its config", "move the file out"),
    ("config-missing", lambda r: _edit(r, "copy__nope", lambda x: x.pop("config")), "lacks config", "move the file out"),
    ("not-an-object", lambda r: _record_file(r, "copy__nope").write_text("[1, 2]"), "JSON list", "move the file out"),
    ("truncated", lambda r: _record_file(r, "copy__nope").write_text('{"run_id": "co'), "not a readable run record", "move the file out"),
    ("binary", lambda r: _record_file(r, "copy__nope").write_bytes(bytes(range(256)) * 3), "not a readable run record", "move the file out"),
    ("copied-over-other-cell", lambda r: shutil.copy(_record_file(r, "copy__nope"), _record_file(r, "copy__coupled")),
     "holds the record of run copy__nope", "move the file out"),
]


@pytest.mark.parametrize("case", RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
def test_invalid_records_are_refused_by_leaderboard(case, ctx, capsys):
    _, corrupt, *needles = case
    corrupt(ctx["results"])
    before = snapshot(ctx["tmp"])
    line = assert_refused(capsys, ["leaderboard", "--results", ctx["results"]], *needles)
    assert "__seed0__" in line and ".json" in line  # names the file
    assert snapshot(ctx["tmp"]) == before


# ---------------------------------------------------------------- leaderboard CSVs


# rows: 1 = parity_check/nope (ok), 2 = parity_check/coupled (n/a), 3 = copy/nope, 4 = copy/coupled
CSV_CASES = [
    ("mean-inf", lambda t: set_csv_cell(t, 1, "ood_exact_match_mean", "inf"), "'inf' is out of range", "valid: number in [0, 1]"),
    ("mean-750-percent", lambda t: set_csv_cell(t, 1, "ood_exact_match_mean", "7.5"), "'7.5' is out of range", "valid: number in [0, 1]"),
    ("mean-negative", lambda t: set_csv_cell(t, 1, "ood_token_accuracy_mean", "-0.2"), "'-0.2' is out of range", "[0, 1]"),
    ("mean-nan-text", lambda t: set_csv_cell(t, 1, "ood_exact_match_mean", "nan"), "'nan' is not a number", "or empty"),
    ("std-inf", lambda t: set_csv_cell(t, 1, "ood_exact_match_std", "inf"), "'inf' is out of range", "number in [0, 1]"),
    ("std-negative", lambda t: set_csv_cell(t, 1, "ood_exact_match_std", "-0.1"), "'-0.1' is out of range", "number in [0, 1]"),
    ("n-seeds-negative", lambda t: set_csv_cell(t, 1, "n_seeds", "-3"), "'-3' is out of range", "integer >= 0"),
    ("n-seeds-fraction", lambda t: set_csv_cell(t, 1, "n_seeds", "2.7"), "'2.7' is not an integer", "integer >= 0"),
    ("n-seeds-zero-but-ok", lambda t: set_csv_cell(t, 1, "n_seeds", "0"), "'n_seeds': 0 with status ok", "at least 1 seed"),
    ("n-seeds-on-na-row", lambda t: set_csv_cell(t, 2, "n_seeds", "2"), "'n_seeds': 2 with status not_applicable", "valid: 0"),
    ("status-unknown", lambda t: set_csv_cell(t, 1, "status", "great"), "'great' is not valid", "ok / not_applicable / failed"),
    ("level-unknown", lambda t: set_csv_cell(t, 1, "level", "XL"), "'XL' is not valid", "R / DCF / CS"),
    ("task-empty", lambda t: set_csv_cell(t, 1, "task", ""), "column 'task'", "non-empty text"),
    ("ok-mean-empty", lambda t: set_csv_cell(t, 1, "ood_exact_match_mean", ""), "empty with status ok", "number in [0, 1]"),
    ("rank-zero", lambda t: set_csv_cell(t, 1, "rank", "0"), "'0' is out of range", "number >= 1"),
    ("train-length-zero", lambda t: set_csv_cell(t, 1, "train_length", "0"), "'0' is out of range", "integer >= 1"),
    ("ci-above-one", lambda t: set_csv_cell(t, 1, "ood_exact_match_ci_high", "1.5"), "'1.5' is out of range", "[0, 1]"),
    ("frac-seeds-above-one", lambda t: set_csv_cell(t, 1, "frac_seeds_generalize_exact_match", "2"), "'2' is out of range", "[0, 1]"),
    ("gen-length-fraction", lambda t: set_csv_cell(t, 1, "generalization_length_exact_match", "3.5"), "'3.5' is not an integer", "integer >= 0"),
    ("schema-version-other", lambda t: set_csv_cell(t, 1, "schema_version", "1"), "version '1'", "reads versions 2, 3"),
    ("missing-column", lambda t: t.replace(",rank", ",rnk", 1), "missing column(s) rank", "give a leaderboard.csv"),
    ("header-only", lambda t: t.splitlines()[0] + "\n", "header only", "give a leaderboard.csv"),
    ("empty", lambda t: "", "empty file", "give a leaderboard.csv"),
    ("duplicate-key", lambda t: t + t.splitlines()[1] + "\n", "duplicate key task='parity_check', method='transformer/nope'", "row 6"),
    ("duplicate-columns", lambda t: "schema_version," + "a," * 2000 + "a\n", "column 'a' appears twice", "give a leaderboard.csv"),
    ("huge-header", lambda t: "schema_version" + ",a" * 1_000_000 + "\n", "first line longer than", "give a leaderboard.csv"),
    ("binary", lambda t: bytes(range(255, -1, -1)) * 8, "not a text CSV", "give a leaderboard.csv"),
    ("binary-after-header", lambda t: t.encode() + b"\xff\xfe\x00garbage\n", "not", "give a leaderboard.csv"),
    ("ragged-row", lambda t: t + "2,copy,R,x,ok,1,0,5,7,0.5,0.5\n,extra,cells,"  # more cells than the header
     + ",".join("1" * (t.splitlines()[0].count(",") + 10)) + "\n", "not", "give a leaderboard.csv"),
]


@pytest.mark.parametrize("case", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_impossible_leaderboard_values_are_refused_by_compare(case, ctx, capsys):
    _, mutate, *needles = case
    bad = ctx["tmp"] / "bad.csv"
    content = mutate(ctx["board"].read_text())
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = ctx["tmp"] / "cmp"
    assert main(["compare", str(ctx["board"]), str(ctx["board"]), "--out", str(out)]) == 0
    capsys.readouterr()
    before = snapshot(ctx["tmp"])
    line = assert_refused(capsys, ["compare", ctx["board"], bad, "--out", out], *needles)
    assert "bad.csv" in line
    assert snapshot(ctx["tmp"]) == before


# ---------------------------------------------------------------- plugins

PLUGINS = {
    "syntax-error": ("from lengthbench.models.encodings import PositionEncoding\ndef broken(:\n    pass\n",
                     ["plugin.py:2: syntax error"]),
    "raises-at-import": ("import math\n\nraise RuntimeError('plugin exploded')\n",
                         ["plugin.py:3: importing the encoding file raised RuntimeError: plugin exploded"]),
    "missing-import": ("import math\nimport no_such_module_xyz\n",
                       ["plugin.py:2", "'no_such_module_xyz', which is not installed"]),
    "sys-exit": ("import sys\nsys.exit(3)\n", ["plugin.py:2", "called sys.exit(3)", "only define and register"]),
    "binary": (bytes(range(256)) * 4, ["plugin.py: not a Python source file", "give a .py file"]),
    "registers-nothing": ("x = 1\n", ["plugin.py registers no encoding", "@register_encoding"]),
    "name-collision": ("from lengthbench.models.encodings import PositionEncoding, register_encoding\n"
                       "@register_encoding('rope')\nclass Mine(PositionEncoding):\n    pass\n",
                       ["plugin.py:2", "'rope' is already registered", "choose another name"]),
    "bad-name": ("from lengthbench.models.encodings import PositionEncoding, register_encoding\n"
                 "@register_encoding('my enc')\nclass Mine(PositionEncoding):\n    pass\n",
                 ["plugin.py:2", "'my enc' is not valid", "use letters, digits"]),
    "leaks-future": ((FIXTURES / "broken_leaky.py").read_text(),
                     ["'broken-leaky' (causality, packed examples compute as alone) fails the contract check", "lengthbench check FILE"]),
}


@pytest.mark.parametrize("command", ["run", "check", "submit"])
@pytest.mark.parametrize("fault", list(PLUGINS))
def test_broken_plugins_are_refused_the_same_way_by_every_command(fault, command, ctx, capsys):
    source, needles = PLUGINS[fault]
    plugin = ctx["tmp"] / "plugin.py"
    if fault == "leaks-future":
        plugin = FIXTURES / "broken_leaky.py"
    elif isinstance(source, bytes):
        plugin.write_bytes(source)
    else:
        plugin.write_text(source)
    argv = {"run": RUN + ["--plugin", plugin, "--results", ctx["results"]],
            "check": ["check", plugin],
            "submit": ["submit", plugin, "--preset", "tiny", "--results", ctx["results"], "--no-progress"]}[command]
    before = snapshot(ctx["tmp"])
    if fault == "leaks-future" and command == "check":  # check's answer is the report itself
        needles = ["broken_leaky.py: encoding 'broken-leaky' (causality, packed examples compute as alone) fails the contract check"]
        code = 1
    else:
        code = 2
    assert_refused(capsys, argv, *needles, code=code)
    assert snapshot(ctx["tmp"]) == before


def test_plugin_that_fails_half_way_registers_nothing(ctx, capsys):
    from lengthbench.models.encodings import encoding_names

    plugin = ctx["tmp"] / "half.py"
    plugin.write_text("from lengthbench.models.encodings import PositionEncoding, register_encoding\n"
                      "@register_encoding('half-registered')\nclass Half(PositionEncoding):\n    pass\n"
                      "raise ValueError('second encoding broke')\n")
    assert_refused(capsys, ["check", plugin], "half.py:5", "ValueError: second encoding broke")
    assert "half-registered" not in encoding_names()


def test_a_training_batch_that_cannot_fit_is_refused_before_any_run_naming_the_estimate(tmp_path, monkeypatch):
    """A batch of 400,000 under 2 GB: one line naming the batch size, the estimate, what is available and the
    largest batch that fits, before anything trains; quick's own batch fits the same 2 GB."""
    import lengthbench.benchmark.plan as plan
    from lengthbench.api import run
    from lengthbench.benchmark.grid import grid_configs
    from lengthbench.benchmark.presets import get_preset
    from lengthbench.core.errors import InputError

    monkeypatch.setattr(plan, "available_memory", lambda: 2_000_000_000)
    with pytest.raises(InputError) as refused:
        run("quick", tasks=["copy"], encodings=["rope"], settings={"batch_size": 400_000}, results=tmp_path,
            progress=False)
    message = str(refused.value)
    assert message.startswith("batch size 400000: a training step of copy would need about 43.1 GB")
    assert "2.0 GB is available here; a batch of at most about 18" in message and "\n" not in message
    assert not list(tmp_path.glob("*.json"))
    plan.check_training_memory(grid_configs(get_preset("quick")))  # the preset itself fits
