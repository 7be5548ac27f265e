"""The task and format tables shown by ``lengthbench list tasks|formats`` and in the docs (docs/tasks.md)."""

from __future__ import annotations

from lengthbench.tasks.base import TASKS, task_names
from lengthbench.tasks.cells import TASK_ALIASES, format_label, task_label
from lengthbench.tasks.formats import FORMATS, get_task, label_not_applicable


def tasks_table() -> str:
    """A markdown table: name, level/family, vocabulary, output rule, coupling;
    then the old names that stand for a task in a format."""
    lines = ["| task | level | vocab | output length | coupled ids | description |",
             "|---|---|---|---|---|---|"]
    for name in task_names():
        t = get_task(name)
        lines.append(f"| `{name}` | {t.level} | {t.vocab_size} ({len(t.symbols)} symbols) | "
                     f"{t.output_rule} | {'yes' if t.has_coupled_ids else 'no'} | {t.description} |")
    lines += ["", *(f"`{alias}` is kept as the name of `{task}` in the `{fmt}` format (`{format_label(task, fmt)}`)"
                    for alias, (task, fmt) in TASK_ALIASES.items())]
    return "\n".join(lines)


def formats_table() -> str:
    """A markdown table: each format, the tasks it writes (as grid labels), what it does."""
    lines = ["| format | tasks it applies to (grid label) | description |", "|---|---|---|"]
    for name, fmt in FORMATS.items():
        labels = [label for label in (task_label(task, name) for task in TASKS.names())
                  if label_not_applicable(label) is None]
        applies = "every task" if len(labels) == len(TASKS) else ", ".join(f"`{label}`" for label in labels)
        lines.append(f"| `{name}` | {applies} | {fmt.description} |")
    return "\n".join(lines)
