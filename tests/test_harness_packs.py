"""`lengthbench export --lm-eval --inspect`: the test sets as an lm-evaluation-harness pack and Inspect tasks.

The end-to-end test trains an hf-llama run of `smoke`, saves it with its tokenizer (`run --save-models`) and
scores it three ways, offline: `lengthbench evaluate --hf`, `lm_eval` on the pack and `inspect eval` on the
task file must give the same exact match at every length."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lengthbench import api
from lengthbench.benchmark.dataset import export_dataset
from lengthbench.benchmark.harness_scoring import answer_right
from lengthbench.benchmark.instances import evaluation_instances, score_predictions
from lengthbench.benchmark.presets import PRESETS
from lengthbench.core.errors import InputError

pytest.importorskip("pyarrow")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "INSPECT_DISPLAY": "none", "TQDM_DISABLE": "1"}
INSTANCES = evaluation_instances("addition+index-hints", [3], 4) + evaluation_instances("copy", [4], 4)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INSTANCES), st.data())
def test_the_packs_exact_match_is_lengthbenchs_score_of_the_same_text(instance, data):
    """A completion (the answer, cut, extended, with a symbol changed or an unknown word) is right for the
    packs exactly when `lengthbench score` counts it as an exact match."""
    words = instance["answer"].split()
    task = instance["task"]
    symbols = sorted({w for i in INSTANCES if i["task"] == task for w in i["answer"].split()}) + ["?"]
    cut = data.draw(st.integers(0, len(words) + 2))
    completion = words[:cut] + data.draw(st.lists(st.sampled_from(symbols), max_size=3))
    if data.draw(st.booleans()) and completion:
        completion[data.draw(st.integers(0, len(completion) - 1))] = data.draw(st.sampled_from(symbols))
    text = " ".join(completion)
    line = {k: instance[k] for k in ("task", "length", "index", "n_samples", "eval_seed")} | {"prediction": text}
    ours = score_predictions(task, [(1, line)])[0]["exact_match"] == 1.0
    assert answer_right(text, instance["answer"], instance.get("scored")) == ours


def test_export_writes_the_pack_the_inspect_tasks_and_the_hubs_eval_yaml(tmp_path, capsys):
    from lengthbench.cli import main

    out = tmp_path / "data"
    assert main(["export", "--preset", "smoke", "--out", str(out), "--lm-eval", "--inspect"]) == 0
    printed = capsys.readouterr().out
    pack = out / "lm_eval"
    assert sorted(p.name for p in pack.iterdir()) == [
        "lengthbench_smoke.yaml", "lengthbench_smoke_addition.yaml", "lengthbench_smoke_copy.yaml",
        "lengthbench_smoke_parity_check.yaml", "lengthbench_smoke_reverse_string.yaml", "utils.py"]
    copy = (pack / "lengthbench_smoke_copy.yaml").read_text()
    assert "doc_to_text: '<bos> {{input}} <sep>'" in copy and "max_gen_toks: 10" in copy  # copy's longest answer
    assert [f"exact_match_length_{n}" in copy for n in (7, 8, 10, 11)] == [False, True, True, False]
    assert "  - 'lengthbench_smoke_copy'" in (pack / "lengthbench_smoke.yaml").read_text()
    tasks_file = (out / "inspect_tasks.py").read_text()
    assert "@task\ndef parity_check():" in tasks_file and "max_tokens=1)" in tasks_file
    compile(tasks_file, "inspect_tasks.py", "exec")
    assert "evaluation_framework: inspect-ai" in (out / "eval.yaml").read_text()
    assert "lm-eval pack" in printed and "Inspect tasks" in printed and "eval.yaml" in printed


def test_every_label_is_a_python_name_for_inspect():
    from lengthbench.benchmark.harness_packs import inspect_task_name

    assert [inspect_task_name(label) for label in ("addition+reversed", "3sum", "import", "copy")] == [
        "addition_reversed", "task_3sum", "task_import", "copy"]


def test_a_format_that_gives_symbols_between_the_answers_is_left_out_naming_why(tmp_path):
    written = api.export("smoke", tmp_path, tasks=["addition"], lm_eval=True, inspect=True)
    assert written["harness_skipped"] == {}
    hinted = export_dataset(replace(PRESETS["smoke"], formats=("plain", "index-hints")), tmp_path / "h",
                            ["addition-index-hints"], lm_eval=True, inspect=True)
    assert "gives the model symbols between the answer's" in hinted["harness_skipped"]["addition-index-hints"]
    assert hinted["harnesses"] == {} and not (tmp_path / "h" / "lm_eval").exists()  # nothing to pack: no pack
    both = export_dataset(replace(PRESETS["smoke"], formats=("plain", "index-hints")), tmp_path / "b",
                          ["addition", "addition-index-hints"], lm_eval=True, inspect=True)
    assert list(both["harness_skipped"]) == ["addition-index-hints"]
    assert [p.name for p in (tmp_path / "b" / "lm_eval").glob("*index*")] == []
    assert "index" not in (tmp_path / "b" / "eval.yaml").read_text()


@pytest.mark.parametrize("name", ["eval.yaml", "inspect_tasks.py", "lm_eval/mine.yaml"])
def test_export_refuses_a_folder_holding_someones_harness_file_and_rewrites_its_own(tmp_path, name):
    api.export("smoke", tmp_path, tasks=["copy"], lm_eval=True, inspect=True)
    api.export("smoke", tmp_path, tasks=["copy"], lm_eval=True, inspect=True)  # its own: rewritten
    (tmp_path / name).write_text("mine\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(InputError, match=f"holds .*{Path(name).name}.*lengthbench did not write"):
        api.export("smoke", tmp_path, tasks=["copy"], lm_eval=True, inspect=True)
    assert (tmp_path / name).read_text() == "mine\n" and sorted(p.name for p in tmp_path.rglob("*")) == before


HARNESSES = """
import json, lm_eval
from inspect_ai import eval as inspect_eval
from lm_eval.tasks import TaskManager
out = lm_eval.simple_evaluate(model="hf", model_args={{"pretrained": {model!r}, "device": "cpu"}},
                              tasks=["lengthbench_smoke_parity_check"], batch_size=16,
                              task_manager=TaskManager(include_path={pack!r}, include_defaults=False))
metrics = out["results"]["lengthbench_smoke_parity_check"]
print("numbers", json.dumps({{k.split(",")[0].removeprefix("exact_match_length_"): v for k, v in metrics.items()
                  if k.startswith("exact_match_length_") and "stderr" not in k}}))
log, = inspect_eval({tasks!r} + "@parity_check", model="hf/local", display="none", log_dir="logs",
                    model_args={{"model_path": {model!r}, "do_sample": False, "device": "cpu"}})
assert log.status == "success", log.error
print("numbers", json.dumps({{k: m.value for k, m in log.results.scores[0].metrics.items() if k != "all"}}))
"""


def _harnesses(model: Path, data: Path, cwd: Path) -> tuple[dict, dict]:
    """Exact match per length from lm_eval on the pack and from Inspect on the task file, in a fresh
    interpreter, offline (each prints its numbers as a JSON line after `numbers`)."""
    code = HARNESSES.format(model=str(model), pack=str(data / "lm_eval"), tasks=str(data / "inspect_tasks.py"))
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **OFFLINE})
    assert done.returncode == 0, done.stderr[-3000:]
    lm_eval, inspect = (json.loads(line.removeprefix("numbers ")) for line in done.stdout.splitlines()
                        if line.startswith("numbers "))
    return lm_eval, inspect


@pytest.mark.slow
def test_one_number_three_ways_evaluate_hf_lm_eval_and_inspect_agree_offline(tmp_path, caplog):
    pytest.importorskip("lm_eval")
    pytest.importorskip("inspect_ai")
    api.run("smoke", tasks=["parity_check"], models=["hf-llama"], results=tmp_path / "runs", progress=False,
            save_models=True, workers=1)
    model = next((tmp_path / "runs" / "models").iterdir())
    ours = api.evaluate(str(model), "parity_check", preset="smoke")
    record = api.load_records(tmp_path / "runs")
    assert ours.exact_match.tolist() == record.sort_values("length").exact_match.tolist()  # the run's own numbers
    api.export("smoke", tmp_path / "data", tasks=["parity_check"], lm_eval=True, inspect=True)
    test_band = {str(n): e for n, e in zip(ours.length, ours.exact_match) if n >= 8}
    assert 0 < min(test_band.values()) and max(test_band.values()) < 1  # a test that can tell numbers apart
    lm_eval, inspect = _harnesses(model, tmp_path / "data", tmp_path)
    assert lm_eval == pytest.approx(test_band) and inspect == pytest.approx(test_band)
    shutil.rmtree(model)  # a model is saved by the run that trains it: a reused run without one is named
    api.run("smoke", tasks=["parity_check"], models=["hf-llama"], results=tmp_path / "runs", progress=False,
            save_models=True, workers=1)
    assert "1 of the grid's finished runs have no saved model" in caplog.text


@pytest.mark.slow
def test_a_chosen_runs_saved_model_is_beside_its_record(tmp_path):
    board = api.run("smoke", tasks=["parity_check"], models=["hf-llama"], results=tmp_path, progress=False,
                    select="lr=1e-3,3e-3", save_models=True, workers=1)
    chosen = api.load_records(tmp_path).run_id.unique()
    assert len(board) == 1 and len(chosen) == 1
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == list(chosen)
    assert len(list((tmp_path / "selection" / "models").iterdir())) == 2  # every value's run saved its own


@pytest.mark.slow
def test_the_hubs_eval_yaml_builds_inspects_own_tasks(tmp_path, monkeypatch):
    """Inspect's own reader of a Hub dataset's eval.yaml (`inspect eval hf/USER/NAME`) builds every task, fed
    the exported folder instead of the Hub."""
    hf = pytest.importorskip("inspect_ai._eval.task.hf")
    import huggingface_hub
    import inspect_ai.dataset

    api.export("smoke", tmp_path, lm_eval=False, inspect=True)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda **_: str(tmp_path / "eval.yaml"))
    monkeypatch.setattr(hf, "hf_dataset", lambda path, revision, **kw: inspect_ai.dataset.hf_dataset(
        str(tmp_path), **kw))
    tasks = hf.task_create_from_hf("hf/user/lengthbench-smoke")
    assert sorted(t.name.split("/")[-1] for t in tasks) == ["addition", "copy", "parity_check", "reverse_string"]
    copy = next(t for t in tasks if t.name.endswith("copy"))
    sample = copy.dataset[0]
    assert sample.input and sample.target and sample.metadata == {"length": 8}
