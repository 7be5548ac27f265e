"""The package version and the code version recorded in every run."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.3.0"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``<version>+g<commit>[.dirty]`` inside a git checkout, else the version."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"
