"""The Python API: everything the ``lengthbench`` command line does, for
notebooks and scripts (the command line calls these functions and nothing else).

Each function validates its input the way the command line does (an
``InputError`` naming the bad value and the valid choices). The main four
return pandas DataFrames; the files a call wrote are listed in the frame's
``attrs["written"]`` ({kind: path}):

* ``run(preset, tasks=, formats=, encodings=, models=, seeds=, results=)``: train and
  evaluate a grid, returns its leaderboard;
* ``load_records(results)``: every run x length as a long DataFrame;
* ``load_leaderboard(results)``: one row per task x method (it writes nothing);
* ``write_leaderboard(results, out)``: that board and its files (tables, plots, page) in ``out``;
* ``compare(a, b)``: per-cell differences of two leaderboards;
* ``generate(task)``, ``score(task, predictions)``, ``evaluate(model,
  task)``: the benchmark's test instances for a model lengthbench does not
  train, its predictions scored, or a PyTorch model evaluated directly.

The others (``plan``, ``submit``, ``check``, ``reproduce``, ``perf``,
``bench_generation`` and the listings) return what the command prints.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.checkpoints import CHECKPOINT_EVERY_S
from lengthbench.benchmark.config import parse_setting
from lengthbench.benchmark.dataset import export_dataset
from lengthbench.benchmark.files import check_input_file, ensure_output_dir, write_json, write_text
from lengthbench.benchmark.grid import EXECUTORS, GridInterrupted
from lengthbench.benchmark.instances import MAX_PREDICTIONS_BYTES, evaluation_instances, write_jsonl
from lengthbench.benchmark.listing import presets_listing
from lengthbench.benchmark.live_log import LOG_KINDS
from lengthbench.benchmark.predictions import read_predictions
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.reading import records_frame, records_of
from lengthbench.benchmark.records import METRICS
from lengthbench.benchmark.scoring import evaluate_model, evaluation_settings, score_file
from lengthbench.benchmark.sitting import check_shapes, narrowed_grid, plan_text, selection_for
from lengthbench.benchmark.tools import bench_generation as generation_bench
from lengthbench.benchmark.tools import perf as perf_bench
from lengthbench.benchmark.version import __version__
from lengthbench.core.errors import InputError, OutputError, RunsFailed, UnknownNameError
from lengthbench.leaderboard.build import board_of_sitting, board_with_external, write_board
from lengthbench.leaderboard.compare import compare_leaderboards, comparison_text
from lengthbench.leaderboard.external import scored_table
from lengthbench.leaderboard.statistics import CORRECTIONS, DEFAULT_CORRECTION
from lengthbench.leaderboard.submission import submit_file
from lengthbench.leaderboard.tables import to_markdown as leaderboard_markdown
from lengthbench.models.contract import ContractReport, check_encoding, check_family
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES, family_entry
from lengthbench.models.listing import encodings_listing, families_listing, origins_line
from lengthbench.models.plugins import PluginFile, check_plugins, load_entry_points
from lengthbench.studies import STUDIES
from lengthbench.studies.base import reproduce_study, settings_source, studies_listing
from lengthbench.tasks import TASKS, listing
from lengthbench.tasks.cells import cell_name
from lengthbench.tasks.formats import FORMATS

PathLike = str | Path

__all__ = [
    "CHECKPOINT_EVERY_S", "LOG_KINDS", "CORRECTIONS", "DEFAULT_CORRECTION", "EXECUTORS", "METRICS", "PRESETS", "STUDIES",
    "GridInterrupted", "InputError", "OutputError", "RunsFailed", "UnknownNameError", "bench_generation", "cell_name",
    "check", "compare", "compare_text", "encodings_text", "evaluate", "export", "generate", "leaderboard_text",
    "load_leaderboard", "load_records", "write_leaderboard", "models_text", "parse_setting", "load_predictions", "perf",
    "perf_configs", "plan", "presets_text", "reproduce", "run", "score", "studies_text", "study_names", "submit",
    "tasks_table", "formats_table", "__version__"]


def run(preset: str = "quick", *, tasks: Sequence[str] | None = None, encodings: Sequence[str] | None = None,
        models: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
        results: PathLike | None = None, out: PathLike | None = None, force: bool = False,
        workers: int = 0, executor: str = "local", address: str | None = None,
        plugins: Iterable[PathLike] = (), checkpoint_every: float | None = None, progress: bool = True,
        select: str | None = None, settings: Mapping[str, int | float] | None = None,
        save_predictions: bool = False, command: str | None = None, live_log: str | None = None,
        save_models: bool = False) -> pd.DataFrame:
    """Train and evaluate ``preset``'s grid (optionally narrowed to ``tasks``,
    ``encodings``, model families ``models`` and ``seeds``, each task written
    in each of ``formats``: ``formats_table``), then build its leaderboard;
    returns the leaderboard (one row per task x format x method, the task
    column holding the label, ``addition+reversed``).

    Records go to ``results`` (default ``results/<preset>``); a finished cell
    is reused, not rerun, unless ``force``. The leaderboard files and
    ``provenance.json`` go to ``out`` (default: ``results``). ``plugins`` are
    encoding files, contract-checked before any run. A run that fails is
    recorded in its cell (status ``error``; ``attrs["failed"]`` lists them,
    ``attrs["runs"]`` counts the grid's runs), not raised. ``workers`` 0 chooses automatically.
    ``select`` (``"lr=5e-4,1e-3,2e-3"``; default: the preset's own ``select``)
    trains the grid once per value and keeps, per (task, method), the value
    with the best validation-band exact match (``benchmark.selection``).
    ``settings`` (``{"steps": 500}``) override the preset's run settings for
    every cell (``run --set``; they enter each run's config, so its protocol
    and record say so); records then go by default to
    ``results/<preset>-<settings>``, apart from the preset's own.
    ``save_predictions`` keeps each trained run's predictions at every
    evaluated length beside its record (``load_predictions`` reads them);
    ``save_models`` each trained ``hf-*`` model with its task's tokenizer
    under ``results/models/`` (``evaluate_model`` reads one).
    ``live_log`` (``"tensorboard"``) writes each run's training as it runs
    under ``results/logs/`` (``benchmark.live_log``).
    ``command`` is what provenance.json records as the call (default: this
    call, written as Python)."""
    grid, plugin_files = narrowed_grid(preset, tasks, encodings, models, seeds, plugins, settings, formats)
    selection = selection_for(grid, select, settings)
    select = select if select is not None else (grid.select or None)
    if command is None:
        given = {k: v for k, v in dict(tasks=tasks, formats=formats, encodings=encodings, models=models, seeds=seeds,
                                       results=results, out=out, select=select, settings=settings).items()
                 if v is not None}
        command = f"lengthbench.run({preset!r}" + "".join(f", {k}={v!r}" for k, v in given.items()) + ")"
    board = board_of_sitting(grid, plugin_files, results=results, out=out, force=force, workers=workers,
                             executor=executor, address=address,
                             checkpoint_every=checkpoint_every or CHECKPOINT_EVERY_S,
                             save_predictions=save_predictions, progress=progress, command=command,
                             selection=selection, live_log=live_log, save_models=save_models)
    if board.attrs["failed"] and len(board.attrs["failed"]) == board.attrs["trained"]:
        raise RunsFailed(board)
    return board


def plan(preset: str = "quick", *, tasks: Sequence[str] | None = None, encodings: Sequence[str] | None = None,
         models: Sequence[str] | None = None, seeds: Sequence[int] | None = None, results: PathLike | None = None,
         workers: int = 0, plugins: Iterable[PathLike] = (), settings: Mapping[str, int | float] | None = None,
         force: bool = False, select: str | None = None, formats: Sequence[str] | None = None,
         save_models: bool = False) -> str:
    """What ``run`` with the same arguments would cost here (runs stored and to run, useful FLOPs, calibrated
    wall time), as text; trains and writes nothing. With ``force`` nothing stored is reused; a ``select`` (or
    the preset's own) is validated and priced: one grid per value; ``save_models`` is checked as ``run`` checks it."""
    grid, _ = narrowed_grid(preset, tasks, encodings, models, seeds, plugins, settings, formats)
    choice = selection_for(grid, select, settings)
    return plan_text(grid, choice, select if select is not None else (grid.select or None), results, workers, force,
                     save_models)


def submit(path: PathLike, preset: str = "quick", *, name: str | None = None,
           tasks: Sequence[str] | None = None, seeds: Sequence[int] | None = None, results: PathLike | None = None,
           formats: Sequence[str] | None = None, out: PathLike | None = None, workers: int = 0, executor: str = "local",
           address: str | None = None, checkpoint_every: float = CHECKPOINT_EVERY_S, progress: bool = True,
           save_predictions: bool = False, command: str | None = None, live_log: str | None = None) -> pd.DataFrame:
    """Check the encoding (or model-family) file ``path``, run its cells through ``preset`` (the
    built-in cells come from the stored records, trained only if missing) on
    ``tasks``, ``formats`` and ``seeds`` (default: the preset's, which are its shipped
    reference's, so ranks compare like cells) and rank it. Writes the
    submission's own files (``submission-<name>.{csv,md,html}`` and its
    provenance) and leaves the preset's leaderboard files alone; returns the
    board with ``attrs["ranking"]`` (the text) and ``attrs["written"]``.
    ``name`` renames the file's single encoding."""
    return submit_file(path, preset, name=name, tasks=tasks, seeds=seeds, formats=formats, results=results, out=out,
                       workers=workers, executor=executor, address=address, checkpoint_every=checkpoint_every,
                       save_predictions=save_predictions, progress=progress, live_log=live_log,
                       command=command or f"lengthbench.submit({str(path)!r}, {preset!r})")


def check(path: PathLike, preset: str = "quick", all_presets: bool = False) -> list[ContractReport]:
    """Run every encoding and model family the file ``path`` registers through
    its contract at ``preset``'s shapes (every built-in preset's with
    ``all_presets``); one report per name (``report.passed``,
    ``report.format()``). ``path`` may instead be the name of a registered
    encoding or family (``forget``, ``deltanet``), which is checked as it is."""
    load_entry_points()
    presets = list(PRESETS.values()) if all_presets else [PRESETS[preset]]
    shapes = check_shapes(presets)
    name = str(path)
    if not Path(name).exists() and name in FAMILIES and family_entry(name).missing():
        raise InputError(f"{family_entry(name).missing()} (nothing was checked)")
    if not Path(name).exists() and (name in ENCODINGS or name in FAMILIES):
        return [(check_family if name in FAMILIES else check_encoding)(name, shapes)]
    if not Path(name).exists() and not name.endswith(".py") and not _importable(name):  # a typo of a name?
        raise UnknownNameError("encoding or model family (or a .py file)", name, [*ENCODINGS.names(), *FAMILIES.names()])
    return check_plugins([PluginFile(name)], shapes)[1]


def _importable(name: str) -> bool:
    """Whether ``name`` is a module this interpreter can import (``check`` takes an installed plugin's module)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def load_records(results: PathLike) -> pd.DataFrame:
    """Every run in the records folder ``results`` in long format: one row per
    run x evaluated length, with the run's identity (``run_id``, ``task``,
    ``method``, ``family``, ``encoding``, ``seed``, ``status``), every config
    field as a column (nested ones dotted: ``model.d_model``,
    ``encoding_params.max_len``), ``split`` (``id`` up to the training length,
    else ``ood``), the length's ``exact_match``/``token_accuracy``/``n_samples``
    and ``length_status``, and the run's ``wall_time_s``, ``n_parameters``,
    ``final_loss`` and ``error``. A run without lengths (error, n/a) is one
    row with ``length`` NaN, so no run is silently missing."""
    return records_frame(records_of(results))


def load_leaderboard(results: PathLike, preset: str | None = None, external: Sequence[PathLike] = ()) -> pd.DataFrame:
    """The leaderboard of the records in ``results``: one row per task x
    method, the columns of ``leaderboard.csv`` (mean, std and Student-t interval
    over seeds, per-length curves summarized, rank). With ``preset``, only the
    records of that preset's grid count. ``external``: ``leaderboard.csv``
    files of ``score --method``, whose rows join the board (ranked beside its
    methods; refused where their length bands differ from the board's). It
    only reads: it writes nothing (``write_leaderboard`` writes the files)."""
    return board_with_external(records_of(results, preset), external)


def write_leaderboard(results: PathLike, out: PathLike, reference: bool = False, preset: str | None = None,
                      external: Sequence[PathLike] = ()) -> pd.DataFrame:
    """``load_leaderboard``'s board, its files written to ``out`` (csv, md,
    levels, plots, html; ``board.attrs["written"]`` names them). With
    ``reference``, records made from uncommitted code (``+g<commit>.dirty``)
    are refused (a shipped reference comes from committed code only), and the
    folder's ``README.md`` (``reference_notes``) and ``reference.json`` (where
    its records are and how many runs the preset's grid has today, for the
    rebuild test) are written too."""
    return write_board(records_of(results, preset), Path(results), out, reference, preset, external,
                       settings_source(preset))


def leaderboard_text(board: pd.DataFrame) -> str:
    """A leaderboard as the markdown tables ``leaderboard.md`` holds."""
    return leaderboard_markdown(board)


def compare(a: PathLike | pd.DataFrame, b: PathLike | pd.DataFrame, *, metric: str = "exact_match",
            correction: str | None = None, out: PathLike | None = None,
            allow_mismatch: bool = False) -> pd.DataFrame:
    """Per-cell differences B - A of two leaderboards (``leaderboard.csv``
    paths, validated on read, or frames from ``load_leaderboard``): Welch's
    t-test per (task, method) on the OOD ``metric`` (``exact_match`` or
    ``token_accuracy``), p-values corrected over all tested cells
    (``correction``: ``bh`` Benjamini-Hochberg, the default, ``holm``, ``none``), a verdict
    per cell. Cells made under different protocols (settings) are refused
    (``ProtocolMismatch``, naming the fields) unless ``allow_mismatch``, and
    then every output states the mismatch. With ``out`` compare.csv/.md/.png
    are written there."""
    return compare_leaderboards(a, b, metric, correction, out, allow_mismatch)


def compare_text(diff: pd.DataFrame) -> str:
    """A comparison as ``compare.md`` holds it, then its one-line summary."""
    return comparison_text(diff)


def generate(task: str, lengths: Sequence[int] | None = None, *, samples: int | None = None,
             seed: int | None = None, preset: str = "quick", out: PathLike | None = None) -> list[dict]:
    """The benchmark's evaluation instances of ``task``, one dict per
    instance (``benchmark.instances``: ``input``/``answer`` as text,
    ``input_ids``/``answer_ids`` as token ids, and where each came from): by
    default exactly those a run of ``preset`` is scored on (its evaluated
    lengths, samples per length and evaluation seed). With ``out``, written
    there as JSON Lines (``datasets.load_dataset("json", data_files=out)``
    reads them)."""
    lengths, samples, seed = evaluation_settings(task, preset, lengths, samples, seed)
    instances = evaluation_instances(task, lengths, samples, seed)
    if out is not None:
        write_text(Path(out), write_jsonl(instances))
    return instances


def export(preset: str = "quick", out: PathLike = "dataset", *, tasks: Sequence[str] | None = None,
           lm_eval: bool = False, inspect: bool = False) -> dict:
    """Write ``preset``'s test instances (every task label of its grid, or
    ``tasks``) to the folder ``out`` as a Hugging Face dataset: Parquet per
    task and length band, a dataset card and Croissant metadata
    (``benchmark.dataset``). ``datasets.load_dataset(out, TASK)`` loads it;
    its rows are ``generate``'s instances plus an ``id`` that ``score`` reads. ``lm_eval``
    and ``inspect`` add those harnesses' tasks (``benchmark.harness_packs``).
    Returns what was written (``configs``, ``skipped``, ``folder``, ``harnesses``, ``harness_skipped``)."""
    if preset not in PRESETS:
        raise UnknownNameError("preset", preset, PRESETS)
    return export_dataset(PRESETS[preset], out, tasks, lm_eval, inspect)


def score(task: str, predictions: PathLike, *, out: PathLike | None = None, method: str | None = None,
          preset: str = "quick") -> pd.DataFrame:
    """Per-length exact match and token accuracy of ``predictions``: the
    JSON Lines of ``generate`` with a ``prediction`` (the answer as text) or
    ``prediction_ids`` added to each line, or a run's saved predictions
    (``run(save_predictions=True)``: a ``.npz`` file). Every line must answer one
    generated instance (checked against it); refused otherwise, naming the
    line. With ``out`` the table is written there as ``score.csv``; with
    ``method`` too, one leaderboard row for that name (model ``external``,
    ``preset``'s length bands and fit rule for the task) as ``leaderboard.csv``,
    which ``compare`` and ``leaderboard`` read (``attrs["row"]`` holds it)."""
    table = score_file(task, predictions, preset)
    return scored_table(task, table, out, method, PRESETS[preset].evaluation_config(task))


def load_predictions(path: PathLike) -> pd.DataFrame:
    """A run's saved predictions (``run(save_predictions=True)``:
    ``<results>/predictions/<run_id>.npz``), one row per evaluation instance:
    ``run_id``, ``method``, ``seed``, the instance's fields (``task``,
    ``length``, ``index``, ``input``, ``answer``, their ids, ...),
    ``prediction_ids`` and ``exact`` (every answer token predicted right)."""
    meta, lines = read_predictions(check_input_file(path, "predictions", MAX_PREDICTIONS_BYTES))
    frame = pd.DataFrame(lines)
    for place, key in enumerate(("run_id", "method", "seed")):
        frame.insert(place, key, meta[key])
    frame["exact"] = [p == a for p, a in zip(frame.prediction_ids, frame.answer_ids)]
    return frame


def evaluate(model, task: str, lengths: Sequence[int] | None = None, *, samples: int | None = None,
             seed: int | None = None, preset: str = "quick", heads: int = 8, out: PathLike | None = None,
             method: str | None = None) -> pd.DataFrame:
    """Per-length metrics of ``model`` on ``task``'s evaluation instances (``generate``'s, same defaults), by the
    harness's own evaluation: ``model`` is any callable from token ids ``(batch, tokens)`` to logits ``(batch,
    tokens, vocabulary)`` (a plain ``nn.Module``; a Hugging Face causal LM, whose ``.logits`` is read), a folder a
    ``transformers`` model's ``save_pretrained`` wrote (local files only; one ``run --save-models`` wrote must
    hold ``task``'s tokenizer), or a lengthbench run's model (then its own positions are used, and the numbers
    are those of its record). ``heads`` only sizes the chunks. ``out`` and ``method`` write as ``score``'s do."""
    lengths, samples, seed = evaluation_settings(task, preset, lengths, samples, seed)
    table = evaluate_model(model, task, lengths, samples, seed, heads)
    return scored_table(task, table, out, method, PRESETS[preset].evaluation_config(task), seed)


def reproduce(study: str, results: PathLike, out: PathLike | None = None, preset: str | None = None) -> str:
    """The published-vs-ours report of a study (``STUDIES``: ``lengthbench
    list studies``) from the records in ``results`` (of ``preset``'s grid
    only, when given); written to ``out`` (default: ``results``) as
    ``reproduction.md``, whose path is the text's last line, beside
    ``reproduction.json`` (which study, which records, which preset: what a
    rebuild needs, as a view's folder name need not be the study's)."""
    return reproduce_study(study, results, out, preset)


def study_names() -> list[str]:
    """Every registered study (``reproduce`` takes one)."""
    return STUDIES.names()


def studies_text(as_json: bool = False) -> str:
    """Every study: its presets, the papers it tests, its report and where its reference records are (with
    ``as_json``, each as JSON)."""
    return studies_listing(as_json)


def perf_configs() -> list[str]:
    """The model configurations ``perf`` can time."""
    return list(perf_bench.perf_configs())


def perf(configs: Sequence[str] = ("reference", "quick"), *, steps: int = 10,
         eval_lengths: Sequence[int] = (100, 500), bf16: bool = False,
         out: PathLike | None = "results/perf.json", methods: Sequence[str] = ()) -> str:
    """Training and evaluation speed on this machine (``benchmark/tools/perf.py``),
    as the printed table; the full report goes to ``out`` as JSON. ``methods``
    (``transformer/forget``, ``deltanet``, ...) are timed at quick's shapes
    against the rotary transformer."""
    perf_bench.check_request(configs, methods)
    if out:
        ensure_output_dir(Path(out).parent, "--out (its folder)")
    report = perf_bench.measure(list(configs), steps, tuple(eval_lengths), bf16, methods=tuple(methods))
    text = perf_bench.format_report(report)
    return text + (f"\nwrote {write_json(out, report)}" if out else "")


def bench_generation(lengths: Sequence[int] = (40, 500), batch: int = 128,
                     tasks: Sequence[str] | None = None) -> Iterator[str]:
    """The batch-generation benchmark's table, a line at a time as measured."""
    return generation_bench.table_lines(lengths, batch, tasks)


def presets_text(as_json: bool = False) -> str:
    """Every preset as a table, one line each (``lengthbench list
    presets``), or with ``as_json`` every setting as JSON (``--json``)."""
    return presets_listing(as_json)


def tasks_table() -> str:
    """Every registered task (installed packages' included, named after the table), as a markdown table."""
    load_entry_points()
    return listing.tasks_table() + origins_line(TASKS.names())


def formats_table() -> str:
    """Every registered data format (installed packages' included, named after the table), as a markdown table."""
    load_entry_points()
    return listing.formats_table() + origins_line(FORMATS.names())


def encodings_text() -> str:
    """Every registered encoding (plugins installed as entry points included)."""
    load_entry_points()
    return encodings_listing()


def models_text() -> str:
    """Every model family (installed packages' included), the descriptions in one column."""
    load_entry_points()
    return families_listing()
