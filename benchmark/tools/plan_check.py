"""How well ``run --plan`` predicts finished runs on this machine.

``python -m lengthbench.benchmark.tools.plan_check --results DIR [--tasks a,b] [--workers N]``
calibrates every training shape of the finished records in DIR exactly as
``--plan`` does (same steps timed, same threads per worker process) and sets
each record's prediction (the calibrated step time x the steps the run
actually took, plus its evaluation) beside its measured ``wall_time_s``.
The ratio measured / predicted is how far ``--plan`` is off here: above 1
when the records' machine was slower or busier than this one is now. The
records' CPU kernel level and this machine's load are printed, since a
record made on another machine or under other load is not comparable.
Nothing is trained or written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from lengthbench.benchmark.grid import resolve_workers
from lengthbench.benchmark.plan import calibrate, training_shapes, worker_threads
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.core.errors import InputError
from lengthbench.tasks import get_task


def predicted_seconds(train_seconds: float, eval_seconds: float, steps: int, steps_done: int) -> float:
    """A run's predicted time: its training cut at the steps it took, plus evaluation."""
    return train_seconds * steps_done / steps + eval_seconds


def measure(results: Path, workers: int, tasks: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per training shape: its records, their kernel levels, and the
    summed measured and predicted seconds."""
    for task in tasks:
        get_task(task)  # an unknown name is refused with the valid ones
    records = [r for r in ResultsFolder(results).records() if r.status == "ok" and r.training and r.wall_time_s is not None
               and (not tasks or r.task in tasks)]
    if not records:
        raise InputError(f"--results {str(results)!r} holds no finished trained record"
                         + (f" of tasks {', '.join(tasks)}" if tasks else "") + "; give a results folder of `run`")
    by_id = {r.run_id: r for r in records}
    rows = []
    with worker_threads(workers, len(records)):
        for key, configs in training_shapes([r.config for r in records]).items():
            train_seconds, eval_seconds = calibrate(configs[0])
            shape = [by_id[c.run_id] for c in configs]
            rows.append({
                "task": key[0], "model": key[-1], "records": len(shape),
                "kernels": ", ".join(sorted(Counter(r.host.get("cpu_capability") or "unknown" for r in shape))),
                "measured_s": sum(r.wall_time_s for r in shape),
                "predicted_s": sum(predicted_seconds(train_seconds, eval_seconds, r.config.steps,
                                                     r.training["steps_done"]) for r in shape),
            })
    return pd.DataFrame(rows)


def report(frame: pd.DataFrame, seconds: float) -> str:
    frame = frame.assign(ratio=frame.measured_s / frame.predicted_s).sort_values(["task", "model"])
    lines = ["| task | model | records | their CPU kernels | measured s/run | predicted s/run | measured / predicted |",
             "|---|---|---|---|---|---|---|"]
    for row in frame.itertuples():
        lines.append(f"| {row.task} | {row.model} | {row.records} | {row.kernels} | "
                     f"{row.measured_s / row.records:.1f} | {row.predicted_s / row.records:.1f} | {row.ratio:.2f} |")
    total = frame.measured_s.sum() / frame.predicted_s.sum()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines += ["", f"all {frame.records.sum()} runs: measured {frame.measured_s.sum() / 3600:.2f} h, "
              f"predicted {frame.predicted_s.sum() / 3600:.2f} h, measured / predicted {total:.2f} "
              f"(median over shapes {np.median(frame.ratio):.2f}); calibrated in {seconds:.0f} s "
              f"at load average {load}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="a results folder of `lengthbench run`")
    parser.add_argument("--tasks", default="", help="comma-separated tasks to check (default: every task)")
    parser.add_argument("--workers", type=int, default=0,
                        help="worker processes the records ran with, which sets the threads (default: as `run`)")
    args = parser.parse_args(argv)
    try:
        start = time.perf_counter()
        frame = measure(args.results, resolve_workers(args.workers),
                        tuple(t for t in args.tasks.split(",") if t))
    except InputError as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return 2
    print(report(frame, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
