"""Running a grid's runs on a Ray cluster (``run --executor ray``).

Each run is one Ray task that claims, trains and evaluates it (``RunJob``)
and returns its outcome; the driver writes every record
atomically as its task finishes, so workers need no shared file system (with
one, claims and checkpoints are shared too). A task whose worker process dies
is retried by Ray (``RAY_RETRIES``); the retry takes over the dead worker's
claim and resumes from its checkpoint when the results folder is shared.
Tasks ask for one CPU each, and a share of a GPU when the cluster has GPUs,
so that Ray packs several small runs per GPU. Ray is an optional
dependency, imported only when this executor runs.

Ray starts its worker processes at niceness 15, below every ordinary
process: on a machine with other work, a run then waits minutes for its
share of a core (measured at load 4: importing torch in a worker took 134 s,
against 4.6 s at the driver's niceness). The runs are the work here, so a Ray
instance lengthbench starts (``init_local_ray``) gives its workers the
driver's priority; a cluster started with ``ray start`` keeps its own
setting (``RAY_worker_niceness=0`` in that command's environment does the same).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import torch

from lengthbench.benchmark.config import RunConfig
from lengthbench.benchmark.executors import ExecutorContext, Outcome, RunJob
from lengthbench.core.errors import InputError, install_hint
from lengthbench.models.plugins import WORKER, load_plugins

RAY_RETRIES = 3  # retries of a task whose worker process died
GPU_SHARE = 0.25  # of a GPU per run: four small runs share one device


def require_ray():
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray  # optional dependency: the [ray] extra
    except ImportError:
        raise InputError(f"--executor ray needs Ray, which is not installed: {install_hint('ray')}") from None
    return ray


def init_local_ray(ray, **options) -> None:
    """Start a local Ray instance whose workers run at the driver's niceness
    (unless ``RAY_worker_niceness`` says otherwise); ``options`` go to ``ray.init``."""
    before = os.environ.get("RAY_worker_niceness")
    os.environ.setdefault("RAY_worker_niceness", "0")  # read when Ray's processes start
    try:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, **options)
    finally:
        if before is None:
            del os.environ["RAY_worker_niceness"]


def _run_task(job: RunJob, config: RunConfig) -> Outcome:
    torch.set_num_threads(1)
    WORKER["ray"] = True  # the driver has named a broken plugin already
    load_plugins(job.plugins)
    job.folder.create()  # a node without the shared folder keeps claims locally
    return job(config)


class RayExecutor(ExecutorContext):
    """Runs as Ray tasks on the cluster at ``address``; without one, on a
    local Ray instance it starts (and stops when done)."""

    def __init__(self, job: RunJob, *, address: str | None = None, **_):
        self.ray, self.job, self.refs = require_ray(), job, {}
        self.started = not self.ray.is_initialized()
        if self.started and address is None:
            init_local_ray(self.ray)
        elif self.started:
            self.ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        gpus = GPU_SHARE if self.ray.cluster_resources().get("GPU", 0) > 0 else 0
        self.task = self.ray.remote(num_cpus=1, num_gpus=gpus, max_retries=RAY_RETRIES)(_run_task)

    def submit(self, configs: list[RunConfig]) -> None:
        self.refs |= {self.task.remote(self.job, config): config for config in configs}

    def completed(self) -> Iterator[Outcome]:
        pending = list(self.refs)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    yield self.ray.get(ref)
                except Exception as err:  # noqa: BLE001  (retries spent: record it, go on)
                    yield self.job.failed(self.refs[ref], err)
                del self.refs[ref]

    def cancel(self) -> None:
        for ref in self.refs:
            self.ray.cancel(ref, force=True)
        self.close()

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
