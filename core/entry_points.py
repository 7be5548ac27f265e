"""The entry-point group through which installed packages add encodings and
model families (``pip install my-encoding``), and a look at what is
installed in it that imports none of them: ``lengthbench list`` answers from
its stored catalogue only where nothing is."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

ENTRY_POINT_GROUP = "lengthbench.encodings"


def installed_plugins() -> list[EntryPoint]:
    """The installed distributions' entry points in ``ENTRY_POINT_GROUP`` (none loaded)."""
    return list(entry_points(group=ENTRY_POINT_GROUP))
