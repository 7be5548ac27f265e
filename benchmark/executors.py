"""Where a grid's groups run: in this process or in a local process pool
(``local``); ``ray_executor`` adds a Ray cluster.

Every executor has the same small interface (``Executor``): ``submit`` the
groups, iterate ``completed`` for each group's outcome as it finishes (its
records and the ids of runs another process holds), ``cancel`` on an
interrupt; used as a context manager it cancels when the block raises and
releases its resources when it ends. Each group runs ``GroupJob``: claim,
train, evaluate (``runner.run_claimed``). A group whose worker dies yields
error records, never an exception, so one bad group never stops a grid.

Interrupts: pool workers ignore SIGINT (the driver alone decides), and
``cancel`` kills them; they also exit on their own when the driver dies
(``kill -9``), so no orphan keeps training.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Protocol

import torch
from tqdm.auto import tqdm

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.runner import error_record, run_claimed
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.models.plugins import load_plugins

PARENT_POLL_S = 0.5  # how often a worker checks that the driver is alive
Outcome = tuple[list[RunRecord], list[str]]  # a group's records, and the ids of runs another process holds


@dataclass(frozen=True)
class GroupJob:
    """What every group of a grid runs (picklable: workers receive it)."""

    folder: ResultsFolder
    force: bool
    checkpoint_every: float
    plugins: tuple = ()  # ``PluginFile``s a worker loads before its first group
    save_predictions: bool = False

    def __call__(self, group: list[RunConfig], progress_factory=None) -> Outcome:
        return run_claimed(group, self.folder, self.force, progress_factory, self.checkpoint_every,
                           self.save_predictions)

    def failed(self, group: list[RunConfig], err: BaseException) -> Outcome:
        """The outcome of a group whose worker died: an error record per run."""
        return [error_record(config, err) for config in group], []


class Executor(Protocol):
    def submit(self, groups: list[list[RunConfig]]) -> None: ...

    def completed(self) -> Iterator[Outcome]: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...


class ExecutorContext:
    """``with executor:`` cancels it if the block raises (Ctrl-C included), else closes it."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self.cancel()


class SerialExecutor(ExecutorContext):
    """One group after another in this process, each with its progress bar."""

    def __init__(self, job: GroupJob, progress: bool):
        self.job, self.progress, self.groups = job, progress, []

    def submit(self, groups: list[list[RunConfig]]) -> None:
        self.groups += groups

    def completed(self) -> Iterator[Outcome]:
        while self.groups:
            yield self.job(self.groups.pop(0), _bar_factory(1) if self.progress else None)

    def cancel(self) -> None:
        self.groups = []

    def close(self) -> None:
        self.groups = []


def _bar_factory(position: int):
    def make(total, desc):
        return tqdm(total=total, desc=desc, leave=False, position=position, dynamic_ncols=True)
    return make


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_init(threads: int, plugins: tuple, parent: int) -> None:
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    torch.set_num_threads(threads)
    load_plugins(plugins)  # re-register third-party encodings in the child


class _SigintIgnored:
    """Ignore SIGINT while worker processes start: they inherit the ignored
    disposition (Python keeps it, instead of raising KeyboardInterrupt), so
    a terminal's Ctrl-C reaches the driver alone, even during their import."""

    def __enter__(self):
        self.active = threading.current_thread() is threading.main_thread()
        if self.active:
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc):
        if self.active:
            signal.signal(signal.SIGINT, self.previous)


# Worker processes start by importing the main script; one that starts a grid at its top level
# (no ``if __name__ == "__main__":``) makes every worker die at start.
UNGUARDED_SCRIPT_HINT = ("If the grid was started from a Python script, worker processes import that script: "
                         "call lengthbench.run under `if __name__ == \"__main__\":`, or pass workers=1.")


class PoolExecutor(ExecutorContext):
    """``workers`` spawned processes, each with its share of the CPU threads."""

    def __init__(self, job: GroupJob, workers: int):
        threads = max(1, torch.get_num_threads() // workers)
        self.job, self.futures = job, {}
        self.before = set(multiprocessing.active_children())
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_worker_init, initargs=(threads, tuple(job.plugins), os.getpid()))

    def submit(self, groups: list[list[RunConfig]]) -> None:
        with _SigintIgnored():
            self.futures |= {self.pool.submit(self.job, group): group for group in groups}

    def completed(self) -> Iterator[Outcome]:
        for future in as_completed(self.futures):
            try:
                yield future.result()
            except Exception as err:  # noqa: BLE001  (a worker died: record it, go on)
                if isinstance(err, BrokenProcessPool) and getattr(sys.modules["__main__"], "__file__", None):
                    err = BrokenProcessPool(f"{err} {UNGUARDED_SCRIPT_HINT}")
                yield self.job.failed(self.futures[future], err)

    def cancel(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in set(multiprocessing.active_children()) - self.before:
            process.kill()
            process.join(PARENT_POLL_S * 4)

    def close(self) -> None:
        self.pool.shutdown()


def local_executor(job: GroupJob, *, workers: int, n_groups: int, progress: bool, address: str | None = None):
    """This machine: in this process for one worker (or one group), else a
    pool of ``min(workers, n_groups)`` processes."""
    if workers <= 1 or n_groups <= 1:
        return SerialExecutor(job, progress)
    return PoolExecutor(job, min(workers, n_groups))
