"""Leaderboards from run records: aggregation, the versioned CSV schema,
tables, plots, the web page, comparisons and reproduction reports.

The package is callable: ``lengthbench.leaderboard(results)`` is
``lengthbench.api.leaderboard`` (the API function and this package share the
name, and a module attribute cannot be both).
"""

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, results, out=None):
        from lengthbench.api import leaderboard

        return leaderboard(results, out)


sys.modules[__name__].__class__ = _CallablePackage
