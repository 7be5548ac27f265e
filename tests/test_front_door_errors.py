"""The errors a Python user catches are the package's own names, and a few inputs once met silently or with the
wrong message are refused in one line naming the bad value and the valid choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lengthbench
from lengthbench.cli import main


def test_the_errors_a_script_catches_are_importable_from_the_package():
    from lengthbench import GridInterrupted, InputError, OutputError, RunsFailed, UnknownNameError

    assert issubclass(UnknownNameError, InputError) and issubclass(InputError, ValueError)
    assert issubclass(OutputError, OSError) and issubclass(RunsFailed, RuntimeError)
    assert GridInterrupted.__name__ == "GridInterrupted" and "InputError" in lengthbench.__all__
    with pytest.raises(lengthbench.UnknownNameError, match="'quik'.*did you mean 'quick'"):
        lengthbench.run("quik")


def test_an_empty_task_list_is_refused_by_export(tmp_path, capsys):
    assert main(["export", "--preset", "smoke", "--tasks", "", "--out", str(tmp_path / "d")]) == 2
    assert "--tasks: the list is empty" in capsys.readouterr().err and not (tmp_path / "d").exists()


def test_check_suggests_the_registered_name_a_typo_is_close_to(capsys):
    assert main(["check", "Forget"]) == 2
    err = capsys.readouterr().err
    assert "'Forget'" in err and "did you mean 'forget'" in err and "Traceback" not in err


def test_list_studies_json_is_every_study_as_json(capsys):
    assert main(["list", "studies", "--json"]) == 0
    studies = [json.loads(block) for block in capsys.readouterr().out.strip().split("\n\n")]
    assert {s["name"] for s in studies} >= {"horizon", "recall", "recognition"}
    assert all({"presets", "sources", "protocol", "report", "records"} <= set(s) for s in studies)


def test_json_of_a_listing_without_it_is_refused_naming_those_with_it(capsys):
    assert main(["list", "tasks", "--json"]) == 2
    assert "--json lists presets or studies" in capsys.readouterr().err


@pytest.mark.parametrize("call", [lambda: lengthbench.generate("copy", [], preset="smoke"),
                                  lambda: lengthbench.evaluate(lambda t: t, "copy", [], preset="smoke")])
def test_an_empty_list_of_lengths_is_refused_not_answered_with_nothing(call):
    with pytest.raises(lengthbench.InputError, match="lengths: the list is empty"):
        call()


def test_a_refused_reproduction_leaves_no_output_folder(tmp_path, capsys):
    """The records hold the report's tasks but not its methods (the report itself refuses): exit 2, and --out is
    not created (2 means nothing changed)."""
    records = tmp_path / "records"
    lengthbench.run("smoke", tasks=["parity_check"], encodings=["nope"], results=records, progress=False)
    assert main(["reproduce", "negative", "--results", str(records), "--out", str(tmp_path / "report")]) == 2
    assert "delta-rule" in capsys.readouterr().err and not (tmp_path / "report").exists()


@pytest.mark.parametrize("name,text", [("README.md", "# my notes\n"), ("croissant.json", '{"name": "mine"}')])
def test_export_refuses_a_folder_holding_someones_card_or_metadata(tmp_path, capsys, name, text):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / name).write_text(text)
    assert main(["export", "--preset", "smoke", "--tasks", "copy", "--out", str(folder)]) == 2
    assert f"holds a {name} that lengthbench did not write" in capsys.readouterr().err
    assert (folder / name).read_text() == text and sorted(p.name for p in folder.iterdir()) == [name]
    assert main(["export", "--preset", "smoke", "--tasks", "copy", "--out", str(tmp_path / "ours")]) == 0
    assert main(["export", "--preset", "smoke", "--tasks", "copy", "--out", str(tmp_path / "ours")]) == 0  # ours: again


def test_a_logs_path_that_is_a_file_is_refused_before_any_run(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    results = tmp_path / "records"
    results.mkdir()
    (results / "logs").write_text("my notes")
    argv = ["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--results", str(results),
            "--log", "tensorboard", "--no-progress"]
    assert main(argv) == 2
    assert "logs" in capsys.readouterr().err and not list(results.glob("*__seed*.json"))


def test_check_of_a_family_whose_package_is_missing_names_the_extra(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # as if the [hf] extra were not installed
    assert main(["check", "hf-llama"]) == 2
    err = capsys.readouterr().err
    assert "transformers" in err and "pip install" in err and "FAIL" not in err


@pytest.mark.slow  # two grids and a report: 3.5 s each on 2 cores
@pytest.mark.parametrize("study,tasks,encodings,not_applicable", [
    ("state", ["word_problem_s3", "flip_flop"], ["nope", "rope"], "flip_flop+scratchpad"),
    ("mechanisms", ["parity_check", "copy"], ["nope", "forget"], "copy+scratchpad")])
def test_a_report_reads_a_folder_whose_grid_had_a_format_that_does_not_apply(study, tasks, encodings,
                                                                             not_applicable, tmp_path):
    """A task in the scratchpad format it does not have is recorded n/a: the report reads the folder, and the
    n/a cell is not a task of it."""
    records = tmp_path / "records"
    lengthbench.run("smoke", tasks=tasks, encodings=encodings, formats=["plain", "scratchpad"], results=records,
                    progress=False)
    text = lengthbench.api.reproduce(study, records, tmp_path / "report")
    assert not_applicable not in text.split("wrote reproduction")[0]


def test_a_python_evaluate_of_a_missing_folder_is_not_told_about_a_flag():
    with pytest.raises(lengthbench.InputError, match="saved model 'no_such_model' is not a saved model folder") as err:
        lengthbench.evaluate("no_such_model", "copy", [3], preset="smoke")
    assert "--hf" not in str(err.value)


@pytest.fixture
def preset_of():
    """Register a variant of ``smoke`` for one test (taken back after it)."""
    from dataclasses import replace

    from lengthbench.benchmark.presets import PRESETS, register_preset

    made = []

    def make(name, **changes):
        made.append(name)
        return register_preset(replace(PRESETS["smoke"], name=name, **changes)).name

    yield make
    for name in made:
        PRESETS.remove(name)


def _refused_before_any_run(tmp_path, match, preset="smoke", **kwargs):
    """Refused by `plan` and by `run` alike, with nothing written."""
    grid = dict(tasks=kwargs.pop("tasks", ["copy"]), encodings=kwargs.pop("encodings", ["nope"]), seeds=[0], **kwargs)
    with pytest.raises(lengthbench.InputError, match=match):
        lengthbench.api.plan(preset, results=tmp_path / "runs", **grid)
    with pytest.raises(lengthbench.InputError, match=match):
        lengthbench.run(preset, results=tmp_path / "runs", progress=False, **grid)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("settings, match", [
    ({"train_length": 1}, r"train_length 1 is below task 'recognize_even_pairs''s shortest length, 2"),
    ({"test_length": 5}, r"test_length 5 leaves no test band: it must exceed validation_length 0 and train_length 5"),
], ids=["below-the-tasks-minimum", "no-test-band"])
def test_lengths_a_task_cannot_take_are_refused_before_any_run(tmp_path, settings, match):
    _refused_before_any_run(tmp_path, match, tasks=["recognize_even_pairs"],
                            settings={"validation_length": 0, **settings})


@pytest.mark.parametrize("settings, match", [
    ({"batch_size": 10_000_000}, r"batch size 10000000: a training step of copy would need about"),
    ({"test_length": 200_000}, r"test_length 200000: one evaluated sequence of copy has 400002 tokens"),
], ids=["batch", "test-length"])
def test_a_grid_that_cannot_fit_in_memory_is_refused_by_plan_as_by_run(tmp_path, settings, match):
    _refused_before_any_run(tmp_path, match, settings=settings)


def test_a_model_that_cannot_be_built_is_refused_before_any_run(tmp_path, preset_of):
    from dataclasses import replace

    from lengthbench.benchmark.presets import PRESETS

    size = PRESETS["smoke"].model
    three = preset_of("smoke-three-heads", model=replace(size, n_heads=3))
    _refused_before_any_run(tmp_path, rf"transformer/nope cannot be built at d_model {size.d_model}, 3 heads.*"
                                      "does not divide", preset=three)
    none = preset_of("smoke-no-heads", model=replace(size, n_heads=0))
    _refused_before_any_run(tmp_path, r"model n_heads 0 must be a positive integer", preset=none)
    rnope = preset_of("smoke-rnope-0", encoding_params={"rnope": {"nope_every": 0}})
    _refused_before_any_run(tmp_path, r"transformer/rnope cannot be built .*nope_every must be at least 1, got 0",
                            preset=rnope, encodings=["rnope"])


REFERENCE = Path(__file__).resolve().parent.parent / "leaderboard" / "reference"


@pytest.mark.parametrize("name, argv", [
    ("leaderboard.csv", ["leaderboard", "--results", REFERENCE / "quick" / "records"]),
    ("leaderboard.html", ["leaderboard", "--results", REFERENCE / "quick" / "records"]),
    ("README.md", ["leaderboard", "--reference", "--results", REFERENCE / "quick" / "records"]),
    ("reproduction.md", ["reproduce", "recall", "--preset", "horizon-recall", "--results", REFERENCE / "horizon" / "records"]),
])
def test_a_folder_holding_a_users_file_of_an_output_name_is_refused_not_overwritten(name, argv, tmp_path, capsys):
    """`leaderboard` and `reproduce` rewrite what they wrote before, never a file of the same name they did not."""
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("my own notes\n")
    assert main([*map(str, argv), "--out", str(out)]) == 2
    assert f"holds a {name} that lengthbench did not write" in capsys.readouterr().err
    assert (out / name).read_text() == "my own notes\n" and len(list(out.iterdir())) == 1
