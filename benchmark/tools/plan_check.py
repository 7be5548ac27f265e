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

``--sample PRESET --tasks a,b --out DIR`` is the check on a quiet machine:
one run per kind of model ``--plan`` calibrates (a family; a transformer
with and without an attention bias) on each of the tasks, the preset's first
seed; ``--plan`` prices them (and the whole grid), then they run at once
into ``DIR/records`` and ``DIR/plan-check.json`` sets the plan beside the
measured time, with the load before and after. Run it with nothing else on
the machine; put ``DIR`` in a reference folder as ``plan-check/`` and its
README states the result (``leaderboard.reference_notes``).
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

from lengthbench.benchmark.device import hardware_description
from lengthbench.benchmark.files import ensure_output_dir, write_json
from lengthbench.benchmark.grid import resolve_workers, run_grid
from lengthbench.benchmark.plan import (
    calibrate,
    estimate,
    kind_of,
    planned_seconds,
    training_shapes,
    worker_threads,
)
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.benchmark.version import code_version
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


def sample_grid(preset, tasks: tuple[str, ...]):
    """``preset`` narrowed to ``tasks``, its first seed and one method per kind of model (the first of each)."""
    chosen: dict[str, tuple[str, str]] = {}
    for family, encoding in preset.methods():
        kind = kind_of(preset.run_config(tasks[0], encoding, preset.seeds[0], family))
        if kind is not None:
            chosen.setdefault(kind, (family, encoding))
    families = list(dict.fromkeys(f for f, _ in chosen.values()))
    encodings = list(dict.fromkeys(e for _, e in chosen.values() if e)) or None
    return preset.with_grid(tasks=list(tasks), encodings=encodings, families=families, seeds=[preset.seeds[0]])


def _priced(preset, results, workers: int) -> dict:
    serial, wall, _ = planned_seconds(estimate(preset, results, workers, force=True)[0], workers)
    return {"run_time_one_worker_s": round(serial, 3), "wall_time_s": round(wall, 3),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def quiet_sample(preset, tasks: tuple[str, ...], out: Path, workers: int) -> dict:
    """Price ``sample_grid``'s runs and the whole grid with ``--plan``'s
    calibration, run the sample at once into ``out/records``, and write
    ``out/plan-check.json``; returns what it wrote."""
    sample = sample_grid(preset, tasks)
    folder = ensure_output_dir(out, "--out")
    check = {"what": f"one run per kind of model on {', '.join(tasks)}, seed {preset.seeds[0]}", "workers": workers,
             "whole_grid": _priced(preset, folder / "records", workers),
             "plan": _priced(sample, folder / "records", workers)}
    before, start = os.getloadavg()[0], time.perf_counter()
    records = run_grid(sample, folder / "records", force=True, workers=workers, progress=False)
    check["rerun"] = {"wall_time_s": round(time.perf_counter() - start, 1), "runs": len(records),
                      "load_average_1min_before": round(before, 2),
                      "load_average_1min_after": round(os.getloadavg()[0], 2),
                      "code_version": code_version(), "hardware": hardware_description()}
    write_json(folder / "plan-check.json", check)
    return check


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
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--results", type=Path, help="a results folder of `lengthbench run`")
    what.add_argument("--sample", metavar="PRESET", help="rerun a sample of PRESET's runs (one per kind of model on "
                                                         "--tasks) beside their plan, into --out")
    parser.add_argument("--out", type=Path, help="with --sample: the folder for plan-check.json and the records")
    parser.add_argument("--tasks", default="", help="comma-separated tasks to check (default: every task)")
    parser.add_argument("--workers", type=int, default=0,
                        help="worker processes the records ran with, which sets the threads (default: as `run`)")
    args = parser.parse_args(argv)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    try:
        if args.sample is not None:
            from lengthbench.benchmark.presets import get_preset

            if args.out is None or not tasks:
                raise InputError("--sample PRESET needs --tasks (the tasks to sample) and --out DIR")
            check = quiet_sample(get_preset(args.sample), tasks, args.out, resolve_workers(args.workers))
            print(f"plan {check['plan']['run_time_one_worker_s'] / 60:.1f} min of run time, measured "
                  f"{check['rerun']['wall_time_s'] / 60:.1f} min wall; {args.out / 'plan-check.json'}")
            return 0
        start = time.perf_counter()
        frame = measure(args.results, resolve_workers(args.workers), tasks)
    except InputError as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return 2
    print(report(frame, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
