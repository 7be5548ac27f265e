"""The one parsing module of cell names (tasks/cells.py): a task label and a
method split into a Cell and join back to the same strings, for every
registered task, format, alias, family and encoding."""

import pytest

from lengthbench.benchmark.presets import get_preset
from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES
from lengthbench.tasks import TASKS
from lengthbench.tasks.cells import PLAIN, TASK_ALIASES, Cell, format_label, method_parts, split_label, task_label
from lengthbench.tasks.formats import FORMATS


def _methods():
    return [name if not entry.takes_encoding else f"{name}/{e}" for name, entry in FAMILIES.items()
            for e in (ENCODINGS.names() if entry.takes_encoding else [""])]


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_every_label_and_method_round_trips_through_a_cell(fmt):
    for task in TASKS.names():
        label = task_label(task, fmt)
        for method in _methods():
            cell = Cell.parse(label, method)
            assert (cell.task, cell.format) == (task, fmt) and cell.label == label and cell.method == method
            assert cell.encoding == method_parts(method)[1]


def test_aliases_plain_and_the_explicit_pair():
    for alias, (task, fmt) in TASK_ALIASES.items():
        assert split_label(alias) == (task, fmt) and task_label(task, fmt) == alias
        assert split_label(format_label(task, fmt)) == (task, fmt)  # the explicit label names the same pair
    assert split_label("copy") == ("copy", PLAIN) and task_label("copy", PLAIN) == "copy"
    assert Cell.parse("copy", "lstm") == Cell("copy", PLAIN, "lstm", "")


def test_a_run_and_its_record_carry_their_cell():
    config = get_preset("smoke").run_config("addition+reversed", "rope", 0)
    assert config.cell == Cell("addition", "reversed", "transformer", "rope")
    assert config.method == "transformer/rope" and config.task == "addition+reversed"


def test_a_run_config_holds_its_cell_and_writes_every_shipped_config_as_it_was():
    """``RunConfig.cell`` is a field (the text parsed once, where a record comes in); written back, every shipped
    record's config is the text it was stored as, and its run id the one it was filed under: no hash moved."""
    import json
    from dataclasses import fields
    from pathlib import Path

    from lengthbench.benchmark.config import RunConfig

    assert {f.name: f.type for f in fields(RunConfig)}["cell"] in (Cell, "Cell")
    paths = sorted((Path(__file__).resolve().parent.parent / "leaderboard/reference").glob("**/*__seed*.json"))
    assert len(paths) > 3000
    for path in paths:
        stored = json.loads(path.read_text())
        config = RunConfig.from_dict(stored["config"])
        assert isinstance(config.cell, Cell)
        assert config.to_dict() == stored["config"], path.name
        assert config.run_id == stored["run_id"] == path.stem, path.name
