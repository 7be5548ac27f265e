"""Training checkpoints: a long run killed half-way resumes where it was.

While a run trains, its whole training state (model, optimizer, its data
and position random streams, the losses so far, the next step) is saved
atomically every ``every_s`` seconds to ``<results>/checkpoints/<key>.pt``,
with ``<key>.json`` naming its run. A rerun of the same run resumes from it,
so its record equals that of an uninterrupted run. A checkpoint is deleted
once its run has a record.

It fails safe. It holds the id of its run (with its config hash) and is used
only by exactly that run: one copied or renamed from another run is ignored
with a warning. One that cannot be loaded (truncated, not a torch
file, missing keys, a pickle the safe loader refuses) is moved aside to
``<file>.invalid`` with a warning, and training starts from step 0. One that
cannot be written (disk full, a file-size limit) leaves the previous one in
place, warns once, and training goes on. Drivers sharing the folder may
create and remove it at any time without breaking each other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import torch

from lengthbench.benchmark.files import atomic_path, file_problem, folder_lock, write_json

log = logging.getLogger(__name__)
STATE_KEYS = ("step", "model", "optimizer", "data_rng", "position_rng", "losses")

CHECKPOINT_EVERY_S = 300.0  # a few minutes of work
FOLDER = "checkpoints"
MAX_CHECKPOINT_BYTES = 16 << 30  # far above any model's and optimizer's state


class Checkpoint:
    """Save and resume one run's training state."""

    def __init__(self, results_dir: Path, run_id: str, every_s: float = CHECKPOINT_EVERY_S):
        self.folder = Path(results_dir) / FOLDER
        self.run_id = run_id
        key = hashlib.sha256(run_id.encode()).hexdigest()[:16]
        self.path, self.index = self.folder / f"{key}.pt", self.folder / f"{key}.json"
        self.every_s = every_s
        self.last = time.monotonic()
        self.write_failed = False

    def load(self) -> dict | None:
        """The saved state of exactly this run, or None (none saved, another
        run's, or unloadable: moved aside)."""
        problem = file_problem(self.path, MAX_CHECKPOINT_BYTES)
        if problem == "no such file":
            return None
        try:
            if problem is not None:
                raise ValueError(problem)
            state = torch.load(self.path, map_location="cpu", weights_only=True)
            missing = [k for k in STATE_KEYS if k not in state] if isinstance(state, dict) else ["all"]
            if not missing and saved_run(state) is None:
                missing = ["run_id"]
            if missing:
                raise ValueError(f"it lacks {', '.join(missing)}")
        except Exception as err:  # noqa: BLE001  (any unloadable file: a truncated zip, a refused pickle, ...)
            self.set_aside(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            return None
        if saved_run(state) != self.run_id:
            log.warning("checkpoint %s holds another run (%s), not this one; training from step 0",
                        self.path, str(saved_run(state))[:200])
            return None
        return state

    def set_aside(self, why: str) -> None:
        """Move an unusable checkpoint to ``<file>.invalid`` (kept for inspection) and say so."""
        aside = self.path.with_name(self.path.name + ".invalid")
        try:
            self.path.replace(aside)
        except OSError:
            pass
        log.warning("checkpoint %s cannot be used (%s); moved to %s, training from step 0", self.path, why,
                    aside.name)

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every_s

    def save(self, state: dict) -> None:
        """Save atomically; a failed write keeps the previous checkpoint, warns
        once, and lets training go on (the next due save tries again)."""
        self.last = time.monotonic()
        try:  # staged in the results folder: another driver may remove the empty checkpoints folder any time
            write_json(self.index, {"run_id": self.run_id}, staging=self.folder.parent)
            with atomic_path(self.path, staging=self.folder.parent) as tmp:
                torch.save({**state, "run_id": self.run_id}, tmp)
        except (OSError, RuntimeError) as err:  # torch's writer reports a full disk as a RuntimeError
            if not self.write_failed:
                self.write_failed = True
                log.warning("checkpoint %s could not be written (%s); training goes on, the previous checkpoint "
                            "(if any) is kept", self.path, err)


def saved_run(saved: dict) -> str | None:
    """The run a checkpoint or its index holds: ``run_id``, or the one-run
    ``run_ids`` list that checkpoints of the stacked trainer hold; ``None``
    when it names no single run."""
    if isinstance(saved.get("run_id"), str):
        return saved["run_id"]
    older = saved.get("run_ids")
    return older[0] if isinstance(older, list) and len(older) == 1 and isinstance(older[0], str) else None


def remove_finished(results_dir: Path, finished: set[str]) -> None:
    """Delete the checkpoints whose runs have records now, and the folder
    once it is empty (another driver may be creating or clearing it too)."""
    folder = Path(results_dir) / FOLDER
    try:
        indexes = list(folder.glob("*.json"))
    except OSError:  # the folder went away while listed
        return
    for index in indexes:
        if file_problem(index, 1 << 20):
            continue
        try:
            saved = json.loads(index.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(saved, dict) and saved_run(saved) in finished:
            index.with_suffix(".pt").unlink(missing_ok=True)
            index.unlink(missing_ok=True)
    with folder_lock(Path(results_dir), exclusive=True):  # never between a writer's mkdir and its rename
        try:
            folder.rmdir()  # only when empty: another driver's checkpoint keeps it
        except OSError:
            pass
