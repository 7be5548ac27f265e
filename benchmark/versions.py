"""Versions of the code that makes results, so a record is reused only while
that code is unchanged in effect.

Every task (``Task.version``), every encoding (``register_encoding(...,
version=)``), every model family (``register_family(..., version=)``) and the trainer (``TRAINER_VERSION``: model, batching,
training, evaluation, seeding, batch assembly) has a version. Versions other
than 1 enter the run config (``RunConfig.code_versions``) and so its hash: a
bump makes every affected record stale, and ``run`` reruns those cells.

A bump must not be forgotten: ``code_digests.json`` (beside this file)
records, per component, its version and a digest of its source files, and a
test fails when a source changes while the table does not. After a change,
bump the version if results change, then record the new digests with
``python -m lengthbench.benchmark.versions --update``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from pathlib import Path

from lengthbench.errors import InputError
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES
from lengthbench.tasks import TASKS

TRAINER_VERSION = 1

ROOT = Path(__file__).resolve().parent.parent
TABLE = Path(__file__).with_name("code_digests.json")
TRAINER_SOURCES = ("benchmark/train.py", "benchmark/batching.py", "benchmark/evaluate.py", "benchmark/records.py",
                   "benchmark/seeding.py", "models/transformer.py", "tasks/base.py")


def code_versions(task: str, encoding: str | None, family: str = "transformer") -> dict[str, int]:
    """The versions a run of ``task`` x ``encoding`` (``None`` for a family
    without encodings) x ``family`` is made by, those other than 1 only (so
    that configs of unbumped code keep their hashes)."""
    versions = {"task": TASKS[task].version, "encoding": ENCODINGS[encoding].version if encoding else 1,
                "family": FAMILIES[family].version, "trainer": TRAINER_VERSION}
    return {k: v for k, v in versions.items() if v != 1}


def _source(obj) -> Path:
    """The repository file that defines ``obj`` (through the package's links)."""
    return Path(inspect.getfile(obj)).resolve()


def _digest(files: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(set(files)):
        sha.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def components() -> dict[str, dict]:
    """Every built-in task and encoding and the trainer: version and digest
    of the source files that decide its results (a task's or encoding's
    module, with the base encoding's for a randomized one)."""
    table = {"trainer": {"version": TRAINER_VERSION, "digest": _digest([ROOT / f for f in TRAINER_SOURCES])}}
    for name, cls in sorted(TASKS.items()):
        table[f"task:{name}"] = {"version": cls.version, "digest": _digest([_source(cls)])}
    for name, entry in sorted(ENCODINGS.items()):
        if entry.source != "built-in":
            continue  # a plugin's file hash is already in its configs (encoding_source)
        files = [_source(entry.factory), ROOT / "models/encodings/base.py"]
        if entry.base is not None:
            files.append(_source(ENCODINGS[entry.base].factory))
        table[f"encoding:{name}"] = {"version": entry.version, "digest": _digest(files)}
    for name, entry in FAMILIES.items():
        if entry.source != "built-in":
            continue  # a plugin's file hash is already in its configs (family_source)
        table[f"family:{name}"] = {"version": entry.version,
                                   "digest": _digest([_source(entry.build), ROOT / "models/families.py"])}
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
        used |= {f"task:{c.task}", f"family:{c.family}"} | ({f"encoding:{c.encoding}"} if c.encoding else set())
    changed = sorted(set(unrecorded_changes()) & used)
    if changed:
        raise InputError(f"the source of {', '.join(changed)} changed since {TABLE.name} was written, with no "
                         "version bump recorded: bump its version if results change, then run `python -m "
                         "lengthbench.benchmark.versions --update`")


def main(argv: list[str]) -> int:
    if argv == ["--update"]:
        TABLE.write_text(json.dumps(components(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {TABLE}")
        return 0
    changed = unrecorded_changes()
    for name in changed:
        print(f"{name}: source or version differs from {TABLE.name}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
