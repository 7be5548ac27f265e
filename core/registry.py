"""``Registry``: the one kind of name table (tasks, encodings, model families,
presets, executors).

Names are stable keys (leaderboard rows, record file names), so a registry
refuses a name twice and answers an unknown one with the valid choices and
the closest match. Its order is explicit and lives on each entry: ``rank``
reads an entry's place (a number, or a tuple such as a task's level and its
rank within it; None where the entry declares none); ranked entries come
first, in rank order, then the others (third-party entries) as registered.
Nothing depends on the order modules happen to be imported in, and adding an
entry touches no list of all of them.

A registry may take a ``discover`` hook: called once, the first time a name
is missing or every name is listed, to load what registers the rest. Every
registry a plugin can add to loads the installed plugins' entry points
(``core.entry_points.discover_plugins``), so a packaged task or study is
known to every command; the preset registry's also loads the installed
``lengthbench.presets`` entry points, through which this package's own
studies register their presets as a plugin would: a tool under
``benchmark/`` runs a study's grid by name, and no module below the studies
names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from lengthbench.core.errors import InputError, UnknownNameError

Entry = TypeVar("Entry")

# Task, encoding and family names become leaderboard keys, page data and record file names
# (``task__encoding__seed0__hash``): letters, digits and . + - _, no "__", a letter or digit first
# (so no spreadsheet formula, markup or path), and short enough for any file system.
NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.+-]|_(?!_))*")
MAX_NAME_LENGTH = 64


def name_problem(name) -> str | None:
    """Why ``name`` cannot be a task, encoding or family name, or None."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name.endswith("_"):
        return (f"{name!r} is not valid; use letters, digits and . + - _ (no '__', no spaces or slashes), "
                "starting with a letter or digit")
    if len(name) > MAX_NAME_LENGTH:
        return f"{name[:20]!r}... is {len(name)} characters long; at most {MAX_NAME_LENGTH}"
    return None


class Registry(Generic[Entry]):
    """``kind`` names what it holds in messages ("encoding", "preset")."""

    def __init__(self, kind: str, rank: Callable[[Entry], object] = lambda entry: None,
                 discover: Callable[[], None] | None = None):
        self.kind = kind
        self._rank = rank
        self._entries: dict[str, Entry] = {}
        self._discover = discover

    def _discovered(self) -> None:
        """Call the discover hook, once (it is dropped first, so a lookup made
        while it loads does not call it again; one that returns False, not
        ready yet, is kept for the next miss)."""
        hook, self._discover = self._discover, None
        if hook is not None and hook() is False:
            self._discover = hook

    def add(self, name: str, entry: Entry, where: str = "") -> Entry:
        """Register ``entry`` under a new ``name``; ``where`` says where the
        name is already registered from, for the refusal of a second one."""
        if name in self._entries:
            raise InputError(f"{self.kind} name {name!r} is already registered{f' ({where})' if where else ''}; "
                             "choose another name")
        self._entries[name] = entry
        return entry

    def replace(self, name: str, entry: Entry) -> None:
        """Change the entry of a registered name (its metadata, e.g. a plugin's source)."""
        self[name]
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def __getitem__(self, name: str) -> Entry:
        if self._discover and isinstance(name, str) and name not in self._entries:
            self._discovered()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self.kind, name, self._entries) from None

    def get(self, name: str, default=None):
        return self[name] if name in self else default

    def __contains__(self, name) -> bool:
        if not isinstance(name, str):
            return False
        if self._discover and name not in self._entries:
            self._discovered()
        return name in self._entries

    def names(self) -> list[str]:
        """Every name: the ranked entries' in rank order, then the rest as registered."""
        self._discovered()
        ranks = {name: self._rank(entry) for name, entry in self._entries.items()}
        ranked = sorted((name for name in self._entries if ranks[name] is not None), key=ranks.__getitem__)
        return ranked + [name for name in self._entries if ranks[name] is None]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def items(self) -> list[tuple[str, Entry]]:
        return [(n, self._entries[n]) for n in self.names()]

    def values(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]
