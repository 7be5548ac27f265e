"""A model lengthbench saves carries a tokenizer of its task's symbols (models.saved_model): every symbol
round-trips with the task's id, the prompt is what the model read in training, and a folder saved for one
task is refused on another."""

import json

import pytest

from lengthbench.benchmark.instances import evaluation_instances
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.sitting import narrowed_grid
from lengthbench.core.errors import InputError
from lengthbench.models.families import ModelSize, build_model
from lengthbench.models.saved_model import (
    CHAT_TEMPLATE, PROMPT, RUN_FILE, check_folder_tokenizer, check_saves_models, save_model_folder, task_tokenizer,
)
from lengthbench.tasks import TASKS, get_task
from lengthbench.tasks.cells import task_label
from lengthbench.tasks.formats import FORMATS, label_not_applicable

transformers = pytest.importorskip("transformers")
SIZE = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=32)


def _labels():
    return sorted({label for task in TASKS.names() for fmt in FORMATS.names()
                   if label_not_applicable(label := task_label(task, fmt)) is None})


@pytest.mark.parametrize("label", _labels())
def test_every_symbol_of_every_task_round_trips_with_the_tasks_id(label):
    task = get_task(label)
    tokenizer = task_tokenizer(task)
    for i, symbol in enumerate(task.symbols):
        assert tokenizer.convert_tokens_to_ids(symbol) == 4 + i
        assert tokenizer(symbol).input_ids == [4 + i]
        assert tokenizer.decode([4 + i]) == symbol
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("<pad>", "<bos>", "<sep>", "<eos>")] == [0, 1, 2, 3]
    assert len(tokenizer) == task.vocab_size


@pytest.mark.parametrize("label", ["parity_check", "addition+reversed", "recognize_cycle_navigation", "mqar"])
def test_the_prompt_as_text_is_the_token_ids_the_model_read(label):
    tokenizer = task_tokenizer(get_task(label))
    for instance in evaluation_instances(label, [6], 4):
        assert tokenizer(PROMPT.format(input=instance["input"])).input_ids == instance["input_ids"]
        chat = tokenizer.apply_chat_template([{"role": "user", "content": instance["input"]}], tokenize=False,
                                             add_generation_prompt=True)
        assert tokenizer(chat).input_ids == instance["input_ids"]
        answer_and_end = instance["answer_ids"] + [3]
        assert tokenizer.decode(answer_and_end, skip_special_tokens=True) == instance["answer"]


def test_a_symbol_outside_the_task_is_refused_not_mapped():
    tokenizer = task_tokenizer(get_task("parity_check"))
    with pytest.raises(Exception, match="UNK|unk"):
        tokenizer("<bos> 1 2 <sep>")


def test_a_saved_folder_loads_with_the_auto_classes_and_names_its_run(tmp_path):
    task = get_task("parity_check")
    model = build_model("hf-llama", task.vocab_size, SIZE, 0)
    folder = save_model_folder(model, task, tmp_path / "model", {"run_id": "r1"})
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    assert tokenizer("<bos> 1 0 <sep>").input_ids == [1, 5, 4, 2] and tokenizer.chat_template == CHAT_TEMPLATE
    assert loaded.config.vocab_size == task.vocab_size
    assert json.loads((folder / RUN_FILE).read_text()) == {"task": "parity_check", "task_version": 1, "run_id": "r1"}
    assert not (tmp_path / "model.partial").exists()


def test_a_folder_saved_for_one_task_is_refused_on_another(tmp_path):
    task = get_task("parity_check")
    folder = save_model_folder(build_model("hf-llama", task.vocab_size, SIZE, 0), task, tmp_path / "m", {})
    check_folder_tokenizer(folder, task)
    with pytest.raises(InputError, match=r"'a' not in it, task copy gives it id 4.*saved for another task"):
        check_folder_tokenizer(folder, get_task("copy"))
    (folder / "tokenizer.json").write_text('{"model": {"type": "BPE"}}')
    with pytest.raises(InputError, match="not the word-level tokenizer lengthbench saves"):
        check_folder_tokenizer(folder, task)
    (folder / RUN_FILE).unlink()  # a folder saved elsewhere: read by ids, as before
    check_folder_tokenizer(folder, get_task("copy"))


def test_save_models_is_refused_for_a_grid_of_no_transformers_family_and_warned_for_a_mixed_one(caplog):
    grid = PRESETS["smoke"]
    with pytest.raises(InputError, match=r"--save-models.*\(transformer\).*hf-llama, hf-gpt-neox, hf-bloom"):
        check_saves_models(grid_configs(grid))
    mixed, _ = narrowed_grid("smoke", tasks=["parity_check"], encodings=["rope"], models=["transformer", "hf-llama"])
    check_saves_models(grid_configs(mixed))
    assert "the models of transformer are not transformers classes" in caplog.text


def test_plan_refuses_save_models_as_run_does(capsys):
    from lengthbench.cli import main

    assert main(["run", "--preset", "smoke", "--plan", "--save-models"]) != 0
    assert "--save-models saves transformers models" in capsys.readouterr().err


def test_a_model_that_cannot_be_saved_costs_the_model_not_the_runs_record(tmp_path, caplog):
    from lengthbench.benchmark.runner import _save_model
    from lengthbench.benchmark.store import ResultsFolder

    grid, _ = narrowed_grid("smoke", tasks=["parity_check"], models=["hf-llama"])
    config = grid_configs(grid)[0]
    (tmp_path / "models").write_text("a file where the models folder goes")
    _save_model(config.build_model(get_task("parity_check").vocab_size), config, ResultsFolder(tmp_path))
    assert f"{config.run_id}: its model cannot be saved to {tmp_path / 'models' / config.run_id}" in caplog.text
