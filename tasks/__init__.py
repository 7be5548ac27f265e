"""Task registry and generators; importing this package registers every task."""

from lengthbench.tasks import (  # noqa: F401
    arithmetic, context_free, context_sensitive, recall, recognition, regular, sequence, state_tracking,
)
from lengthbench.tasks.base import (
    BOS,
    EOS,
    IGNORE,
    PAD,
    SEP,
    TASKS,
    Batch,
    Sample,
    Task,
    assemble_batch,
    make_batch,
    register_task,
    task_names,
)
from lengthbench.tasks.formats import get_task

__all__ = [
    "BOS", "EOS", "IGNORE", "PAD", "SEP", "TASKS", "Batch", "Sample", "Task",
    "assemble_batch", "get_task", "make_batch", "register_task", "task_names",
]
