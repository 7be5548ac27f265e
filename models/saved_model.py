"""A trained model as a Hugging Face folder that text harnesses can feed.

``save_model_folder`` writes a run's ``transformers`` model (the ``hf-*``
families: ``models.huggingface``) with ``save_pretrained`` and, beside it,
a tokenizer of its task's symbols (``task_tokenizer``), so that
``AutoTokenizer.from_pretrained(DIR)`` and
``AutoModelForCausalLM.from_pretrained(DIR)`` score it from text:
lm-evaluation-harness and Inspect read the folder as they read any model.

The tokenizer is the ``tokenizers`` library's word-level model: one token
per task symbol (symbols are whitespace-free, so text is the symbols joined
by spaces, as ``generate`` and ``export`` write them), ids equal to the
task's (``<pad> <bos> <sep> <eos>`` are 0..3, the i-th symbol ``4 + i``),
no unknown token (a symbol outside the task is refused, not mapped). It
adds nothing to the text it encodes: the harness's prompt is written out,
``<bos> INPUT <sep>`` (``PROMPT``), and its chat template writes exactly
that around a message, for a harness that applies one (Inspect does).
Decoding drops the special tokens, so a generated answer reads as the
``answer`` field. ``lengthbench.json`` names the run the weights come from.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from lengthbench.core.errors import InputError
from lengthbench.models.huggingface import ARCHITECTURES
from lengthbench.tasks import Task

SPECIAL_TOKENS = ("<pad>", "<bos>", "<sep>", "<eos>")  # ids 0..3, as tasks.base's PAD BOS SEP EOS
PROMPT = "<bos> {input} <sep>"  # what the model reads before its answer, as text
CHAT_TEMPLATE = "{{ '<bos> ' ~ messages[-1]['content'] ~ ' <sep>' }}"  # PROMPT around the last message
log = logging.getLogger(__name__)
RUN_FILE = "lengthbench.json"
SAVED_FAMILIES = tuple(ARCHITECTURES)  # the families whose model is a transformers class


def check_saves_models(configs) -> None:
    """Refuse ``--save-models`` for a grid none of whose families is a
    ``transformers`` class; name the families whose models will not be saved."""
    families = {c.family for c in configs}
    others = sorted(families - set(SAVED_FAMILIES))
    if len(families) == len(others):
        raise InputError(f"--save-models saves transformers models with their tokenizer; the grid's families "
                         f"({', '.join(others)}) are not transformers classes; the {', '.join(SAVED_FAMILIES)} "
                         "families are (add one with --models)")
    if others:
        log.warning("--save-models: the models of %s are not transformers classes and are not saved; those of %s are",
                    ", ".join(others), ", ".join(sorted(families - set(others))))


def task_tokenizer(task: Task):
    """A ``transformers`` fast tokenizer of ``task``'s symbols with the task's ids."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: i for i, token in enumerate(SPECIAL_TOKENS + tuple(task.symbols))}
    assert len(vocabulary) == task.vocab_size, f"{task.name}'s symbols repeat or name a special token"
    words = Tokenizer(models.WordLevel(vocabulary, unk_token="<unk>"))  # "<unk>" is not in it: unknown is refused
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    words.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in SPECIAL_TOKENS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", bos_token="<bos>",
                                        sep_token="<sep>", eos_token="<eos>", model_max_length=1 << 16)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def save_model_folder(model, task: Task, folder, run: dict) -> Path:
    """Write ``model`` (a run's ``hf-*`` model), its task's tokenizer and
    ``run`` (what names the run) to ``folder``, whole or not at all (written
    beside it, then moved into place)."""
    folder = Path(folder)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.model.save_pretrained(partial)
    task_tokenizer(task).save_pretrained(partial)
    (partial / RUN_FILE).write_text(json.dumps({"task": task.name, "task_version": task.version, **run}, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def check_folder_tokenizer(folder, task: Task) -> None:
    """Refuse a folder lengthbench saved whose tokenizer does not give
    ``task``'s symbols ``task``'s ids (a model of another task); a folder
    saved elsewhere is read by ids only, as before."""
    path = Path(folder) / "tokenizer.json"
    if not (Path(folder) / RUN_FILE).is_file() or not path.is_file():
        return
    try:
        vocabulary = json.loads(path.read_text())["model"]["vocab"]
    except (ValueError, KeyError, TypeError):
        raise InputError(f"saved model {str(folder)!r}: its tokenizer.json is not the word-level tokenizer "
                         "lengthbench saves (no model.vocab); save the model again") from None
    for i, token in enumerate(SPECIAL_TOKENS + tuple(task.symbols)):
        if vocabulary.get(token) != i:
            where = "not in it" if token not in vocabulary else f"id {vocabulary[token]}"
            raise InputError(f"saved model {str(folder)!r}: its tokenizer gives {token!r} {where}, task {task.name} "
                             f"gives it id {i}; the model was saved for another task (its {RUN_FILE} names it), so "
                             "evaluate it on that task")

