"""A preset's test instances as a Hugging Face dataset folder (``lengthbench export``).

Users of the founding repositories ask for the test data without the training code; ``generate``
writes one task's instances as JSON Lines, this writes a whole preset's as a versioned, loadable
dataset: one config per task label of the preset's grid (a task in a data format is its own
config), one Parquet file per split, where the splits are the preset's bands as every run scores
them (``RunConfig.split``): ``in_distribution`` (the trained lengths), ``validation`` and ``test``
(the reported band). A row is ``generate``'s instance (``benchmark.instances``) plus ``id``; a field
``generate`` leaves out of an instance (``scored`` where every answer position is scored) is null.

``id`` names the instance: ``TASK/LENGTH/EVAL_SEED/N_SAMPLES/INDEX``; ``score`` reads a prediction
keyed by it alone (``instances.instance_fields``). Beside the data: ``README.md``, the dataset card with the
YAML header the Hub reads (configs and their files, features, splits, license, and the task and
format versions), and ``croissant.json``, the same in MLCommons' Croissant 1.0 metadata. Writing
needs ``pyarrow`` (the ``hf`` extra); nothing is uploaded.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from lengthbench.benchmark.files import atomic_path, ensure_output_dir, json_text, refuse_foreign_files, write_text
from lengthbench.benchmark.harness_packs import (
    harness_labels, refuse_foreign_harness_files, write_inspect_tasks, write_lm_eval_pack,
)
from lengthbench.benchmark.instances import evaluation_instances, instance_id
from lengthbench.benchmark.version import __version__
from lengthbench.core.errors import InputError, install_hint
from lengthbench.tasks.formats import label_not_applicable

# The preset's bands as split names the Hub knows (the reported test band is `test`).
SPLITS = {"id": "in_distribution", "val": "validation", "ood": "test"}
LICENSE = "apache-2.0"
# The columns, in order, with their Hub feature types; the optional ones appear in a config whose instances have them.
COLUMNS = {"id": "string", "task": "string", "task_version": "int64", "format_version": "int64", "length": "int64",
           "index": "int64", "n_samples": "int64", "eval_seed": "int64", "input": "string", "answer": "string",
           "input_ids": ["int64"], "answer_ids": ["int64"], "scored": ["int64"], "position_ids": ["int64"]}
OPTIONAL_COLUMNS = ("format_version", "scored", "position_ids")
CROISSANT_TYPES = {"string": "sc:Text", "int64": "sc:Integer"}


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError(f"lengthbench export writes Parquet, which needs pyarrow: {install_hint('hf')}") from None
    return pyarrow


def export_dataset(preset, out, tasks=None, lm_eval: bool = False, inspect: bool = False) -> dict:
    """Write ``preset``'s test instances (a ``Preset``; ``tasks``, a subset of
    its grid's task labels) to the folder ``out``; returns what was written:
    ``configs`` (per task label: its splits' lengths, instance counts and
    files) and ``skipped`` (a label whose format cannot write its task: why).
    With ``lm_eval`` and ``inspect``, the harnesses' tasks beside them
    (``benchmark.harness_packs``): ``harnesses`` ({kind: path}) and
    ``harness_skipped`` (a label no text harness scores as lengthbench does: why)."""
    labels = preset.grid_tasks()
    if tasks is not None and not tasks:
        raise InputError(f"--tasks: the list is empty; give some of {', '.join(labels)}, or leave it out for all")
    twice = next((t for i, t in enumerate(tasks or ()) if t in tasks[:i]), None)
    if twice is not None:
        raise InputError(f"--tasks lists {twice} twice; give each once")
    unknown = [t for t in tasks or () if t not in labels]
    if unknown:
        raise InputError(f"--tasks {', '.join(unknown)}: not in preset {preset.name}'s grid; its tasks are "
                         f"{', '.join(labels)}")
    pa = _pyarrow()
    _refuse_foreign_files(Path(out))
    if lm_eval or inspect:
        refuse_foreign_harness_files(Path(out))
    folder = ensure_output_dir(out, "--out")
    configs, skipped = {}, {}
    for label in tasks or labels:
        reason = label_not_applicable(label)
        if reason is not None:
            skipped[label] = reason
            continue
        config = preset.evaluation_config(label)
        instances = evaluation_instances(label, config.eval_lengths(), config.eval_samples, config.eval_seed)
        columns = [c for c in COLUMNS if c not in OPTIONAL_COLUMNS or any(c in i for i in instances)]
        splits = {}
        for band, split in SPLITS.items():
            rows = [{"id": instance_id(i), **i} for i in instances if config.split(i["length"]) == band]
            if not rows:  # an earlier export's file of a band this preset does not have would read as this one's
                (folder / label / f"{split}.parquet").unlink(missing_ok=True)
                continue
            path = Path(label) / f"{split}.parquet"
            table = pa.Table.from_pylist(rows, schema=_schema(pa, columns))
            (folder / label).mkdir(exist_ok=True)
            with atomic_path(folder / path) as tmp:
                pa.parquet.write_table(table, tmp)
            splits[split] = {"path": path.as_posix(), "lengths": sorted({r["length"] for r in rows}),
                             "rows": len(rows), "bytes": table.nbytes,
                             "answer_tokens": max(len(r["answer_ids"]) for r in rows),
                             "file_bytes": (folder / path).stat().st_size, "sha256": _sha256(folder / path)}
        task = instances[0]
        configs[label] = {"columns": columns, "splits": splits, "task_version": task["task_version"],
                          "format_version": task.get("format_version"), "eval_seed": config.eval_seed,
                          "n_samples": config.eval_samples}
    write_text(folder / "README.md", _card(preset, configs, skipped))
    write_text(folder / "croissant.json", json_text(_croissant(preset, configs)))
    written = {"configs": configs, "skipped": skipped, "folder": folder, "harnesses": {}, "harness_skipped": {}}
    if lm_eval or inspect:
        harnessed, written["harness_skipped"] = harness_labels(configs)
        if lm_eval and harnessed:  # none harnessed: no pack, each label's reason is printed
            written["harnesses"]["lm_eval"] = write_lm_eval_pack(folder, preset, harnessed, __version__)
        if inspect and harnessed:
            written["harnesses"]["inspect"], written["harnesses"]["hub"] = write_inspect_tasks(
                folder, preset, harnessed, __version__)
    return written


def _schema(pa, columns: list[str]):
    def arrow(kind):
        return pa.list_(arrow(kind[0])) if isinstance(kind, list) else getattr(pa, kind)()
    return pa.schema([(c, arrow(COLUMNS[c])) for c in columns])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _feature_yaml(column: str) -> list[str]:
    kind = COLUMNS[column]
    if isinstance(kind, list):
        return [f"  - name: {column}", "    list:", f"      dtype: {kind[0]}"]
    return [f"  - name: {column}", f"    dtype: {kind}"]


def _refuse_foreign_files(folder: Path) -> None:
    """Refuse a folder whose README.md or croissant.json an export did not write (a user's own card or
    metadata, which the export would replace); a previous export's are rewritten."""
    refuse_foreign_files(folder, {"README.md": lambda text: "written by `lengthbench export" in text,
                                  "croissant.json": lambda text: '"name": "lengthbench-' in text})


def _card(preset, configs: dict, skipped: dict) -> str:
    """The dataset card: the Hub's YAML header, then what the data is, how it was made and how to use it."""
    head = ["---", f"license: {LICENSE}", f"pretty_name: lengthbench {preset.name} test instances",
            "task_categories:", "- text-generation", "tags:", "- length-generalization", "- algorithmic-reasoning",
            "- lengthbench", "configs:"]
    for label, info in configs.items():
        head += [f"- config_name: {label}", "  data_files:"]
        head += [line for split, s in info["splits"].items()
                 for line in (f"  - split: {split}", f"    path: {s['path']}")]
    head.append("dataset_info:")
    for label, info in configs.items():
        head += [f"- config_name: {label}", "  features:"]
        head += [line for column in info["columns"] for line in _feature_yaml(column)]
        head.append("  splits:")
        head += [line for split, s in info["splits"].items() for line in (
            f"  - name: {split}", f"    num_bytes: {s['bytes']}", f"    num_examples: {s['rows']}")]
        head += [f"  download_size: {sum(s['file_bytes'] for s in info['splits'].values())}",
                 f"  dataset_size: {sum(s['bytes'] for s in info['splits'].values())}"]
    head.append("---")
    settings = preset.evaluation_config(next(iter(configs))) if configs else None
    rows = ["| config | task version | format version | split | lengths | instances |", "|---|---|---|---|---|---|"]
    for label, info in configs.items():
        for split, s in info["splits"].items():
            lengths = s["lengths"]
            span = f"{lengths[0]}..{lengths[-1]} ({len(lengths)} lengths)" if len(lengths) > 1 else str(lengths[0])
            rows.append(f"| `{label}` | {info['task_version']} | {info['format_version'] or '-'} | {split} | "
                        f"{span} | {s['rows']} |")
    body = [
        f"# lengthbench `{preset.name}`: test instances", "",
        f"The fixed evaluation instances of every task of lengthbench's `{preset.name}` preset "
        f"({preset.description}), written by `lengthbench export --preset {preset.name}` (lengthbench "
        f"{__version__}). Every run of the preset is scored on exactly these instances: a model trained anywhere "
        "can be evaluated on the benchmark's data without its training code.", "",
        "## Structure", "",
        "One config per task (a task in a data format, `addition+reversed`, is its own config); one split per "
        "length band of the preset: `in_distribution` (the lengths runs train on), `validation` (where any setting "
        "is chosen) and `test` (the reported band, longer than anything trained on)."
        + (f" For `{preset.name}`: training lengths up to {settings.train_length}, validation up to "
           f"{settings.validation_length}, test up to {settings.test_length} (task lengths; some tasks set their "
           "own)." if settings is not None else ""), "",
        "\n".join(rows), "",
        "## Fields", "",
        "- `id`: `TASK/LENGTH/EVAL_SEED/N_SAMPLES/INDEX`; `lengthbench score` reads a prediction keyed by it.",
        "- `task`, `task_version`, `format_version` (a task in a data format): what wrote the instance; a new "
        "version is a new dataset.",
        "- `length`: the task length; `index` of `n_samples` instances at that length; `eval_seed`.",
        "- `input`, `answer`: the task's symbols, space-separated.",
        "- `input_ids`: the prompt lengthbench's models read (`<bos>`, the input, `<sep>`); `answer_ids`: the tokens "
        "to produce next (then `<eos>`). Ids 0..3 are `<pad> <bos> <sep> <eos>`; the task's i-th symbol is 4 + i.",
        "- `scored` (formats with hints): the positions of `answer_ids` that are scored; null where all are.",
        "- `position_ids` (tasks with structured positions): over the prompt and the answer.", "",
        "## Use", "",
        "```python", "import datasets",
        f"test = datasets.load_dataset(\"PATH\", \"{next(iter(configs), 'TASK')}\", split=\"test\")", "```", "",
        "Score a model's answers: write JSON Lines with `id` and `prediction` (the answer as text, symbols "
        "separated by spaces) or `prediction_ids`, or the split with a `prediction` column added as Parquet, then "
        "`lengthbench score TASK FILE`. Exact match: every scored answer token right; token accuracy: their share.",
        "",
        "To publish: `huggingface-cli upload USER/NAME PATH --repo-type dataset` (nothing here uploads).", "",
        "## Provenance", "",
        "Generated, not collected: each task's generator draws the instances from the preset's evaluation seed "
        "and the length, so `lengthbench generate TASK --preset " + preset.name + "` writes the same instances. "
        "`croissant.json` describes the same files in Croissant 1.0.",
    ]
    if skipped:
        body += ["", "Task labels of the grid with no instances (their format cannot write the task): "
                 + "; ".join(f"`{label}`: {why}" for label, why in skipped.items()) + "."]
    return "\n".join(head + body) + "\n"


CROISSANT_CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "equivalentProperty": "cr:equivalentProperty", "samplingRate": "cr:samplingRate",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"}, "dct": "http://purl.org/dc/terms/",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField",
    "transform": "cr:transform"}


def _croissant(preset, configs: dict) -> dict:
    """Croissant 1.0: one FileObject per Parquet file, one RecordSet per config and split."""
    distribution, record_sets = [], []
    for label, info in configs.items():
        for split, s in info["splits"].items():
            file_id, set_id = s["path"], s["path"].removesuffix(".parquet")  # TASK/SPLIT
            distribution.append({"@type": "cr:FileObject", "@id": file_id, "name": file_id, "contentUrl": file_id,
                                 "encodingFormat": "application/x-parquet", "sha256": s["sha256"]})
            record_sets.append({"@type": "cr:RecordSet", "@id": set_id, "name": set_id, "field": [
                _croissant_field(set_id, file_id, column) for column in info["columns"]]})
    return {"@context": CROISSANT_CONTEXT, "@type": "sc:Dataset", "conformsTo": "http://mlcommons.org/croissant/1.0",
            "name": f"lengthbench-{preset.name}",
            "description": f"The fixed test instances of lengthbench's {preset.name} preset ({preset.description}), "
                           "one record set per task and length band.",
            "license": "https://www.apache.org/licenses/LICENSE-2.0", "version": __version__,
            "citeAs": f"@misc{{lengthbench, title={{lengthbench: an open benchmark suite for length generalization}}, "
                      f"note={{version {__version__}, preset {preset.name}}}}}",
            "distribution": distribution, "recordSet": record_sets}


def _croissant_field(set_id: str, file_id: str, column: str) -> dict:
    kind = COLUMNS[column]
    field = {"@type": "cr:Field", "@id": f"{set_id}/{column}", "name": column,
             "dataType": CROISSANT_TYPES[kind[0] if isinstance(kind, list) else kind],
             "source": {"fileObject": {"@id": file_id}, "extract": {"column": column}}}
    if isinstance(kind, list):
        field["repeated"] = True
    return field
