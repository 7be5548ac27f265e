"""Chance levels: the expected score of the best predictor that ignores its
input, under the task's own distribution, per length, and averaged over a
band's lengths as the scores are.

In exact match that predictor writes, at each length, the most probable
answer; it scores that answer's probability. A task that gives it in closed
form (``Task.answer_chance``: parity 1/2, S5 1/120, ...) is exact; any other
task, format or metric is estimated from a sample of the task's own generator
that no run or evaluation draws, ``SAMPLE_FACTOR`` times the band's examples
per length, in two halves: the predictor is chosen on the first half (the most
frequent answer; in token accuracy, the most frequent token at each answer
position) and scored on the second. Reading the share of the most frequent
answer off the very examples it is scored on (this module's predecessor did,
on the test band itself) is biased upward: S5's 256 examples a length put its
chance at 2.6% where the distribution gives 0.83%.

Estimating is seconds per task at a reference's sizes, so the values of the
shipped references' bands are kept in ``chance_levels.json`` beside this
module (``python -m lengthbench.leaderboard.chance --update`` writes it, the
one command; a test holds it to what this module computes and to the shipped
boards). Reading it never writes it.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from lengthbench.tasks import get_task, make_batch
from lengthbench.tasks.cells import PLAIN, split_label
from lengthbench.tasks.formats import label_versions

SAMPLE_FACTOR = 100  # the estimate's sample: this many times the band's examples at each length (each half)
CHANCE_SEED = 20261207  # its stream, apart from every training, evaluation and fit-check stream
METRICS = ("exact_match", "token_accuracy")
TABLE = Path(__file__).with_name("chance_levels.json")


def _answers(label: str, length: int, n: int, half: int) -> list[np.ndarray]:
    """The scored answer tokens of ``n`` examples of ``label`` at ``length`` from half ``half`` of the chance
    stream."""
    batch = make_batch(get_task(label), np.random.default_rng([CHANCE_SEED, length, half]), np.full(n, length))
    return [targets[scored] for targets, scored in zip(batch.targets, batch.scored)]


def _estimate(label: str, length: int, n: int) -> tuple[float, float]:
    """Exact match and token accuracy of the input-ignoring predictor chosen on one half, scored on the other."""
    chosen, scored = (_answers(label, length, n, half) for half in (0, 1))
    best = Counter(a.tobytes() for a in chosen).most_common(1)[0][0]  # bytes, not numpy's: it strips trailing NULs
    exact = float(np.mean([a.tobytes() == best for a in scored]))
    width = max(len(a) for a in chosen + scored)
    majority = []
    for k in range(width):
        tokens, counts = np.unique([a[k] for a in chosen if len(a) > k], return_counts=True)
        majority.append(tokens[counts.argmax()] if len(tokens) else -1)
    tokens = float(np.mean([np.mean([t == majority[k] for k, t in enumerate(a)]) for a in scored if len(a)]))
    return exact, tokens


def _key(label: str, length: int, n: int) -> str:
    versions = label_versions(label)
    return f"{label}|task {versions['task']}, format {versions['format']}|{length}|{n}"


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(TABLE.read_text()) if TABLE.exists() else {}


@lru_cache(maxsize=None)
def length_chance(label: str, length: int, n: int) -> tuple[float, float]:
    """(exact match, token accuracy) of the best input-ignoring predictor at one length: exact where the task
    gives it (a one-symbol answer's token accuracy is its exact match), else the table's estimate or a new one
    from ``n`` examples a half."""
    task, fmt = split_label(label)
    exact = get_task(task).answer_chance(length) if fmt == PLAIN else None
    if exact is not None and get_task(task).output_rule == "1":
        return exact, exact
    stored = _table().get(_key(label, length, n))
    estimate = tuple(stored) if stored is not None else _estimate(label, length, n)
    return (estimate[0] if exact is None else exact), estimate[1]


def band_chance(label: str, lengths, eval_samples: int, metric: str = "exact_match") -> float:
    """The chance level of a band (``lengths``), averaged over its lengths as a score over the band is; the
    estimate draws ``SAMPLE_FACTOR`` times the band's examples (``eval_samples`` a length)."""
    values = [length_chance(label, int(n), SAMPLE_FACTOR * eval_samples)[METRICS.index(metric)] for n in lengths]
    return round(float(np.mean(values)), 6) if values else float("nan")


def shipped_bands() -> set[tuple[str, int, int]]:
    """(task label, length, sample size) of every test length of every shipped reference's cells."""
    from lengthbench.benchmark.records import read_record  # records of the shipped references only

    bands = set()
    root = Path(__file__).parent / "reference"
    for path in root.glob("*/records/*.json"):
        if path.name.startswith("provenance"):
            continue
        record = read_record(path)
        config = record.config
        for n in (n for n in config.eval_lengths() if config.split(n) == "ood"):
            bands.add((record.task, n, SAMPLE_FACTOR * config.eval_samples))
    return bands


def update_table() -> int:
    """Write ``chance_levels.json`` for every shipped band (the one command that makes it); returns its size."""
    table = {}
    for label, length, n in sorted(shipped_bands()):
        task, fmt = split_label(label)
        if fmt == PLAIN and get_task(task).answer_chance(length) is not None and get_task(task).output_rule == "1":
            continue  # exact: nothing to keep
        table[_key(label, length, n)] = [round(v, 6) for v in _estimate(label, length, n)]
    TABLE.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(table.items()))
                     + "\n}\n")
    return len(table)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help=f"rewrite {TABLE.name} for the shipped references")
    args = parser.parse_args(argv)
    if args.update:
        print(f"wrote {update_table()} estimated lengths to {TABLE}")
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
