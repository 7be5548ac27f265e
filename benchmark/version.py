"""The package version and the code version recorded in every run."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.3.0"


# Tracked files that are data, not code: the shipped references. A grid run into a reference's records folder
# rewrites its tracked ``provenance.json`` when it ends, so the next command of a chain of reference runs would
# otherwise record its runs as made from uncommitted code.
NOT_CODE = ("leaderboard/reference",)


@functools.lru_cache(maxsize=1)
def code_version(root: Path | None = None) -> str:
    """``<version>+g<commit>[.dirty]`` where ``root`` is a git checkout's top
    (``.dirty``: a tracked file other than ``NOT_CODE``'s differs from the
    commit), else the version: an installed package inside someone else's
    repository (a virtual environment in a project folder) is not stamped with
    that repository's commit."""
    root = (root or Path(__file__).resolve().parent.parent).resolve()
    try:
        top, sha = subprocess.run(["git", "rev-parse", "--show-toplevel", "--short=12", "HEAD"], cwd=root,
                                  capture_output=True, text=True, timeout=10, check=True).stdout.split()
        if Path(top).resolve() != root:
            return __version__
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                *(f":(exclude){path}" for path in NOT_CODE)], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"
