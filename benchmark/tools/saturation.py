"""Do randomized relative biases saturate when positions are spread too far?

``python -m lengthbench.benchmark.tools.saturation [--results DIR]`` trains, at the ``suite``
budget, the distance-bias encodings (T5 buckets, KERPLE log and power) and
their randomized variants with positions drawn from [0, 64) (the suite's
choice, 4x its longest test length) and from [0, 2048) (the
randomized-PE paper's example value, made for test lengths near 500), then
prints, per pair that should differ, on how many tasks the two give
identical per-length token accuracy, and every cell's token accuracy on the
*validation* band: the range is a choice, so it is judged there, never on
the reported test band. It writes ``report.txt``, ``README.md`` and
``provenance.json`` beside the records.

Why it can saturate: with ~30 tokens spread over 2048 positions, neighbours
sit ~70 positions apart, past T5's largest exact bucket (and mostly in its
last one, >= 128), and a KERPLE bias of -r1*log(1 + r2*d) at such d drowns
the content logits, so attention falls on the current token whatever the
kernel's shape. Records are reused between invocations (``run`` caching).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import write_text
from lengthbench.benchmark.grid import resolve_workers, run_grid
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.provenance import write_provenance
from lengthbench.benchmark.records import length_frame
from lengthbench.benchmark.store import ResultsFolder
from lengthbench.tasks.cells import transformer_method

TASKS = ("parity_check", "even_pairs", "reverse_string", "copy", "stack_manipulation", "bucket_sort")
BASES = ("t5", "kerple-log", "kerple-power")
PAIRS = (("randomized-kerple-log", "randomized-kerple-power"), ("randomized-t5", "t5"),
         ("randomized-kerple-log", "kerple-log"), ("randomized-kerple-power", "kerple-power"))
RANGES = (64, 2048)


def measure(results: Path, workers: int = 0, budget: str = "suite", tasks=TASKS) -> pd.DataFrame:
    """Per (max_len, method, task, length): token accuracy of seed 0 on
    ``tasks``, at the settings of preset ``budget``."""
    frames = []
    for max_len in RANGES:
        encodings = (*BASES, *(f"randomized-{b}" for b in BASES))
        preset = replace(get_preset(budget), name=f"saturation-{max_len}", tasks=tuple(tasks), encodings=encodings,
                         seeds=(0,), encoding_params={f"randomized-{b}": {"max_len": max_len} for b in BASES})
        records = run_grid(preset, results / f"max_len_{max_len}", workers=resolve_workers(workers), progress=False)
        frames.append(length_frame(records).assign(max_len=max_len))
    return pd.concat(frames, ignore_index=True)


def report(frame: pd.DataFrame) -> str:
    tasks = list(dict.fromkeys(frame.task))
    lines = []
    for max_len, sub in frame.groupby("max_len"):
        curves = {key: cell.sort_values("length").token_accuracy.round(6).tolist()
                  for key, cell in sub.groupby(["method", "task"])}
        lines.append(f"randomized positions from [0, {max_len}):")
        for a, b in PAIRS:
            same = [t for t in tasks if curves.get((transformer_method(a), t)) == curves.get((transformer_method(b), t))]
            lines.append(f"  {a} == {b} (identical per-length token accuracy) on {len(same)} of {len(tasks)} tasks"
                         + (f": {', '.join(same)}" if same else ""))
        lines.append("  validation-band token accuracy (%), the band this choice is judged on:")
        validation = sub[sub.split == "val"].groupby(["method", "task"]).token_accuracy.mean().unstack()
        lines.append((100 * validation).round(1).to_string())
        lines.append("")
    return "\n".join(lines)


def readme(command: str, seconds: float, records: list) -> str:
    """The results folder's README: what was run, from which code, and what it decides."""
    versions = ", ".join(f"`{v}`" for v in sorted({r.code_version for r in records}))
    return "\n".join([
        "# Saturation of randomized distance biases", "",
        "Does a randomized distance-bias encoding still work when its positions are drawn from a range far "
        "wider than the sequences? This study backs the rule `randomized_range` in `benchmark/presets.py` "
        "(the range is about 4x a preset's longest test length).", "",
        f"- Command: `{command}` ({seconds:.0f} s wall time on this invocation; records already present are "
        "reused, so the records' own run times are in `provenance.json`).",
        f"- Code: {versions}; {len(records)} run records, seed 0, in `max_len_64/` and `max_len_2048/`.",
        "- Settings: the `suite` budget (itself `full`'s); `max_len` 64 is `full`'s own range, so those "
        "records are `full`'s cells.",
        "- Read on the **validation band** only (lengths between training and test): the choice of a range "
        "is a setting, and no setting is chosen on a reported test length.", "",
        "`report.txt` holds the printout: per range, the pairs of encodings that would be indistinguishable "
        "(identical per-length accuracy) and every cell's validation-band token accuracy.", ""])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lengthbench.benchmark.tools.saturation", description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results/saturation", help="records folder (default results/saturation)")
    parser.add_argument("--workers", type=int, default=0, help="parallel run processes (0 = auto)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    frame = measure(Path(args.results), args.workers)
    text = report(frame)
    records = [r for folder in sorted(Path(args.results).glob("max_len_*")) for r in ResultsFolder(folder).records()]
    command = " ".join(["python -m lengthbench.benchmark.tools.saturation", *argv])
    seconds = time.perf_counter() - start
    write_provenance(Path(args.results), command, seconds, records)
    write_text(Path(args.results) / "report.txt", text + "\n")
    write_text(Path(args.results) / "README.md", readme(command, seconds, records))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
