"""The hf-* families (Hugging Face transformers' Llama, GPT-NeoX and BLOOM blocks trained by the harness)
and `lengthbench evaluate --hf DIR` (a saved transformers model scored on the benchmark's instances).
Every model is built from a local config: nothing is downloaded."""

import subprocess
import sys

import pandas as pd
import pytest

from lengthbench import api
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.tools.matching import MATCH_TOLERANCE, parameters
from lengthbench.core.errors import InputError
from lengthbench.models.families import ModelSize, build_model

transformers = pytest.importorskip("transformers")
HF_FAMILIES = ("hf-llama", "hf-gpt-neox", "hf-bloom")
SIZE = ModelSize(d_model=32, n_layers=1, n_heads=2, d_ff=96)


@pytest.mark.parametrize("preset", ["full", "standard"])
def test_each_block_has_the_transformers_parameters_at_the_presets_shape(preset):
    grid = PRESETS[preset]
    for task in grid.tasks:
        size = grid.run_config(task, "nope", 0).model
        target = parameters("transformer", task, size)
        for family in HF_FAMILIES:
            assert abs(parameters(family, task, size) / target - 1) <= MATCH_TOLERANCE, (family, task)


def test_each_family_is_the_architecture_it_names():
    llama, neox, bloom = (build_model(f, 20, SIZE, 0).model for f in HF_FAMILIES)
    assert isinstance(llama, transformers.LlamaForCausalLM) and llama.config.intermediate_size == 64  # 2/3 of 96
    assert isinstance(neox, transformers.GPTNeoXForCausalLM) and neox.config.intermediate_size == 96
    rope = getattr(neox.config, "rope_parameters", None) or {"partial_rotary_factor": neox.config.rotary_pct}  # < 5.0
    assert rope["partial_rotary_factor"] == 0.25
    assert isinstance(bloom, transformers.BloomForCausalLM)
    assert bloom.transformer.h[0].mlp.dense_h_to_4h.weight.shape == (96, 32)  # d_ff, not BLOOM's 4 d_model
    std = bloom.transformer.h[0].mlp.dense_h_to_4h.weight.std().item()
    assert abs(std - bloom.config.initializer_range) < 0.005  # BLOOM's own initialization
    assert bloom.lm_head.weight.data_ptr() != bloom.transformer.word_embeddings.weight.data_ptr()


@pytest.mark.slow
def test_the_families_train_through_a_grid(tmp_path):
    board = api.run("smoke", tasks=["parity_check"], models=list(HF_FAMILIES), results=tmp_path / "records",
                    out=tmp_path / "out", progress=False)
    assert sorted(board.method) == sorted(HF_FAMILIES) and set(board.n_errors) == {0}
    records = api.load_records(tmp_path / "records")
    assert set(records.status) == {"ok"} and records.run_id.nunique() == 3


@pytest.fixture(scope="module")
def saved_llama(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama")
    model = build_model("hf-llama", 40, SIZE, 0).model
    model.save_pretrained(folder)
    return model, folder


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "lengthbench", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_evaluate_hf_scores_a_saved_model_as_the_python_api_does(saved_llama, tmp_path):
    model, folder = saved_llama
    expected = api.evaluate(model, "copy", [3, 12], samples=16)
    done = _cli("evaluate", "copy", "--hf", str(folder), "--lengths", "3,12", "--samples", "16",
                "--out", str(tmp_path), "--method", "tiny-llama")
    assert done.returncode == 0, done.stderr
    written = pd.read_csv(tmp_path / "score.csv")
    assert written.token_accuracy.tolist() == pytest.approx(expected.token_accuracy.tolist())
    assert written.token_accuracy.gt(0).any()  # a real score, not an empty one
    assert pd.read_csv(tmp_path / "leaderboard.csv").method.tolist() == ["external/tiny-llama"]


@pytest.mark.parametrize("make, says", [
    (lambda p: p / "missing", "(no such folder)"),
    (lambda p: p, "(no config.json)"),
    (lambda p: (p / "config.json").write_text('{"model_type": "llama"}') and p, "transformers cannot load it"),
])
@pytest.mark.slow
def test_evaluate_hf_refuses_what_is_no_saved_model_in_one_line(tmp_path, make, says):
    done = _cli("evaluate", "copy", "--hf", str(make(tmp_path)), "--lengths", "3")
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_model_whose_vocabulary_is_smaller_than_the_tasks_is_refused(tmp_path):
    small = build_model("hf-gpt-neox", 6, SIZE, 0).model  # copy has 8 token ids
    small.save_pretrained(tmp_path)
    with pytest.raises(InputError, match="cannot read the task's token ids 0..7 .* cover the task's 8 tokens"):
        api.evaluate(str(tmp_path), "copy", [3], samples=4)


def test_a_grid_with_an_hf_family_and_no_transformers_is_refused_before_any_run(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else
                        find_spec(name, *a))
    with pytest.raises(InputError, match=r"model family hf-llama needs the transformers package: pip install "
                                         r"\"lengthbench\[hf\]\" \(from a clone: pip install -e \"\.\[hf\]\"\) "
                                         r"\(nothing was run\)"):
        api.run("smoke", tasks=["copy"], models=["hf-llama"], results=tmp_path, progress=False)
    assert not list(tmp_path.glob("*.json"))


def _broken_copy(source, folder, damage):
    """A copy of the saved model ``source`` in ``folder`` with one file damaged by ``damage(folder)``."""
    import shutil

    shutil.copytree(source, folder)
    damage(folder)
    return folder


def _weights(folder):
    return next(p for p in folder.iterdir() if p.name.startswith("model") and p.suffix in (".safetensors", ".bin"))


@pytest.mark.parametrize("damage, says", [
    (lambda f: _weights(f).write_bytes(_weights(f).read_bytes()[: len(_weights(f).read_bytes()) // 2]),
     "its weights cannot be read"),
    (lambda f: _weights(f).write_bytes(b""), "its weights cannot be read"),
    (lambda f: _weights(f).write_bytes(b"\x00garbage" * 100), "its weights cannot be read"),
    (lambda f: (f / "config.json").write_text("{not json"), "config.json"),
    (lambda f: (f / "config.json").write_text((f / "config.json").read_text().replace('"hidden_size": 32',
                                                                                    '"hidden_size": 48')),
     "do not fit its config"),
], ids=["truncated", "empty", "garbage", "config-not-json", "config-mismatch"])
def test_a_broken_saved_model_is_refused_in_one_line_naming_what_is_wrong(saved_llama, tmp_path, damage, says):
    folder = _broken_copy(saved_llama[1], tmp_path / "model", damage)
    with pytest.raises(InputError, match=f"saved model .*{says}") as refused:
        api.evaluate(str(folder), "copy", [3], samples=4)
    assert "\n" not in str(refused.value)


def test_a_model_whose_positions_end_before_the_tasks_sequences_is_refused_for_its_positions(tmp_path):
    """GPT-2's learned positions stop at n_positions: a longer sequence is refused for its length, not its tokens."""
    config = transformers.GPT2Config(vocab_size=40, n_positions=16, n_embd=32, n_layer=1, n_head=2)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path)
    assert api.evaluate(str(tmp_path), "copy", [3], samples=4).status.tolist() == ["ok"]  # 9 tokens fit
    with pytest.raises(InputError, match=r"reads at most 16 positions \(its config's n_positions\); these sequences "
                                         r"have 26") as refused:
        api.evaluate(str(tmp_path), "copy", [3, 12], samples=4)
    assert "vocabulary" not in str(refused.value)
