"""The entry-point groups through which installed packages add encodings,
model families, tasks and data formats (``pip install my-encoding``), and a
look at what is installed in them that imports none of it: ``lengthbench
list`` answers from its stored catalogue only where nothing is.

``lengthbench.plugins`` is the group; ``lengthbench.encodings``, the first
one (encodings and families only), is still read."""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint, entry_points

ENTRY_POINT_GROUP = "lengthbench.plugins"
GROUPS = (ENTRY_POINT_GROUP, "lengthbench.encodings")


def installed_plugins() -> list[EntryPoint]:
    """The installed distributions' entry points in ``GROUPS`` (none loaded)."""
    return [ep for group in GROUPS for ep in entry_points(group=group)]


def distribution_key(name: str) -> str:
    """A distribution's name as packaging compares them (``My_Encoding`` is ``my-encoding``)."""
    return re.sub(r"[-_.]+", "-", name).lower()
