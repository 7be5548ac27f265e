"""``python -m lengthbench.benchmark.tools.perf_against COMMIT``: this checkout's
trainer speed against another commit's, measured in one run on this machine.

It unpacks ``git archive COMMIT`` into a temporary folder and runs
``lengthbench perf`` of each side in a fresh process, alternating (A B A B,
``--rounds`` times), with that side's code first on ``PYTHONPATH``; each
side's solo-trainer run-steps/s is read from its JSON report (``solo``, or
``group_1`` in reports of the stacked trainer), and the medians and their
ratio are printed with the machine's load before and after. Nothing in the
repository is written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def solo_steps_per_s(report: dict, config: str) -> float:
    """The solo trainer's run-steps/s of ``config`` in a perf report, old layout or new."""
    entry = report["configs"][config]
    return float((entry.get("solo") or entry["group_1"])["run_steps_per_s"])


class Refused(Exception):
    """Bad input or a side that could not be measured: one line, exit 2."""


def unpack(commit: str, into: Path) -> Path:
    """``git archive COMMIT`` unpacked under ``into`` (links kept, so its ``lengthbench/`` imports its own folders)."""
    known = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                           capture_output=True, text=True)
    if known.returncode != 0:
        raise Refused(f"{commit!r} is not a commit of this repository; give a commit, e.g. d900fb1 or HEAD~3")
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), commit], check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="tar")
    return tree


def measure_side(tree: Path, configs: list[str], steps: int, out: Path) -> dict:
    """One ``lengthbench perf`` of the code in ``tree`` (only the solo trainer where the old CLI can say so)."""
    help_text = subprocess.run([sys.executable, "-m", "lengthbench", "perf", "--help"], cwd=tree, text=True,
                               capture_output=True, env=_env(tree)).stdout
    command = [sys.executable, "-m", "lengthbench", "perf", "--configs", ",".join(configs), "--steps", str(steps),
               "--out", str(out)]
    if "--groups" in help_text:
        command += ["--groups", "1"]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=_env(tree))
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Refused(f"`lengthbench perf` of {tree} failed (exit {done.returncode}): {last}")
    return json.loads(out.read_text())


def _env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)


def main(argv=None) -> int:
    try:
        return measure(argv)
    except Refused as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return 2


def measure(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commit", help="the baseline commit (e.g. d900fb1)")
    parser.add_argument("--configs", default="quick", help="perf configurations, comma-separated (default quick)")
    parser.add_argument("--rounds", type=_positive, default=4, help="A B rounds (default 4)")
    parser.add_argument("--steps", type=_positive, default=60, help="timed trainer steps per measurement (default 60)")
    args = parser.parse_args(argv)
    configs = args.configs.split(",")
    from lengthbench.benchmark.tools.perf import perf_configs  # torch: only once the arguments parsed

    unknown = [c for c in configs if c not in perf_configs()]
    if unknown:
        raise Refused(f"--configs {','.join(unknown)}: no such perf configuration; valid: {', '.join(perf_configs())}")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        sides = {"baseline": unpack(args.commit, scratch), "this checkout": REPO}
        rates: dict[str, dict[str, list[float]]] = {side: {c: [] for c in configs} for side in sides}
        for round_ in range(args.rounds):
            for side, tree in sides.items():
                report = measure_side(tree, configs, args.steps, scratch / f"{round_}-{len(rates[side])}.json")
                for config in configs:
                    rates[side][config].append(solo_steps_per_s(report, config))
                print(f"round {round_ + 1} {side}: " + ", ".join(
                    f"{c} {rates[side][c][-1]:.1f}" for c in configs), flush=True)
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; "
          f"{args.rounds} rounds A B, medians of solo-trainer run-steps/s:")
    for config in configs:
        base, now = (statistics.median(rates[side][config]) for side in sides)
        print(f"  {config}: {args.commit} {base:.1f}, this checkout {now:.1f}: {now / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
