"""lengthbench: can a transformer trained on short inputs solve the same task on
longer ones, and how much does its position encoding decide that?

The Python API (``lengthbench.api``; the command line calls the same functions):

* ``run(preset, tasks=, encodings=, models=, seeds=, results=)``: train and
  evaluate a grid, returns its leaderboard;
* ``load_records(results)``: every run x length as a long DataFrame;
* ``load_leaderboard(results)``: one row per task x method;
* ``compare(a, b)``: per-cell differences of two leaderboards.

The code lives in layers, each importing only those below it (ARCHITECTURE.md):
``lengthbench.leaderboard`` -> ``lengthbench.benchmark`` -> ``lengthbench.models``
-> ``lengthbench.tasks``.
"""

from lengthbench.api import compare, load_leaderboard, load_records, run
from lengthbench.benchmark.version import __version__

__all__ = ["run", "load_records", "load_leaderboard", "compare", "__version__"]
