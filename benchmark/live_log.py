"""Training you can watch as it runs: ``run --log tensorboard`` (or
``--log wandb``) writes each run's loss and learning rate at every step, its
fit checks, and at the end its test-band scores, under
``<results>/logs/<run id>/``: TensorBoard event files (``tensorboard
--logdir <results>/logs``), or an offline Weights & Biases run
(``wandb/offline-run-*``; ``wandb sync`` uploads it when you choose: nothing
goes over the network while training). Nothing of it enters a record or
changes a result; without ``--log`` nothing is written. Each needs its
package (``tensorboard`` for torch's writer, ``wandb``; the ``logs`` extra):
a grid asked to log without it is refused before any run starts."""

from __future__ import annotations

import importlib
from pathlib import Path

from lengthbench.core.errors import InputError, install_hint

LOG_KINDS = ("tensorboard", "wandb")
PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb"}  # what each kind's writer imports
FLUSH_SECONDS = 5  # how stale the file a watcher reads may be
WANDB_START_SECONDS = 300  # W&B starts a service process per run; on a busy machine that takes longer than its 90 s


def check_live_log(kind: str | None, results: Path | None = None) -> None:
    """Refuse, in one line, a log kind that is unknown or cannot be written here (``results/logs`` a file)."""
    if kind is None:
        return
    logs = None if results is None else Path(results) / "logs"
    if logs is not None and logs.exists() and not logs.is_dir():
        raise InputError(f"--log {kind} writes under {str(logs)!r}, which is a file, not a folder; move it aside "
                         "or give another --results")
    if kind not in LOG_KINDS:
        raise InputError(f"unknown --log {kind!r}; valid choices: {', '.join(LOG_KINDS)}")
    try:
        importlib.import_module(PACKAGES[kind])
    except ImportError:
        raise InputError(f"--log {kind} needs the {PACKAGES[kind]} package: pip install {PACKAGES[kind]}, "
                         f"or the logs extra: {install_hint('logs')}") from None


class TensorBoardLog:
    """One run's event file: scalars under ``train/``, ``fit/`` and ``test/``."""

    def __init__(self, folder: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.folder = folder
        self.writer = SummaryWriter(log_dir=str(folder), flush_secs=FLUSH_SECONDS)

    def resume(self, step: int) -> None:
        """The run resumed from its checkpoint after ``step``: what an interrupted attempt logged past it is
        purged (TensorBoard hides events at or after a writer's purge step), so each step is read once."""
        from torch.utils.tensorboard import SummaryWriter

        self.writer.close()
        self.writer = SummaryWriter(log_dir=str(self.folder), flush_secs=FLUSH_SECONDS, purge_step=step + 1)

    def step(self, step: int, loss: float, lr: float) -> None:
        self.writer.add_scalar("train/loss", loss, step)
        self.writer.add_scalar("train/learning_rate", lr, step)

    def fit_check(self, step: int, score: float) -> None:
        self.writer.add_scalar("fit/held_out_exact_match", score, step)

    def finished(self, step: int, summary: dict) -> None:
        for key, value in summary.items():
            if isinstance(value, (int, float)) and key.startswith(("ood_", "id_", "val_")):
                self.writer.add_scalar(f"test/{key}", value, step)

    def close(self) -> None:
        self.writer.close()


class WandbLog:
    """One run as an offline Weights & Biases run: the same scalars, at the same steps."""

    def __init__(self, folder: Path, run_id: str):
        import wandb

        folder.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(mode="offline", dir=str(folder), project="lengthbench", name=run_id,
                              config={"run_id": run_id}, reinit="create_new",
                              settings=wandb.Settings(silent=True, console="off", x_disable_stats=True,
                                                      init_timeout=WANDB_START_SECONDS))

    def resume(self, step: int) -> None:
        """Nothing to purge: each attempt of a run is an offline W&B run of its own."""

    def step(self, step: int, loss: float, lr: float) -> None:
        self.run.log({"train/loss": loss, "train/learning_rate": lr}, step=step)

    def fit_check(self, step: int, score: float) -> None:
        self.run.log({"fit/held_out_exact_match": score}, step=step)

    def finished(self, step: int, summary: dict) -> None:
        self.run.log({f"test/{key}": value for key, value in summary.items()
                      if isinstance(value, (int, float)) and key.startswith(("ood_", "id_", "val_"))}, step=step)

    def close(self) -> None:
        self.run.finish()


def open_live_log(kind: str | None, results: Path, run_id: str) -> TensorBoardLog | WandbLog | None:
    """The run's live log under ``results/logs/run_id``, or None without ``--log``."""
    if kind is None:
        return None
    folder = Path(results) / "logs" / run_id
    return TensorBoardLog(folder) if kind == "tensorboard" else WandbLog(folder, run_id)
