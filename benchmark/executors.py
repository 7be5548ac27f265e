"""Where a grid's runs go: this process or a local process pool
(``local``); ``ray_executor`` adds a Ray cluster.

Every executor has the same small interface (``Executor``): ``submit`` the
runs, iterate ``completed`` for each run's ``Outcome`` as it finishes (its
record, or none when another process holds it), ``cancel`` on an
interrupt; used as a context manager it cancels when the block raises and
releases its resources when it ends. Each run is a ``RunJob``: claim,
train, evaluate (``runner.run_claimed``). A run whose worker dies yields an
error record, never an exception, so one bad run never stops a grid.

Interrupts: pool workers ignore SIGINT (the driver alone decides), and
``cancel`` kills them; they also exit on their own when the driver dies
(``kill -9``), so no orphan keeps training.
"""

from __future__ import annotations

import ast
import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from tqdm.auto import tqdm

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.records import RunRecord
from lengthbench.benchmark.runner import error_record, run_claimed
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.models.plugins import load_plugins

log = logging.getLogger(__name__)
PARENT_POLL_S = 0.5  # how often a worker checks that the driver is alive


@dataclass(frozen=True)
class Outcome:
    """One run's outcome: its record when trained here, ``None`` when
    another process holds the run (or has just finished it)."""

    config: RunConfig
    record: RunRecord | None


@dataclass(frozen=True)
class RunJob:
    """What every run of a grid goes through (picklable: workers receive it)."""

    folder: ResultsFolder
    force: bool
    checkpoint_every: float
    plugins: tuple = ()  # ``PluginFile``s a worker loads before its first run
    save_predictions: bool = False
    live_log: str | None = None  # a kind of ``benchmark.live_log``: training written as it runs
    save_models: bool = False  # each trained transformers model saved with its tokenizer (models.saved_model)

    def __call__(self, config: RunConfig, progress_factory=None) -> Outcome:
        return Outcome(config, run_claimed(config, self.folder, self.force, progress_factory,
                                           self.checkpoint_every, self.save_predictions, self.live_log,
                                           self.save_models))

    def failed(self, config: RunConfig, err: BaseException) -> Outcome:
        """The outcome of a run whose worker died: an error record."""
        return Outcome(config, error_record(config, err))


class Executor(Protocol):
    def submit(self, configs: list[RunConfig]) -> None: ...

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
    """One run after another in this process, each with its progress bar."""

    def __init__(self, job: RunJob, progress: bool):
        self.job, self.progress, self.configs = job, progress, []

    def submit(self, configs: list[RunConfig]) -> None:
        self.configs += configs

    def completed(self) -> Iterator[Outcome]:
        while self.configs:
            yield self.job(self.configs.pop(0), _bar_factory(1) if self.progress else None)

    def cancel(self) -> None:
        self.configs = []

    def close(self) -> None:
        self.configs = []


PROGRESS_EVERY_S = 0.5  # how often a worker posts its run's steps to the driver


_progress_queue = None  # in a pool worker with progress shown: the queue to the driver (``_worker_init``)


@dataclass(frozen=True)
class QueueProgress:
    """A progress-bar factory for pool workers (picklable, it holds nothing):
    each bar posts its run's steps to the driver through the worker's queue at
    most every ``PROGRESS_EVERY_S``, and the driver draws them
    (``PoolExecutor``). A lost queue never costs a run: the bar goes quiet."""

    def __call__(self, total: int, desc: str) -> "_QueuedBar":
        return _QueuedBar(_progress_queue, desc, total)


class _QueuedBar:
    def __init__(self, queue, desc: str, total: int):
        self.queue, self.desc, self.total, self.done, self.posted = queue, desc, total, 0, 0.0
        self._post(force=True)

    def _post(self, force: bool = False, closed: bool = False) -> None:
        now = time.monotonic()
        if self.queue is None or not (force or closed or now - self.posted >= PROGRESS_EVERY_S):
            return
        self.posted = now
        try:
            self.queue.put((os.getpid(), self.desc, self.done, self.total, closed))
        except Exception:  # noqa: BLE001  (the driver or its queue is gone: draw nothing more)
            self.queue = None

    def update(self, n: int = 1) -> None:
        self.done += n
        self._post()

    def set_postfix(self, **_) -> None:
        pass

    def close(self) -> None:
        self._post(closed=True)


def _bar_factory(position: int):
    def make(total, desc):
        return tqdm(total=total, desc=desc, leave=False, position=position, dynamic_ncols=True)
    return make


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_init(threads: int, plugins: tuple, parent: int, progress_queue=None) -> None:
    global _progress_queue
    _progress_queue = progress_queue
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
    """``workers`` spawned processes, each with its share of the CPU threads;
    with ``progress``, one bar per worker of the steps of the run it trains."""

    def __init__(self, job: RunJob, workers: int, progress: bool = False):
        threads = max(1, torch.get_num_threads() // workers)
        self.job, self.futures, self.bars = job, {}, {}
        self.before = set(multiprocessing.active_children())
        context = multiprocessing.get_context("spawn")
        self.queue = context.Queue() if progress else None  # the workers' steps, drawn here (``_draw``)
        self.progress = QueueProgress() if progress else None
        self.pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init,
                                        initargs=(threads, tuple(job.plugins), os.getpid(), self.queue))

    def submit(self, configs: list[RunConfig]) -> None:
        with _SigintIgnored():
            self.futures |= {self.pool.submit(self.job, config, self.progress): config for config in configs}

    def completed(self) -> Iterator[Outcome]:
        pending = set(self.futures)
        while pending:
            done, pending = wait(pending, timeout=PROGRESS_EVERY_S if self.queue is not None else None,
                                 return_when=FIRST_COMPLETED)
            self._draw()
            for future in done:
                try:
                    yield future.result()
                except Exception as err:  # noqa: BLE001  (a worker died: record it, go on)
                    if isinstance(err, BrokenProcessPool) and getattr(sys.modules["__main__"], "__file__", None):
                        err = BrokenProcessPool(f"{err} {UNGUARDED_SCRIPT_HINT}")
                    yield self.job.failed(self.futures[future], err)

    def _draw(self) -> None:
        """Show what the workers posted: one bar per worker, below the grid's."""
        if self.queue is None:
            return
        try:
            while True:
                pid, desc, done, total, closed = self.queue.get_nowait()
                bar = self.bars.get(pid)
                if bar is None or bar.desc != desc:
                    if bar is not None:
                        bar.close()
                    bar = self.bars[pid] = tqdm(total=total, desc=desc, leave=False, position=len(self.bars) + 1,
                                                dynamic_ncols=True)
                bar.update(done - bar.n)
                if closed:
                    bar.close()
                    del self.bars[pid]
        except queue.Empty:
            pass
        except (OSError, EOFError, ValueError):  # the queue is closed (shutting down)
            self.queue = None

    def _stop_progress(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars = {}
        if self.queue is not None:
            self.queue.close()
            self.queue.cancel_join_thread()  # what a dead worker left in it is not waited for
            self.queue = None

    def cancel(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._stop_progress()
        for process in set(multiprocessing.active_children()) - self.before:
            process.kill()
            process.join(PARENT_POLL_S * 4)

    def close(self) -> None:
        self.pool.shutdown()
        self._stop_progress()


# What starts a grid when a script calls it: ``lengthbench.run``, ``lengthbench.submit``, ``cli.main``.
GRID_CALLS = ("run", "submit", "main")


def unguarded_script() -> Path | None:
    """The main script, when it starts a grid at its top level (outside
    ``if __name__ == "__main__":``): a worker process, which imports it, would
    start the grid again and die. None for a guarded script, an interactive
    session or a notebook (no file to import)."""
    path = getattr(sys.modules["__main__"], "__file__", None)
    if not path or not str(path).endswith(".py") or Path(path).name == "__main__.py":
        return None  # a package's __main__.py (python -m) is never run again in a worker
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.If) and "__main__" in ast.unparse(statement.test):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in GRID_CALLS:
                    return Path(path)
    return None


def local_executor(job: RunJob, *, workers: int, n_runs: int, progress: bool, address: str | None = None):
    """This machine: in this process for one worker (or one run), else a
    pool of ``min(workers, n_runs)`` processes. A script that starts the grid
    at its top level runs it in this process (worker processes would import
    the script and start it again), with a warning that says how to get the pool."""
    if workers > 1 and n_runs > 1 and (script := unguarded_script()) is not None:
        log.warning("%s starts the grid at its top level, so worker processes (which import it) cannot start: "
                    "running the %d runs in this process; put the call under `if __name__ == \"__main__\":` to "
                    "use %d workers", script, n_runs, workers)
        workers = 1
    if workers <= 1 or n_runs <= 1:
        return SerialExecutor(job, progress)
    return PoolExecutor(job, min(workers, n_runs), progress)
