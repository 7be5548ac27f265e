"""The lengthbench harness: configs, presets, records, training, evaluation, the grid and its executors."""

from lengthbench.benchmark.version import __version__

__all__ = ["__version__"]
