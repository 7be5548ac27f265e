"""The entry-point groups through which installed packages add encodings,
model families, tasks and data formats (``pip install my-encoding``), and a
look at what is installed in them that imports none of it: ``lengthbench
list`` answers from its stored catalogue only where nothing is.

``lengthbench.plugins`` is the group; ``lengthbench.encodings``, the first
one (encodings and families only), is still read. ``lengthbench.presets``
holds the modules that register presets: this package's own studies
(``setup.cfg``), loaded by the preset registry on its first miss, so the run
path finds a study's preset without importing the layer above it."""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint, entry_points

ENTRY_POINT_GROUP = "lengthbench.plugins"
GROUPS = (ENTRY_POINT_GROUP, "lengthbench.encodings")
PRESET_GROUP = "lengthbench.presets"


def installed_plugins() -> list[EntryPoint]:
    """The installed distributions' entry points in ``GROUPS`` (none loaded)."""
    return [ep for group in GROUPS for ep in entry_points(group=group)]


def distribution_key(name: str) -> str:
    """A distribution's name as packaging compares them (``My_Encoding`` is ``my-encoding``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def load_preset_modules() -> None:
    """Import every module installed in ``PRESET_GROUP`` (each registers its presets on import)."""
    for entry_point in entry_points(group=PRESET_GROUP):
        entry_point.load()
