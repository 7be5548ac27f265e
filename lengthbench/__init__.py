"""lengthbench: can a transformer trained on short inputs solve the same task on
longer ones, and how much does its position encoding decide that?

The Python API (the command line calls the same functions):

* ``run(preset, tasks=, encodings=, models=, seeds=, results=)``: train and
  evaluate a grid, returns its leaderboard;
* ``load_records(results)``: every run x length as a long DataFrame;
* ``leaderboard(results)``: one row per task x method;
* ``compare(a, b)``: per-cell differences of two leaderboards.

``lengthbench.leaderboard`` is also the package of the leaderboard code
(``lengthbench.leaderboard.schema``, ...); calling it is the API function.
The code lives in ``lengthbench.tasks``, ``lengthbench.models``,
``lengthbench.benchmark`` and ``lengthbench.leaderboard``.
"""

from lengthbench import leaderboard
from lengthbench.api import compare, load_records, run
from lengthbench.benchmark.version import __version__

__all__ = ["run", "load_records", "leaderboard", "compare", "__version__"]
