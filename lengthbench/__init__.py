"""lengthbench: can a transformer trained on short inputs solve the same task on
longer ones, and how much does its position encoding decide that?

The Python API (``lengthbench.api``; the command line calls the same functions):

* ``run(preset, tasks=, encodings=, models=, seeds=, results=)``: train and
  evaluate a grid, returns its leaderboard;
* ``load_records(results)``: every run x length as a long DataFrame;
* ``load_leaderboard(results)``: one row per task x method (it writes nothing);
* ``write_leaderboard(results, out)``: that board and its files (tables, plots, page) in ``out``;
* ``compare(a, b)``: per-cell differences of two leaderboards;
* ``generate(task)``, ``score(task, predictions)``, ``evaluate(model, task)``:
  the test instances for any model, its predictions scored, a PyTorch model
  evaluated as the harness evaluates its own;
* ``load_predictions(file)``: a run's saved predictions (``run(save_predictions=True)``).

The errors a script catches are the package's own names: ``InputError`` (bad
input, refused before any work; ``UnknownNameError`` for a name that is not
registered), ``OutputError`` (a file that could not be written), ``RunsFailed``
(every run of a grid failed) and ``GridInterrupted`` (a grid stopped by Ctrl-C
or SIGTERM, its finished runs kept).

The code lives in layers, each importing only those below it (ARCHITECTURE.md):
``lengthbench.leaderboard`` -> ``lengthbench.benchmark`` -> ``lengthbench.models``
-> ``lengthbench.tasks`` -> ``lengthbench.core`` (the registry type and the errors).

The API and the subpackages are imported on first use (PEP 562), so importing
one layer (a pool worker does) or running a module as a script
(``python -m lengthbench.benchmark.unseen``) does not import the others.
"""

import importlib

from lengthbench.benchmark.version import __version__

API = ("run", "load_records", "load_leaderboard", "write_leaderboard", "compare", "generate", "score", "evaluate", "load_predictions")
# What a script catches: bad input (every refusal, an unknown name among them; a plugin, record, leaderboard or
# protocol mismatch is an InputError too), a file that could not be written, a grid whose every run failed, and
# a grid interrupted (Ctrl-C, SIGTERM) after its finished runs were kept.
ERRORS = ("InputError", "UnknownNameError", "OutputError", "RunsFailed", "GridInterrupted")
SUBPACKAGES = ("api", "cli", "core", "tasks", "models", "benchmark", "leaderboard")
__all__ = [*API, *ERRORS, "__version__"]


def __getattr__(name: str):
    if name in API or name in ERRORS:
        return getattr(importlib.import_module("lengthbench.api"), name)
    if name in SUBPACKAGES:
        return importlib.import_module(f"lengthbench.{name}")
    raise AttributeError(f"module 'lengthbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API, *ERRORS, *SUBPACKAGES})
