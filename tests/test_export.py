"""`lengthbench export`: a preset's test instances as a Hugging Face dataset folder, loaded back with
the `datasets` library and MLCommons' `mlcroissant` (both in the test command's extras), equal to
`generate`'s instances; `score` reads predictions keyed by the exported ids."""

import json
import logging
import os
import subprocess
import sys
from dataclasses import replace

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before datasets reads its settings: nothing is fetched
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from lengthbench import api  # noqa: E402
from lengthbench.benchmark.dataset import export_dataset  # noqa: E402
from lengthbench.benchmark.presets import PRESETS  # noqa: E402
from lengthbench.core.errors import InputError  # noqa: E402

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

# smoke in three formats: plain tasks, an index-hints task (`scored`, `position_ids`), a scratchpad
# task, and labels whose format cannot write the task (skipped, with why)
FORMATTED = replace(PRESETS["smoke"], formats=("plain", "index-hints", "scratchpad"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("dataset")
    return export_dataset(FORMATTED, out), out


def _load(out, config, split):
    return datasets.load_dataset(str(out), config, split=split, cache_dir=str(out.parent / "hf-cache"))


def test_every_config_loads_as_generate_writes_it(exported):
    written, out = exported
    assert set(written["configs"]) == {t for t in FORMATTED.grid_tasks() if t not in written["skipped"]}
    assert "parity_check+scratchpad" in written["configs"] and "multiplication+index-hints" not in written["configs"]
    assert written["skipped"] and all("format" in why for why in written["skipped"].values())
    for label, info in written["configs"].items():
        config = FORMATTED.run_config(label, "nope", 0)
        generated = api.generate(label, config.eval_lengths(), samples=config.eval_samples, seed=config.eval_seed)
        loaded = []
        for split in info["splits"]:
            for row in _load(out, label, split):
                assert row.pop("id") == "/".join(str(row[k]) for k in ("task", "length", "eval_seed", "n_samples",
                                                                        "index"))
                assert {"in_distribution": "id", "validation": "val", "test": "ood"}[split] == \
                    config.split(row["length"])
                loaded.append({k: v for k, v in row.items() if v is not None})
        assert sorted(loaded, key=lambda i: (i["length"], i["index"])) == generated, label


def test_the_card_declares_what_loads(exported):
    written, out = exported
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n")
    hints = "addition-index-hints"
    assert hints in written["configs"] and "scored" in written["configs"][hints]["columns"]
    builder = datasets.load_dataset_builder(str(out), hints, cache_dir=str(out.parent / "hf-cache"))
    assert list(builder.info.features) == written["configs"][hints]["columns"]  # the card's features
    assert {s: i.num_examples for s, i in builder.info.splits.items()} == {
        s: v["rows"] for s, v in written["configs"][hints]["splits"].items()}
    for label, info in written["configs"].items():
        assert f"| `{label}` | {info['task_version']} |" in card


def test_croissant_metadata_reads_back_the_same_rows(exported, caplog):
    mlcroissant = pytest.importorskip("mlcroissant")
    written, out = exported
    with caplog.at_level(logging.WARNING):
        dataset = mlcroissant.Dataset(jsonld=str(out / "croissant.json"))  # validates: raises on an error
    assert "not standard" not in caplog.text  # the official JSON-LD context
    records = list(dataset.records(record_set="addition-index-hints/test"))
    rows = pq.read_table(out / "addition-index-hints" / "test.parquet").to_pylist()
    assert len(records) == len(rows) > 0
    for record, row in zip(records, rows):
        got = {k.rsplit("/", 1)[1]: v.decode() if isinstance(v, bytes) else v for k, v in record.items()}
        assert got == row
    assert [f["sha256"] for f in json.loads((out / "croissant.json").read_text())["distribution"]][0]


def test_score_reads_predictions_keyed_by_exported_ids(exported, tmp_path):
    _, out = exported
    rows = pq.read_table(out / "parity_check" / "test.parquet").to_pylist()
    lines = [{"id": r["id"], "prediction": r["answer"] if i % 4 else "x"} for i, r in enumerate(rows)]
    path = tmp_path / "by-id.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    table = api.score("parity_check", path)
    assert table["n_samples"].sum() == len(rows)
    assert table["exact_match"].tolist() == pytest.approx([0.75] * len(table), abs=0.05)
    # the split itself with a prediction column (Parquet in, as a user's datasets code writes it)
    table = pq.read_table(out / "parity_check" / "test.parquet")
    table = table.append_column("prediction", table.column("answer"))
    pq.write_table(table, tmp_path / "predictions.parquet")
    assert api.score("parity_check", tmp_path / "predictions.parquet")["exact_match"].tolist() == [1.0] * 3


@pytest.mark.parametrize("line, says", [
    ({"id": "parity_check/9/1234/32/0"}, "differ from id"),  # with length 8 below
    ({"id": "parity_check/9/x/32/0"}, "not an exported instance's id"),
    ({"id": "copy/9/1234/32/0"}, "task 'copy', not 'parity_check'"),
])
def test_a_bad_id_is_refused_naming_it(tmp_path, line, says):
    line = {**line, "prediction": "0", **({"length": 8} if says == "differ from id" else {})}
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=says):
        api.score("parity_check", path)


def test_export_refuses_a_task_not_in_the_grid_or_listed_twice(tmp_path):
    with pytest.raises(InputError, match="--tasks bogus: not in preset quick's grid; its tasks are copy"):
        api.export("quick", tmp_path, tasks=["bogus"])
    with pytest.raises(InputError, match="--tasks lists copy twice; give each once"):
        api.export("quick", tmp_path, tasks=["copy", "parity_check", "copy"])
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_command_writes_quicks_test_sets_as_a_loadable_folder(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lengthbench", "export", "--preset", "quick", "--out",
                           str(tmp_path / "ds")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "wrote 16384 instances of 4 tasks of quick (copy, reverse_string, parity_check, addition)" in done.stdout
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == [
        "README.md", "addition", "copy", "croissant.json", "parity_check", "reverse_string"]
    test = _load(tmp_path / "ds", "addition", "test")
    generated = api.generate("addition", range(11, 17), preset="quick")  # quick's test band: 11..16
    assert [{k: v for k, v in row.items() if k != "id"} for row in test] == generated


def test_a_second_export_into_the_same_folder_leaves_no_file_of_a_band_it_lacks(tmp_path):
    export_dataset(PRESETS["smoke"], tmp_path, ["copy"])
    assert (tmp_path / "copy" / "validation.parquet").is_file()
    no_validation = replace(PRESETS["smoke"], settings={**PRESETS["smoke"].settings, "validation_length": 0})
    written = export_dataset(no_validation, tmp_path, ["copy"])
    assert set(written["configs"]["copy"]["splits"]) == {"in_distribution", "test"}
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["in_distribution.parquet", "test.parquet"]
