"""Shared test fixtures: a tiny preset so grid tests run in seconds, and
every test's plugins unloaded when it ends."""

import functools
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lengthbench.benchmark.presets import PRESETS, get_preset, register_preset
from lengthbench.models import plugins

torch.set_num_threads(1)


@contextmanager
def plugins_unloaded():
    """What plugins register inside the block (encodings, families, tasks, formats, the imported plugin
    modules, the entry points' bookkeeping) is removed when it ends."""
    from lengthbench.models.encodings import ENCODINGS
    from lengthbench.models.families import FAMILIES
    from lengthbench.tasks import TASKS
    from lengthbench.tasks.formats import FORMATS

    registries = (ENCODINGS, FAMILIES, TASKS, FORMATS)
    before = [set(r.names()) for r in registries]
    modules = set(sys.modules)
    tables = {name: dict(getattr(plugins, name)) for name in ("ORIGINS", "BROKEN")}
    loaded = set(plugins.LOADED)
    try:
        yield
    finally:
        for registry, names in zip(registries, before):
            for name in set(registry.names()) - names:
                registry.remove(name)
        for name in set(sys.modules) - modules:
            if name.startswith("lengthbench_plugin_"):
                del sys.modules[name]
        for name, value in tables.items():
            getattr(plugins, name).clear()
            getattr(plugins, name).update(value)
        plugins.LOADED.clear()
        plugins.LOADED.update(loaded)


@pytest.fixture(autouse=True)
def plugins_unloaded_after_each_test():
    """No later test in the same process sees what a test's plugins registered (a test that
    submits or runs a plugin in-process, in any module, leaves the registries as it found them)."""
    with plugins_unloaded():
        yield


def make_tiny_preset():
    """smoke at 3 steps on copy/parity_check x nope/coupled (one cell n/a)."""
    base = get_preset("smoke")
    return replace(
        base, name="tiny", tasks=("copy", "parity_check"), encodings=("nope", "coupled"),
        settings={**base.settings, "steps": 3, "eval_samples": 4, "validation_length": 6, "test_length": 7},
    )


@pytest.fixture
def tiny_preset():
    """The tiny preset, registered as "tiny" (so the command line runs it) while the test runs."""
    preset = register_preset(make_tiny_preset())
    yield preset
    PRESETS.remove("tiny")


def set_csv_cell(text: str, row: int, column: str, value: str) -> str:
    """``text`` (a CSV) with one cell replaced; row 1 is the first data row."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    rows[row][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def parity_after_training(family: str, encoding: str = "", **settings) -> list[float]:
    """Held-out exact match (the fixed evaluation stream, never trained on) at
    every training length of a ``suite`` parity run of ``family`` trained with
    ``settings`` (steps, lr, model, ...) on CPU."""
    from lengthbench.benchmark.evaluate import evaluate_length
    from lengthbench.benchmark.train import train_run
    from lengthbench.tasks import get_task

    config = replace(get_preset("suite").run_config("parity_check", encoding, 0, family), warmup_steps=20,
                     eval_samples=256, **settings)
    task, cpu = get_task("parity_check"), torch.device("cpu")
    model = config.build_model(task.vocab_size)
    train_run(model, task, config, cpu)
    return [evaluate_length(model, task, n, config, cpu)["exact_match"] for n in range(1, config.train_length + 1)]


def shipped_records(folder: Path) -> tuple:
    """A shipped reference folder's records, read once per test process (the horizon folder's 1,700 files take
    about a second each time, and a dozen tests read them); a tuple, so no test can change another's list."""
    return _records_of(Path(folder).resolve())


@functools.cache
def _records_of(folder: Path) -> tuple:
    from lengthbench.benchmark.store import ResultsFolder

    return tuple(ResultsFolder(folder).records())
