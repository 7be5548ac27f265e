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


# The plugins' loader (``models.plugins.load_entry_points``, which keeps their origins and sets a broken one
# aside), given when that module is imported; and whether it has run in this process.
_LOADER: list = []
_STATE = {"loaded": False, "loading": False}


def set_plugin_loader(loader) -> None:
    _LOADER[:] = [loader]


def discover_plugins() -> bool:
    """A registry's discover hook: load the installed plugins once, so that a
    task, format, encoding, family, preset or study a package registers is
    found by any lookup of its name, in every command. False (the registry
    asks again at its next miss) while the loader is not imported yet; a
    lookup made while the plugins load sees what is registered so far."""
    if not _LOADER:
        return False
    if not (_STATE["loaded"] or _STATE["loading"]):
        _STATE["loading"] = True
        try:
            _LOADER[0]()
            _STATE["loaded"] = True
        finally:
            _STATE["loading"] = False
    return True


def discover_presets() -> bool:
    """The preset registry's hook: this package's studies' presets, then the plugins'."""
    load_preset_modules()
    return discover_plugins()
