"""Running a grid's groups on a Ray cluster (``run --executor ray``).

Each group of runs is one Ray task that claims, trains and evaluates it
(``grid.run_claimed``) and returns its records; the driver writes every
record atomically as its task finishes, so workers need no shared file
system (with one, claims and checkpoints are shared too). A task whose
worker process dies is retried by Ray (``RAY_RETRIES``); the retry takes over
the dead worker's claim and resumes from its checkpoint when the results
folder is shared. Tasks ask for one CPU each, and a share of a GPU when the
cluster has GPUs, so that Ray packs several small groups per GPU.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lengthbench.benchmark.config import RunConfig
from lengthbench.tasks.base import InputError

RAY_RETRIES = 3  # retries of a task whose worker process died
GPU_SHARE = 0.25  # of a GPU per group: four small groups share one device


def require_ray():
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError('--executor ray needs Ray, which is not installed: pip install -e ".[ray]"') from None
    return ray


def _group_task(group: list[RunConfig], results_dir: str, force: bool, checkpoint_every: float,
                plugins: tuple) -> tuple[list[dict], list[str]]:
    import torch

    from lengthbench.benchmark.grid import run_claimed
    from lengthbench.models.plugins import load_plugins

    torch.set_num_threads(1)
    load_plugins(plugins)
    Path(results_dir).mkdir(parents=True, exist_ok=True)  # a node without the shared folder keeps claims locally
    return run_claimed(group, Path(results_dir), force, checkpoint_every=checkpoint_every)


def run_on_ray(groups: list[list[RunConfig]], results_dir: Path, force: bool, checkpoint_every: float,
               plugins: tuple, address: str | None, finish, leave, error_record) -> None:
    """Run ``groups`` as Ray tasks; ``finish`` each record, ``leave`` the ids
    of runs another driver holds. Starts a local cluster when ``address`` is
    None and none is connected, and stops what it started."""
    ray = require_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        gpus = GPU_SHARE if ray.cluster_resources().get("GPU", 0) > 0 else 0
        task = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=RAY_RETRIES)(_group_task)
        refs = {task.remote(g, str(results_dir), force, checkpoint_every, tuple(plugins)): g for g in groups}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        records, elsewhere = ray.get(ref)
                    except Exception as err:  # noqa: BLE001  (retries spent: record it, go on)
                        records, elsewhere = [error_record(c, err) for c in refs[ref]], []
                    for record in records:
                        finish(record)
                    leave(elsewhere)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()
