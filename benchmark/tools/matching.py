"""Model families matched in parameters, task by task.

A baseline family is a fair comparison only at about the transformer's
parameter count, and that count depends on the task: the embedding and the
output head grow with the vocabulary, differently per family (a recurrent
cell's input and output layers, a 527-token vocabulary with index hints).
``matched_widths`` finds, for every task and family, the width (``d_model``)
whose parameter count is nearest the reference transformer's on that task.

``python -m lengthbench.benchmark.tools.matching --preset NAME`` prints the table a
preset holds and how far each entry is from its target; a test holds every
shipped preset's entries within ``MATCH_TOLERANCE``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from lengthbench.core.errors import InputError
from lengthbench.models.encodings import build_encoding
from lengthbench.models.families import TRANSFORMER, ModelSize, build_model, family_entry, n_parameters
from lengthbench.tasks import get_task
from lengthbench.tasks.cells import cell_name

MATCH_TOLERANCE = 0.10  # a family's parameters within this share of the transformer's, on every task
REFERENCE_ENCODING = "nope"  # the transformer without position parameters is the target


def parameters(family: str, task: str, size: ModelSize, encoding: str = REFERENCE_ENCODING) -> int:
    """Parameters of one run's model (a family that takes an encoding, with ``encoding``)."""
    vocab = get_task(task).vocab_size
    return n_parameters(build_model(family, vocab, size, 0, lambda: build_encoding(encoding, size.d_model,
                                                                                   size.n_heads, {})))


def matched_width(family: str, task: str, size: ModelSize, target: int, widths=range(8, 1025, 8)) -> int:
    """The width whose parameter count is nearest ``target`` (counts grow with
    the width; multiples of 8, which every built-in family accepts)."""
    lo, hi = 0, len(widths) - 1
    while lo < hi:  # the first width at or above the target
        mid = (lo + hi) // 2
        if parameters(family, task, replace(size, d_model=widths[mid])) < target:
            lo = mid + 1
        else:
            hi = mid
    candidates = [widths[i] for i in (lo - 1, lo) if 0 <= i < len(widths)]
    return min(candidates, key=lambda w: abs(parameters(family, task, replace(size, d_model=w)) - target))


def matched_widths(preset) -> dict[str, dict[str, int]]:
    """``{task: {family: width}}`` matching ``preset``'s transformer (``REFERENCE_ENCODING``) on each task,
    each family at its own settings but the width (the looped transformer's one layer, say)."""
    table = {}
    for task in preset.tasks:
        target = parameters(TRANSFORMER, task, preset.run_config(task, REFERENCE_ENCODING, 0).model)
        table[task] = {}
        for family in (f for f in preset.families if f != TRANSFORMER):
            encoding = REFERENCE_ENCODING if family_entry(family).takes_encoding else ""
            table[task][family] = matched_width(family, task, preset.run_config(task, encoding, 0, family).model,
                                                target)
    return table


def mismatches(preset) -> list[str]:
    """Every (task, family) of ``preset`` whose parameters are more than
    ``MATCH_TOLERANCE`` away from its transformer's on that task."""
    out = []
    for task in preset.tasks:
        target = parameters(TRANSFORMER, task, preset.run_config(task, REFERENCE_ENCODING, 0).model)
        for family in preset.families:
            if family == TRANSFORMER:
                continue
            encoding = REFERENCE_ENCODING if family_entry(family).takes_encoding else ""
            got = parameters(family, task, preset.run_config(task, encoding, 0, family).model)
            if abs(got / target - 1) > MATCH_TOLERANCE:
                out.append(f"{cell_name(task, family)}: {got} parameters, {got / target - 1:+.0%} against the transformer's {target}")
    return out


def main(argv=None) -> None:
    from lengthbench.benchmark.presets import get_preset

    parser = argparse.ArgumentParser(prog="python -m lengthbench.benchmark.tools.matching", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", required=True)
    try:
        preset = get_preset(parser.parse_args(argv).preset)
    except InputError as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print(matched_widths(preset))
    problems = mismatches(preset)
    print("\n".join(problems) if problems else f"every family within {MATCH_TOLERANCE:.0%} on every task")


if __name__ == "__main__":
    main()
