"""Training checkpoints: a long run killed half-way resumes where it was.

While a group trains, its whole training state (stacked model, optimizer,
every run's data and position random streams, the losses so far, which runs
diverged, the next step) is saved atomically every ``every_s`` seconds to
``<results>/checkpoints/<key>.pt``, with ``<key>.json`` naming its runs. A
rerun that trains the same runs as one group resumes from it, so its records
equal those of an uninterrupted run. A checkpoint is deleted once every run
it holds has a record.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import torch

from lengthbench.benchmark.files import atomic_path, write_json

CHECKPOINT_EVERY_S = 300.0  # a few minutes of work
FOLDER = "checkpoints"


class Checkpoint:
    """Save and resume one group's training state."""

    def __init__(self, results_dir: Path, run_ids: list[str], every_s: float = CHECKPOINT_EVERY_S):
        self.folder = Path(results_dir) / FOLDER
        self.run_ids = list(run_ids)
        key = hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:16]
        self.path, self.index = self.folder / f"{key}.pt", self.folder / f"{key}.json"
        self.every_s = every_s
        self.last = time.monotonic()

    def load(self) -> dict | None:
        """The saved state of exactly these runs, or None."""
        if not self.path.exists():
            return None
        state = torch.load(self.path, map_location="cpu", weights_only=True)
        return state if state.get("run_ids") == self.run_ids else None

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every_s

    def save(self, state: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json(self.index, {"run_ids": self.run_ids})
        with atomic_path(self.path) as tmp:
            torch.save({**state, "run_ids": self.run_ids}, tmp)
        self.last = time.monotonic()


def remove_finished(results_dir: Path, finished: set[str]) -> None:
    """Delete the checkpoints whose runs all have records now."""
    folder = Path(results_dir) / FOLDER
    for index in folder.glob("*.json"):
        try:
            run_ids = set(json.loads(index.read_text())["run_ids"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if run_ids <= finished:
            index.with_suffix(".pt").unlink(missing_ok=True)
            index.unlink(missing_ok=True)
    if folder.exists() and not any(folder.iterdir()):
        folder.rmdir()
