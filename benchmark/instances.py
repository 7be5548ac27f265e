"""The benchmark's test instances for any model, and their scoring.

A run evaluates a model at one task length on ``eval_samples`` examples
drawn from the evaluation stream of that length (``seeding.eval_streams``:
fixed by the evaluation seed and the length, never by the run).
``evaluation_instances`` writes out exactly those examples, one dict per
instance, so a model lengthbench does not train (a Hugging Face checkpoint,
a JAX model, an LLM behind an API) can be given the same inputs, and
``score_predictions`` scores its answers with the benchmark's metrics; a
PyTorch model (any callable from token ids to logits) is evaluated directly,
by the harness's own evaluation, with ``evaluate_any``.

An instance: ``task``, ``task_version``, ``length`` (the task length),
``index`` (its place among the ``n_samples`` instances of that length),
``n_samples``, ``eval_seed``, ``input`` and ``answer`` (the task's symbols,
space-separated), ``input_ids`` (the prompt the harness's models read:
``<bos>``, the input's tokens, ``<sep>``) and ``answer_ids`` (the answer's
tokens, which the model must produce next, then ``<eos>``); ``position_ids``
too for a task with structured position ids (the coupled tasks), over the
prompt and the answer. Token ids: 0..3 are ``<pad> <bos> <sep> <eos>``, and
the task's i-th symbol is ``4 + i``. A task in a data format
(``addition+reversed``) adds its ``format_version``; where the format writes
output symbols that are not the answer (index hints), ``answer_ids`` is the
whole output and ``scored`` lists the positions in it that are the answer:
a prediction is the whole output, compared at those positions only.

Scoring follows the harness (``evaluate``): per instance, token accuracy is
the share of the answer's positions predicted right, and exact match that
every one of them is; per length, their means. As in the harness, a
prediction is compared with the answer position by position: what it holds
past the answer's last token is not scored (nor is ``<eos>`` after the
answer), and one that stops early misses the answer's remaining tokens.
Teacher-forced argmax predictions (what the harness scores) give the
harness's numbers exactly; greedy decoding gives the same exact match.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict

import numpy as np
import torch

from lengthbench.benchmark.config import EVAL_SEED
from lengthbench.benchmark.device import available_memory
from lengthbench.benchmark.evaluate import evaluate_at
from lengthbench.benchmark.seeding import eval_streams
from lengthbench.core.errors import InputError, install_hint
from lengthbench.tasks import Task, get_task, make_batch
from lengthbench.tasks.base import IGNORE, N_SPECIAL, SEP, check_lengths
from lengthbench.tasks.cells import split_label

log = logging.getLogger(__name__)
MAX_PREDICTIONS_BYTES = 1 << 30  # about a million instances of a long task


def _counts(what: str, values, minimum: int) -> list[int]:
    """``values`` as plain ints, each an integer >= ``minimum``; refused by name otherwise."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise InputError(f"{what} {value!r} is not an integer >= {minimum}")
    return [int(value) for value in values]


# Memory an instance takes per input symbol while generated and written (measured: copy at length 2000, 500
# samples: 143 bytes, its arrays, the instances' token lists and text, and the JSON Lines text together).
BYTES_PER_INPUT_SYMBOL = 150


def _checked(task: Task, lengths, n_samples) -> tuple[list[int], int]:
    """The lengths (each one the task has) and the samples per length, as
    plain ints; refused before any work when they would need more memory than
    this process has (a length of a billion, a million samples of a long one)."""
    lengths = _counts("length", list(lengths), 0)
    twice = next((n for i, n in enumerate(lengths) if n in lengths[:i]), None)
    if twice is not None:
        raise InputError(f"length {twice} is listed twice; give each once")
    if lengths:
        check_lengths(task, lengths)
    n_samples = _counts("samples", [n_samples], 1)[0]
    symbols = n_samples * sum(task.input_length(length) for length in lengths)
    need, have = symbols * BYTES_PER_INPUT_SYMBOL, available_memory()
    if need > have:
        raise InputError(f"{n_samples} samples at lengths up to {max(lengths)} of {task.name} are {symbols:,} input "
                         f"symbols, about {need / 1e9:.1f} GB to generate, and {have / 1e9:.1f} GB are available here; "
                         "give fewer samples or shorter lengths")
    return lengths, n_samples


def evaluation_instances(task_name: str, lengths, n_samples: int, eval_seed: int = EVAL_SEED) -> list[dict]:
    """The ``n_samples`` evaluation instances of ``task_name`` at each of
    ``lengths``: the examples a run with this ``eval_seed`` (every preset's
    default) and ``eval_samples = n_samples`` is scored on."""
    task = get_task(task_name)
    lengths, n_samples = _checked(task, lengths, n_samples)
    instances = []
    for length in lengths:
        rng, _ = eval_streams(eval_seed, length, torch.device("cpu"))
        batch = make_batch(task, rng, np.full(n_samples, length))
        instances += [_instance(task, batch, index, length, n_samples, eval_seed) for index in range(n_samples)]
    return instances


def _instance(task: Task, batch, row: int, length: int, n_samples: int, eval_seed: int) -> dict:
    sep = int(np.flatnonzero(batch.tokens[row] == SEP)[0])  # no input symbol is SEP: the prompt ends there
    output = np.flatnonzero(batch.targets[row] != IGNORE)
    output = output[output >= sep][:-1]  # SEP's position onwards (not an input's own target), EOS left out
    prompt = batch.tokens[row, : sep + 1]
    answer = batch.targets[row, output]
    instance = {"task": task.name, "task_version": task.version, "length": length, "index": row,
                "n_samples": n_samples, "eval_seed": eval_seed,
                "input": task.decode(prompt[1:-1] - N_SPECIAL), "answer": task.decode(answer - N_SPECIAL),
                "input_ids": prompt.tolist(), "answer_ids": answer.tolist()}
    fmt = getattr(task, "format", None)
    if fmt is not None:
        instance["format_version"] = fmt.version
    scored = batch.scored[row, output]
    if not scored.all():
        instance["scored"] = np.flatnonzero(scored).tolist()
    if task.has_coupled_ids:
        instance["position_ids"] = batch.position_ids[row, : len(prompt) + len(answer)].tolist()
    return instance


INSTANCE_ID_FIELDS = ("length", "eval_seed", "n_samples", "index")


def instance_id(instance: dict) -> str:
    """An instance's dataset id: ``TASK/LENGTH/EVAL_SEED/N_SAMPLES/INDEX``."""
    return "/".join(str(instance[k]) for k in ("task", *INSTANCE_ID_FIELDS))


def instance_fields(text) -> dict:
    """The fields an ``instance_id`` names (task, length, eval_seed,
    n_samples, index), refused by name when it is not one."""
    parts = text.rsplit("/", len(INSTANCE_ID_FIELDS)) if isinstance(text, str) else []
    if len(parts) != 1 + len(INSTANCE_ID_FIELDS) or not all(p.isdigit() for p in parts[1:]):
        raise InputError(f"id {text!r} is not an exported instance's id (TASK/LENGTH/EVAL_SEED/N_SAMPLES/INDEX, as "
                         "`lengthbench export` writes it)")
    return {"task": parts[0], **{k: int(v) for k, v in zip(INSTANCE_ID_FIELDS, parts[1:])}}


def scored_positions(instance: dict) -> list[int]:
    """The positions of an instance's ``answer_ids`` that are scored (all but a format's given symbols)."""
    return instance.get("scored", list(range(len(instance["answer_ids"]))))


def write_jsonl(instances: list[dict]) -> str:
    return "".join(json.dumps(instance) + "\n" for instance in instances)


def read_jsonl(text: str, where: str) -> list[dict]:
    """JSON Lines, each line an object; refused with the first bad line's number."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise InputError(f"{where}, line {number}: not JSON ({err})") from None
        if not isinstance(row, dict):
            raise InputError(f"{where}, line {number}: a JSON {type(row).__name__}, not an object")
        rows.append((number, row))
    if not rows:
        raise InputError(f"{where} holds no predictions (one JSON object per line, as `lengthbench generate` "
                         "writes them, with a prediction added)")
    return rows


def read_parquet_rows(path, where: str) -> list[tuple[int, dict]]:
    """The rows of a Parquet file of predictions (an exported split with a
    ``prediction`` column added), numbered from 1 as ``read_jsonl``'s lines;
    a null field counts as absent."""
    try:
        import pyarrow.parquet
    except ImportError:
        raise InputError(f"{where} is Parquet, which needs pyarrow to read: {install_hint('hf')}") from None
    try:
        table = pyarrow.parquet.read_table(path)
    except (OSError, pyarrow.ArrowException) as err:
        raise InputError(f"{where} cannot be read as Parquet ({err})") from None
    rows = [(number, {k: v for k, v in row.items() if v is not None})
            for number, row in enumerate(table.to_pylist(), 1)]
    if not rows:
        raise InputError(f"{where} holds no predictions (one row per instance, with a prediction added)")
    return rows


def _predicted_ids(task: Task, row: dict, where: str) -> list[int]:
    """A line's prediction as token ids: ``prediction_ids``, or the symbols
    of the text ``prediction`` (an unknown symbol is a wrong token)."""
    if "prediction_ids" in row:
        ids = row["prediction_ids"]
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise InputError(f"{where}: prediction_ids {ids!r} is not a list of token ids")
    elif "prediction" in row:
        text = row["prediction"]
        if not isinstance(text, str):
            raise InputError(f"{where}: prediction {text!r} is not text")
        index = {symbol: N_SPECIAL + i for i, symbol in enumerate(task.symbols)}
        ids = [index.get(symbol, -1) for symbol in text.split()]
    else:
        raise InputError(f"{where}: no prediction (add `prediction`, the answer as text, or `prediction_ids`)")
    return ids


def score_predictions(task_name: str, rows: list[tuple[int, dict]], where: str = "predictions") -> list[dict]:
    """Per-length metrics of predictions (``read_jsonl``'s numbered lines),
    each line checked against the instance it names (task, length, index,
    n_samples, eval_seed): its ``input_ids`` and ``answer_ids``, when given,
    must be that instance's, and each instance may be scored once. Returns
    one row per length: ``length``, ``exact_match``, ``token_accuracy``,
    ``n_samples`` (the lines scored) and ``n_instances`` (generated)."""
    task = get_task(task_name)
    generated: dict[tuple, list[dict]] = {}
    seen = set()
    by_length = defaultdict(list)
    unknown: list[str] = []  # predictions holding a word that is no symbol of the task
    for number, row in rows:
        at = f"{where}, line {number}"
        if "id" in row:
            row = _with_id_fields(row, at)
        if split_label(str(row.get("task", task_name))) != split_label(task_name):  # an alias names its pair
            raise InputError(f"{at}: task {row.get('task')!r}, not {task_name!r}")
        fields = {k: row.get(k) for k in ("length", "index", "n_samples")}
        fields["eval_seed"] = row.get("eval_seed", EVAL_SEED)
        bad = [f"{k} {v!r}" for k, v in fields.items() if isinstance(v, bool) or not isinstance(v, int)]
        if bad:
            raise InputError(f"{at}: {', '.join(bad)}: needs the integer fields length, index and n_samples of the "
                             "instance it answers (as `lengthbench generate` writes them), or the id of an exported "
                             "one (`lengthbench export`)")
        key, index = (fields["length"], fields["n_samples"], fields["eval_seed"]), fields["index"]
        if key not in generated:
            generated[key] = evaluation_instances(task_name, [key[0]], key[1], key[2])
        if not 0 <= index < key[1]:
            raise InputError(f"{at}: index {index} is not one of the {key[1]} instances at length {key[0]}")
        instance = generated[key][index]
        for field in ("input_ids", "answer_ids", "task_version", "format_version"):
            if field in row and row[field] != instance[field]:
                raise InputError(f"{at}: {field} differs from instance {index} of length {key[0]} (eval seed "
                                 f"{key[2]}): this line answers another instance, or another task version")
        if (key, index) in seen:
            raise InputError(f"{at}: instance {index} of length {key[0]} is scored twice")
        seen.add((key, index))
        predicted, answer, scored = _predicted_ids(task, row, at), instance["answer_ids"], scored_positions(instance)
        if "prediction_ids" not in row and -1 in predicted:  # a word of the text that is no symbol
            unknown.append(row["prediction"])
        right = sum(i < len(predicted) and predicted[i] == answer[i] for i in scored)
        by_length[key].append((right / len(scored) if scored else 1.0, right == len(scored)))
    _warn_about(task, where, by_length, unknown, len(rows))
    return [{"length": key[0], "eval_seed": key[2], "exact_match": round(float(np.mean([e for _, e in scores])), 6),
             "token_accuracy": round(float(np.mean([t for t, _ in scores])), 6), "n_samples": len(scores),
             "n_instances": key[1]} for key, scores in sorted(by_length.items())]


def _with_id_fields(row: dict, at: str) -> dict:
    """A prediction keyed by an exported instance's ``id``: the fields the id
    names filled in (any also given must agree with it)."""
    try:
        named = instance_fields(row["id"])
    except InputError as err:
        raise InputError(f"{at}: {err}") from None
    differing = [f"{k} {row[k]!r}" for k, v in named.items() if k in row and row[k] != v]
    if differing:
        raise InputError(f"{at}: {', '.join(differing)} differ from id {row['id']!r}")
    return {**row, **named}


def _warn_about(task: Task, where: str, by_length: dict, unknown: list[str], lines: int) -> None:
    """Say what a score rests on when it is not the whole of what was generated, or when predictions were
    written in words the task does not know: never a silent 100% on the instances present."""
    for (length, n_instances, _), scores in sorted(by_length.items()):
        if len(scores) < n_instances:
            log.warning("%s: scored %d of the %d instances generated at length %d; the other %d are missing, so that "
                        "length's score is over the instances present only", where, len(scores), n_instances, length,
                        n_instances - len(scores))
    if unknown:
        example = next(w for text in unknown for w in text.split() if w not in task.symbols)
        log.warning("%s: %d of the %d predictions hold words that are no symbol of %s (e.g. %r), scored as wrong "
                    "tokens; write the answer's symbols separated by spaces, as the `answer` field is", where,
                    len(unknown), lines, task.name, example)


POSITION_LIMITS = ("n_positions", "max_position_embeddings", "n_ctx", "max_seq_len")  # a config's longest input


def _position_limit(fn) -> tuple[str, int] | None:
    """The longest input a model's config declares (which of ``POSITION_LIMITS``, and its value), if any."""
    config = getattr(fn, "config", None)
    return next(((name, value) for name in POSITION_LIMITS if isinstance(value := getattr(config, name, None), int)),
                None)


class _AnyModel:
    """A callable from token ids ``(B, T)`` to logits ``(B, T, V)`` (or to an
    output holding ``.logits``, as a Hugging Face causal LM returns), seen as
    the harness sees its own models: it reads the plain positions."""

    def __init__(self, fn, vocab_size: int):
        self.fn, self.vocab_size = fn, vocab_size

    def eval(self):
        if isinstance(self.fn, torch.nn.Module):
            self.fn.eval()
        return self

    def positions(self, tokens, position_ids, seq_lens, generator):
        return position_ids

    def __call__(self, tokens, positions):
        try:
            out = self.fn(tokens)
        except IndexError as err:  # an embedding with fewer rows than the task has token ids, or positions
            limit = _position_limit(self.fn)
            if limit is not None and tokens.shape[1] > limit[1]:
                raise InputError(f"the model reads at most {limit[1]} positions (its config's {limit[0]}); these "
                                 f"sequences have {tokens.shape[1]} tokens: evaluate shorter lengths (--lengths), or "
                                 "give a model with more positions") from None
            raise InputError(f"the model cannot read the task's token ids 0..{self.vocab_size - 1} ({err}); its "
                             f"vocabulary must cover the task's {self.vocab_size} tokens (docs/any-model.md)") from None
        logits = getattr(out, "logits", out)
        if not isinstance(logits, torch.Tensor) or logits.ndim != 3 or logits.shape[:2] != tokens.shape \
                or logits.shape[2] < self.vocab_size:
            raise InputError(f"the model maps token ids of shape {tuple(tokens.shape)} to "
                             f"{type(logits).__name__} {tuple(getattr(logits, 'shape', ()))}; it must return "
                             f"logits of shape (batch, tokens, vocabulary of at least the task's {self.vocab_size} "
                             "tokens), or an output with such .logits")
        return logits


RUNNABLE_DEVICES = ("cpu", "cuda")


def _refuse_a_model_that_reads_ahead(model: _AnyModel, task: Task, length: int, eval_seed: int,
                                     device: torch.device) -> None:
    """Teacher-forced scoring reads the logits at every answer position at once, so a model whose logits at a
    position depend on later tokens (no causal mask) would read the answer it predicts: refused, as ``check``
    refuses such an encoding. The probe is two evaluation instances, whole (prompt and answer), and the same with
    their last token changed: the logits before it must not move."""
    instances = evaluation_instances(task.name, [length], 2, eval_seed)
    tokens = torch.tensor([i["input_ids"] + i["answer_ids"] for i in instances], device=device)
    changed = tokens.clone()
    changed[:, -1] = N_SPECIAL + (changed[:, -1] - N_SPECIAL + 1) % (task.vocab_size - N_SPECIAL)
    if isinstance(model.fn, torch.nn.Module):
        model.fn.eval()
    with torch.no_grad():
        before, after = (model(t, None)[:, :-1].float() for t in (tokens, changed))
    if not torch.allclose(before, after, rtol=1e-4, atol=1e-4, equal_nan=True):  # a NaN logit is scored wrong
        shift = (before - after).nan_to_num(0.0, 0.0, 0.0).abs().max().item()  # (counted non-finite), not refused
        raise InputError(f"the model reads ahead: its logits at earlier positions change (by up to {shift:.3g}) when "
                         "only the last token changes, so it would read the answers it is scored on (teacher-forced); "
                         "give a causal model (mask attention to earlier positions)")


def evaluate_any(model, task_name: str, lengths, n_samples: int, eval_seed: int = EVAL_SEED,
                 heads: int = 8, device: torch.device | None = None) -> list[dict]:
    """Per-length metrics of ``model`` on the evaluation instances
    (``evaluation_instances``), by the harness's own evaluation (the same
    batches, teacher-forced argmax over the answer's tokens, chunks sized as
    for ``heads`` attention heads). ``model``: a lengthbench run's model
    (its own positions, as in its run) or any callable from token ids to
    logits over at least the task's vocabulary (plain positions 0..T-1)."""
    task = get_task(task_name)
    lengths, n_samples = _checked(task, lengths, n_samples)
    if not callable(model):
        raise InputError(f"model {model!r} is not callable; give a function or module from token ids to logits")
    own = hasattr(model, "positions") and isinstance(model, torch.nn.Module)
    if device is None:
        parameter = next(iter(model.parameters()), None) if isinstance(model, torch.nn.Module) else None
        device = parameter.device if parameter is not None else torch.device("cpu")
    device = torch.device(device)
    if device.type not in RUNNABLE_DEVICES:
        why = "meta holds no values: load its weights" if device.type == "meta" else "it runs on cpu and cuda"
        raise InputError(f"the model is on device {device}, where the harness cannot run it ({why}); move it to "
                         "cpu or cuda")
    wrapped = model if own else _AnyModel(model, task.vocab_size)
    if not own and lengths:
        _refuse_a_model_that_reads_ahead(wrapped, task, min(lengths), eval_seed, device)
    return [evaluate_at(wrapped, task, length, eval_seed, n_samples, heads, device) for length in lengths]
