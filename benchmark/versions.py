"""Versions of the code that makes results, so a record is reused only while
that code is unchanged in effect.

Every task (``Task.version``), every data format (``Format.version``),
every encoding (``register_encoding(..., version=)``), every model family
(``register_family(..., version=)``) and the
trainer (``TRAINER_VERSION``: every other module the run harness imports that
decides a result: configs, batching, training, evaluation, seeding, records,
batch assembly, ...) has a version. The trainer's files are not listed by
hand: they are the repository modules ``benchmark/runner.py`` imports,
directly or not (read from their import statements), less those a task,
encoding or family digest covers and those that decide no result
(``NOT_RESULT_SOURCES``), so a new module the harness comes to import is
guarded from the start. Versions other
than 1 enter the run config (``RunConfig.code_versions``) and so its hash: a
bump makes every affected record stale, and ``run`` reruns those cells.

A bump must not be forgotten: ``code_digests.json`` (beside this file)
records, per component, its version and a digest of its source files, and a
test fails when a source changes while the table does not. After a change,
bump the version if results change, then record the new digests with
``python -m lengthbench.generated --update`` (which rewrites every generated file).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import sys
from pathlib import Path

from lengthbench.core.errors import InputError
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES
from lengthbench.tasks import TASKS
from lengthbench.tasks.formats import FORMATS, label_versions

TRAINER_VERSION = 2  # 2: one plain model per run, rotary pairs interleaved

PACKAGE = Path(sys.modules["lengthbench"].__file__).parent  # the installed package (a clone: its links)
TABLE = Path(__file__).with_name("code_digests.json")
HARNESS = "benchmark/runner.py"  # what executes a run: everything it imports may decide the result
# Modules the harness imports that decide no result: where and how files are written and claimed,
# which device, error types, the registry type, version strings and this guard itself.
NOT_RESULT_SOURCES = ("benchmark/claims.py", "benchmark/device.py", "benchmark/files.py", "benchmark/store.py",
                      "benchmark/version.py", "benchmark/versions.py", "__init__.py", "core/__init__.py",
                      "core/errors.py", "core/registry.py")


def code_versions(task: str, encoding: str | None, family: str = "transformer") -> dict[str, int]:
    """The versions a run of ``task`` (a task label: the task's and its
    format's) x ``encoding`` (``None`` for a family without encodings) x
    ``family`` is made by, those other than 1 only (so that configs of
    unbumped code keep their hashes)."""
    versions = {**label_versions(task), "encoding": ENCODINGS[encoding].version if encoding else 1,
                "family": FAMILIES[family].version, "trainer": TRAINER_VERSION}
    return {k: v for k, v in versions.items() if v != 1}


# Sources are named by their place in the package (``models/encodings/rope.py``, ``core/errors.py``), the
# same from a clone (whose package links to the top-level folders), an editable install and a wheel,
# so the digests are the same wherever lengthbench is installed from.

def source_file(source: str) -> Path:
    """The file of a source named by its place in the package."""
    return (PACKAGE / source).resolve()


def _source(obj) -> str:
    """The source that defines ``obj`` (a class or function), by its module's place in the package."""
    init = Path(inspect.getfile(obj)).name == "__init__.py"
    return "/".join(obj.__module__.split(".")[1:]) + ("/__init__.py" if init else ".py")


def _module_sources(module: str) -> list[str]:
    """The sources that importing ``module`` (``lengthbench.x.y``) executes:
    its own and its packages' ``__init__``s."""
    parts, sources = module.split(".")[1:], []
    for depth in range(len(parts) + 1):
        base = "/".join(parts[:depth])
        for candidate in ((f"{base}.py", f"{base}/__init__.py") if depth else ("__init__.py",)):
            if (PACKAGE / candidate).is_file():
                sources.append(candidate)
    return sources


def imported_sources(entry: str) -> set[str]:
    """``entry`` and every source of the package it imports, directly or not
    (from the import statements, wherever they stand in a file)."""
    seen, todo = set(), [entry]
    while todo:
        source = todo.pop()
        if source in seen:
            continue
        seen.add(source)
        for node in ast.walk(ast.parse(source_file(source).read_text())):
            names = ([node.module] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            todo += [f for name in names if name.split(".")[0] == "lengthbench" for f in _module_sources(name)]
    return seen


def trainer_sources(covered: set[str]) -> list[str]:
    """The harness's result-deciding sources that no component digest ``covered``."""
    return sorted(imported_sources(HARNESS) - covered - set(NOT_RESULT_SOURCES))


def _digest(sources: list[str]) -> str:
    sha = hashlib.sha256()
    for source in sorted(set(sources)):
        sha.update(source.encode() + b"\0" + source_file(source).read_bytes())
    return sha.hexdigest()[:16]


def _ours(obj) -> bool:
    """Whether ``obj`` is defined in lengthbench's own package: a task, format, encoding or family
    registered from a user's script is not ours to digest (a plugin file's hash enters its configs)."""
    return obj.__module__.split(".")[0] == "lengthbench"


def components() -> dict[str, dict]:
    """Every built-in task, format, encoding and family and the trainer:
    version and digest of the source files that decide its results (a
    task's, format's or encoding's module, with the base encoding's for a
    randomized one; a family's module; the trainer's ``trainer_sources``)."""
    table, covered = {}, set()
    for name, cls in sorted(TASKS.items()):
        if not _ours(cls):
            continue
        covered.add(_source(cls))
        table[f"task:{name}"] = {"version": cls.version, "digest": _digest([_source(cls)])}
    for name, fmt in sorted(FORMATS.items()):
        if not _ours(type(fmt)):
            continue
        covered.add(_source(type(fmt)))
        table[f"format:{name}"] = {"version": fmt.version, "digest": _digest([_source(type(fmt))])}
    for name, entry in sorted(ENCODINGS.items()):
        if entry.source != "built-in" or not _ours(entry.factory):
            continue  # a plugin's file hash is already in its configs (encoding_source)
        sources = [_source(entry.factory), "models/encodings/base.py"]
        if entry.base is not None:
            sources.append(_source(ENCODINGS[entry.base].factory))
        covered.update(sources)
        table[f"encoding:{name}"] = {"version": entry.version, "digest": _digest(sources)}
    for name, entry in FAMILIES.items():
        if entry.source != "built-in" or not _ours(entry.build):
            continue  # a plugin's file hash is already in its configs (family_source)
        sources = [_source(entry.build), "models/families.py"]
        covered.update(sources)
        table[f"family:{name}"] = {"version": entry.version, "digest": _digest(sources)}
    table["trainer"] = {"version": TRAINER_VERSION, "digest": _digest(trainer_sources(covered))}
    return table


def unrecorded_changes() -> list[str]:
    """Components whose version or source differs from ``code_digests.json``."""
    recorded = json.loads(TABLE.read_text()) if TABLE.exists() else {}
    return [name for name, now in components().items() if recorded.get(name) != now]


def check_unchanged(configs) -> None:
    """Refuse (``InputError``, one line) to run ``configs`` while a component
    they use changed its source without a version bump recorded in the table:
    a changed generator, encoding or trainer must never silently reuse old
    records."""
    used = {"trainer"}
    for c in configs:
        task, fmt = c.cell.task, c.cell.format
        used |= {f"task:{task}", f"format:{fmt}", f"family:{c.family}"}
        used |= {f"encoding:{c.encoding}"} if c.encoding else set()
    changed = sorted(set(unrecorded_changes()) & used)
    if changed:
        raise InputError(f"the source of {', '.join(changed)} changed since {TABLE.name} was written, with no "
                         "version bump recorded: bump its version if results change, then run `python -m "
                         "lengthbench.generated --update`")

