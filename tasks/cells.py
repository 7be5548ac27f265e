"""Cell names, parsed and built here and nowhere else.

A grid cell is a task written in a data format, run by a model family with a
position encoding: ``Cell(task, format, family, encoding)``. On disk and at
the command line it is two strings: the task label (``addition``,
``addition+reversed``, or an alias naming a pair: ``addition-index-hints``)
and the method (``transformer/rope``; a family without encodings is its name
alone, ``lstm``). Those strings are split (``Cell.parse``, ``split_label``,
``method_parts``) and joined (``Cell.label``, ``Cell.method``,
``task_label``, ``method_name``) by this module only, so their syntax lives
in one place (a test greps the others for it). Names are not checked here:
the registries do that (``get_task``, ``ENCODINGS``, ``FAMILIES``).
"""

from __future__ import annotations

from dataclasses import dataclass

PLAIN = "plain"  # the format a task is written in unless its label names another
FORMAT_SEPARATOR = "+"  # a task label TASK+FORMAT names a task written in a data format
METHOD_SEPARATOR = "/"  # a method FAMILY/ENCODING names a family run with an encoding
TRANSFORMER = "transformer"  # the family a bare encoding name belongs to
# Labels that name a (task, format) pair on their own, kept so that their records and presets still read.
TASK_ALIASES = {"addition-index-hints": ("addition", "index-hints")}


def format_label(task: str, fmt: str) -> str:
    """``TASK+FORMAT``, the explicit label of a pair (whatever alias names it too)."""
    return f"{task}{FORMAT_SEPARATOR}{fmt}"


def task_label(task: str, fmt: str) -> str:
    """The grid's name for ``task`` written in ``fmt``: the task's own name
    for ``plain``, the alias that names the pair where there is one, else
    ``TASK+FORMAT``."""
    if fmt == PLAIN:
        return task
    alias = next((name for name, pair in TASK_ALIASES.items() if pair == (task, fmt)), None)
    return alias or format_label(task, fmt)


def split_label(label: str) -> tuple[str, str]:
    """(task, format) of a task label; a bare name is the task in ``plain``."""
    if label in TASK_ALIASES:
        return TASK_ALIASES[label]
    task, separator, fmt = label.partition(FORMAT_SEPARATOR)
    return (task, fmt) if separator else (label, PLAIN)


def method_name(family: str, encoding: str) -> str:
    """The leaderboard key of a run: ``transformer/rope``, ``lstm`` (a run of
    a family without encodings has the empty encoding)."""
    return f"{family}{METHOD_SEPARATOR}{encoding}" if encoding else family


def method_parts(method: str) -> tuple[str, str]:
    """``(family, encoding)`` of a leaderboard key (the inverse of ``method_name``)."""
    family, _, encoding = method.partition(METHOD_SEPARATOR)
    return family, encoding


def cell_name(label: str, method: str) -> str:
    """How messages and progress bars name a cell: ``copy/transformer/rope``."""
    return f"{label}{METHOD_SEPARATOR}{method}"


def transformer_method(encoding: str) -> str:
    """The method of the transformer with ``encoding`` (``transformer/rope``)."""
    return method_name(TRANSFORMER, encoding)


@dataclass(frozen=True)
class Cell:
    """One cell of a grid, its four names apart (``encoding`` empty for a
    family without encodings)."""

    task: str
    format: str = PLAIN
    family: str = TRANSFORMER
    encoding: str = ""

    @classmethod
    def parse(cls, label: str, method: str) -> Cell:
        """The cell a task label and a method name denote (where they enter: a record, a CSV row, the CLI)."""
        task, fmt = split_label(label)
        family, encoding = method_parts(method)
        return cls(task, fmt, family, encoding)

    @property
    def label(self) -> str:
        """The task label (``addition+reversed``)."""
        return task_label(self.task, self.format)

    @property
    def method(self) -> str:
        """The method (``transformer/rope``, ``lstm``)."""
        return method_name(self.family, self.encoding)
