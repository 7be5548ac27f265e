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
    """``<version>+g<commit>[.dirty]`` inside a git checkout (``.dirty``: a
    tracked file other than ``NOT_CODE``'s differs from the commit), else the version."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                *(f":(exclude){path}" for path in NOT_CODE)], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"
