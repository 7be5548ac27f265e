"""The one error hierarchy: every layer raises these for bad input.

The command line prints an ``InputError`` as one line and exits 2; its
message names the bad value and says what is valid. ``OutputError`` is a
derived file that could not be written (the previous one stays).
``RunsFailed`` is a grid whose every run ended in error (its records and
tables are written; the caller gets them in ``board``).
"""

from __future__ import annotations

import difflib


class InputError(ValueError):
    """Bad input from the user (a name, a value, a file), refused before any
    work; the message names the bad value and the valid choices."""


class UnknownNameError(InputError):
    """A name (task, encoding, preset, ...) that is not registered."""

    def __init__(self, kind: str, name, choices):
        choices = sorted(choices)
        close = difflib.get_close_matches(str(name), choices, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        super().__init__(f"unknown {kind} {name!r}{hint}; valid choices: {', '.join(choices)}")
        self.name = name
        self.choices = choices


class OutputError(OSError):
    """A derived file could not be written (full disk, file size limit, ...);
    the previous version of the file is left untouched."""


def install_hint(extra: str) -> str:
    """How to install an optional extra, for an installed package and for a clone alike."""
    return f'pip install "lengthbench[{extra}]" (from a clone: pip install -e ".[{extra}]")'


class RunsFailed(RuntimeError):
    """Every run of a grid ended in error: nothing was measured. Raised after
    the records and tables are written, so that a script calling the API
    exits non-zero; ``board`` is the leaderboard ``run`` would have returned."""

    def __init__(self, board):
        failed = board.attrs["failed"]
        super().__init__(f"all {len(failed)} runs of the grid ended in error (their records keep the traceback); "
                         f"the first: {failed[0]['error']}")
        self.board = board
