"""The lengthbench harness: configs, presets, training, evaluation, grid, CLI."""

from lengthbench.benchmark.version import __version__

__all__ = ["__version__"]
