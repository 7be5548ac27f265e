"""Training you can watch as it runs: ``run --log tensorboard`` writes each
run's loss and learning rate at every step, its fit checks, and at the end
its test-band scores, to ``<results>/logs/<run id>/`` (``tensorboard
--logdir <results>/logs``). Nothing of it enters a record or changes a
result; without ``--log`` nothing is written. TensorBoard's writer needs the
``tensorboard`` package (the ``logs`` extra): a grid asked to log without it
is refused before any run starts."""

from __future__ import annotations

from pathlib import Path

from lengthbench.core.errors import InputError

LOG_KINDS = ("tensorboard",)
FLUSH_SECONDS = 5  # how stale the file a watcher reads may be


def check_live_log(kind: str | None) -> None:
    """Refuse, in one line, a log kind that is unknown or cannot be written here."""
    if kind is None:
        return
    if kind not in LOG_KINDS:
        raise InputError(f"unknown --log {kind!r}; valid choices: {', '.join(LOG_KINDS)}")
    try:
        import tensorboard  # noqa: F401  (torch's writer needs it)
    except ImportError:
        raise InputError("--log tensorboard needs the tensorboard package: pip install tensorboard "
                         "(or lengthbench[logs])") from None


class TensorBoardLog:
    """One run's event file: scalars under ``train/``, ``fit/`` and ``test/``."""

    def __init__(self, folder: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(folder), flush_secs=FLUSH_SECONDS)

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


def open_live_log(kind: str | None, results: Path, run_id: str) -> TensorBoardLog | None:
    """The run's live log under ``results/logs/run_id``, or None without ``--log``."""
    return None if kind is None else TensorBoardLog(Path(results) / "logs" / run_id)
