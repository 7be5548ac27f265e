"""An exported dataset as tasks of the harnesses people already run (``export --lm-eval``, ``--inspect``).

Beside the Parquet files of ``benchmark.dataset``:

* ``lm_eval/``: an lm-evaluation-harness task pack (``lm_eval --include_path DIR/lm_eval``). One task YAML per
  task label, ``lengthbench_<preset>_<label>``, on the label's test split: the prompt ``<bos> INPUT <sep>`` (as
  the model read it in training), greedy ``generate_until`` the model's ``<eos>`` (at most the split's longest
  answer), and lengthbench's exact match (``harness_scoring``, the pack's ``utils.py``) overall and per task
  length (``exact_match_length_N``); a group YAML, ``lengthbench_<preset>``, of them all.
* ``inspect_tasks.py``: an Inspect ``@task`` per label (``inspect eval DIR/inspect_tasks.py@LABEL``), the same
  split, greedy generation and exact match, accuracy grouped by length. The prompt is the model's chat template
  (a saved model's tokenizer writes ``<bos> INPUT <sep>``: ``models.saved_model``).
* ``eval.yaml``: the same tasks as the Hub's community evaluations read them (Inspect's ``hf/`` tasks). Their
  scorers are Inspect's built-ins only, so it scores the completion as a whole (``pattern``, case kept): right
  when the model writes the answer and stops. That differs from the harness's score (and the two above) only
  for a model that writes the right answer and goes on without ``<eos>``.

Labels whose format gives the model symbols as it answers (index hints, teacher-forced between the answer's
symbols) are left out, with the reason: a text harness generates every symbol itself, so its score would not
be lengthbench's. Nothing is downloaded or uploaded.
"""

from __future__ import annotations

import inspect
import keyword
import re
import shutil
from pathlib import Path

from lengthbench.benchmark import harness_scoring
from lengthbench.benchmark.files import refuse_foreign_files, write_text
from lengthbench.core.errors import InputError
from lengthbench.models.saved_model import PROMPT
from lengthbench.tasks import get_task

SPLIT = "test"  # the reported band: what the harnesses score
LM_EVAL_FOLDER = "lm_eval"
INSPECT_FILE = "inspect_tasks.py"
HUB_EVAL_FILE = "eval.yaml"
COMPLETION_PATTERN = r"(?s)^\s*(.*?)\s*$"  # the whole completion, trimmed
WRITTEN_MARK = "written by `lengthbench export"  # in every file this module writes


def refuse_foreign_harness_files(folder: Path) -> None:
    """Refuse an export folder holding an ``inspect_tasks.py``, ``eval.yaml`` or ``lm_eval/`` file that an export
    did not write (a user's own, which the export would replace); an earlier export's are rewritten."""
    refuse_foreign_files(folder, {name: lambda text: WRITTEN_MARK in text for name in (INSPECT_FILE, HUB_EVAL_FILE)})
    pack = folder / LM_EVAL_FOLDER
    if pack.exists() and not pack.is_dir():
        raise InputError(f"--out {str(folder)!r} holds a file named {LM_EVAL_FOLDER}; the lm-eval pack is a folder "
                         "of that name: move the file, or give another --out")
    foreign = sorted(p.name for p in pack.iterdir() if p.name != "__pycache__" and not (
        p.is_file() and WRITTEN_MARK in p.read_text(errors="replace"))) if pack.is_dir() else []
    if foreign:
        raise InputError(f"--out {str(folder)!r} holds {LM_EVAL_FOLDER}/{foreign[0]}, which lengthbench did not "
                         "write; give an empty folder, or one lengthbench wrote before")


def harness_labels(configs: dict) -> tuple[dict, dict]:
    """The exported labels a text harness scores as lengthbench does, and the others with why not."""
    usable, skipped = {}, {}
    for label, info in configs.items():
        fmt = getattr(get_task(label), "format", None)
        if SPLIT not in info["splits"]:
            skipped[label] = f"no {SPLIT} split"
        elif "scored" in info["columns"] and not getattr(fmt, "decodes", False):
            skipped[label] = (f"its format ({fmt.name}) gives the model symbols between the answer's, teacher-forced; "
                              "a text harness would generate them itself")
        else:
            usable[label] = info
    return usable, skipped


def lm_eval_task_name(preset: str, label: str) -> str:
    """The preset is in the name: lm-eval holds every included pack's tasks in one registry."""
    return f"lengthbench_{preset}_{label}"


def write_lm_eval_pack(folder: Path, preset, configs: dict, version: str) -> Path:
    """The lm-eval pack (task YAMLs, the group YAML, ``utils.py``) in ``folder/lm_eval``; returns that folder."""
    pack = folder / LM_EVAL_FOLDER
    shutil.rmtree(pack, ignore_errors=True)  # an earlier export's only (refuse_foreign_harness_files): none stays
    pack.mkdir()
    shutil.copyfile(inspect.getsourcefile(harness_scoring), pack / "utils.py")
    names = []
    for label, info in configs.items():
        split = info["splits"][SPLIT]
        name = lm_eval_task_name(preset.name, label)
        names.append(name)
        metrics = ["exact_match"] + [f"exact_match_length_{n}" for n in split["lengths"]]
        lines = [f"# written by `lengthbench export --lm-eval` (lengthbench {version}): {label} of {preset.name}, "
                 f"{split['rows']} instances at lengths {split['lengths'][0]}..{split['lengths'][-1]}",
                 f"task: {_quoted(name)}", "custom_dataset: !function utils.load_test_split",
                 "dataset_kwargs:", f"  config: {_quoted(label)}", f"test_split: {SPLIT}",
                 "output_type: generate_until", f"doc_to_text: {_quoted(PROMPT.replace('{input}', '{{input}}'))}",
                 "doc_to_target: '{{answer}}'", "generation_kwargs:", "  until: ['<eos>']",
                 f"  max_gen_toks: {split['answer_tokens']}", "  do_sample: false", "  temperature: 0.0",
                 "process_results: !function utils.process_results", "metric_list:"]
        lines += [line for metric in metrics for line in (f"  - metric: {metric}", "    aggregation: mean",
                                                            "    higher_is_better: true")]
        lines += ["metadata:", f"  version: {info['task_version']}", f"  lengthbench: {_quoted(version)}"]
        write_text(pack / f"{name}.yaml", "\n".join(lines) + "\n")
    group = [f"# written by `lengthbench export --lm-eval` (lengthbench {version}): every task of {preset.name}",
             f"group: {_quoted(f'lengthbench_{preset.name}')}", "task:"] + [f"  - {_quoted(n)}" for n in names] + [
             "aggregate_metric_list:", "  - metric: exact_match", "    aggregation: mean",
             "    weight_by_size: false", "metadata:", "  version: 1"]
    write_text(pack / f"lengthbench_{preset.name}.yaml", "\n".join(group) + "\n")
    return pack


def inspect_task_name(label: str) -> str:
    """A label as a Python name (``addition+reversed`` → ``addition_reversed``; a plugin's ``3sum`` → ``task_3sum``)."""
    name = re.sub(r"\W", "_", label)
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"task_{name}"


def write_inspect_tasks(folder: Path, preset, configs: dict, version: str) -> tuple[Path, Path]:
    """``inspect_tasks.py`` and ``eval.yaml`` in ``folder``; returns their paths."""
    names = {inspect_task_name(label): label for label in configs}
    assert len(names) == len(configs), "two labels share a Python name"
    functions = "\n\n".join(
        f"@task\ndef {name}():\n    \"\"\"{label}: {configs[label]['splits'][SPLIT]['rows']} instances.\"\"\"\n"
        f"    return _task({label!r}, max_tokens={configs[label]['splits'][SPLIT]['answer_tokens']})\n"
        for name, label in names.items())
    source = INSPECT_TEMPLATE.format(preset=preset.name, version=version, split=SPLIT,
                                     answer_right=inspect.getsource(harness_scoring.answer_right))
    tasks_file = folder / INSPECT_FILE
    write_text(tasks_file, source + "\n\n" + functions)
    lines = [f"# written by `lengthbench export --inspect` (lengthbench {version})",
             f"name: {_quoted(f'lengthbench {preset.name}')}",
             f"description: {_quoted(f'lengthbench {preset.name} test instances: {preset.description}')}",
             "evaluation_framework: inspect-ai", "tasks:"]
    for label, info in configs.items():
        lines += [f"  - id: {_quoted(label)}", f"    config: {_quoted(label)}", f"    split: {SPLIT}",
                  "    field_spec:", "      input: input", "      target: answer", "      id: id",
                  "      metadata: [length]", "    solvers:", "      - name: generate", "        args:",
                  f"          max_tokens: {info['splits'][SPLIT]['answer_tokens']}", "    scorers:",
                  "      - name: pattern", "        args:", f"          pattern: {_quoted(COMPLETION_PATTERN)}",
                  "          ignore_case: false"]
    hub_file = folder / HUB_EVAL_FILE
    write_text(hub_file, "\n".join(lines) + "\n")
    return tasks_file, hub_file


def _quoted(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


INSPECT_TEMPLATE = '''"""Inspect tasks for lengthbench's {preset} test instances
(written by `lengthbench export --inspect`, lengthbench {version}).

One task per task label, on its {split} split in this folder: the model generates greedily (run with
`-M do_sample=false`) and is scored as lengthbench scores it: right when the completion's first symbols are the
answer's. Accuracy is reported overall and per task length. The prompt is the model's chat template: a model
lengthbench saved writes `<bos> INPUT <sep>` around the input.

    inspect eval inspect_tasks.py@TASK --model hf/local -M model_path=MODEL_DIR -M do_sample=false
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, hf_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, grouped, scorer
from inspect_ai.solver import generate

HERE = Path(__file__).resolve().parent


{answer_right}

def _sample(record: dict) -> Sample:
    return Sample(input=record["input"], target=record["answer"], id=record["id"],
                  metadata={{"length": record["length"], "scored": record.get("scored")}})


@scorer(metrics=[grouped(accuracy(), "length")])
def lengthbench_exact_match():
    async def score(state, target):
        right = answer_right(state.output.completion, target.text, state.metadata.get("scored"))
        return Score(value=CORRECT if right else INCORRECT, answer=state.output.completion)

    return score


def _task(config: str, max_tokens: int) -> Task:
    return Task(dataset=hf_dataset(str(HERE), name=config, split="{split}", sample_fields=_sample),
                solver=generate(), scorer=lengthbench_exact_match(), config=GenerateConfig(max_tokens=max_tokens))
'''
