"""The task table shown by ``lengthbench list tasks`` and in the docs (docs/tasks.md)."""

from __future__ import annotations

from lengthbench.tasks.base import get_task, task_names


def tasks_table() -> str:
    """A markdown table: name, level/family, vocabulary, output rule, coupling."""
    lines = ["| task | level | vocab | output length | coupled ids | description |",
             "|---|---|---|---|---|---|"]
    for name in task_names():
        t = get_task(name)
        lines.append(f"| `{name}` | {t.level} | {t.vocab_size} ({len(t.symbols)} symbols) | "
                     f"{t.output_rule} | {'yes' if t.has_coupled_ids else 'no'} | {t.description} |")
    return "\n".join(lines)
