"""What ``lengthbench list`` prints for the built-in registries, stored.

Listing the built-in tasks, formats, encodings, model families, presets and
studies needs their registries, and building them imports torch: 1.9 to 2.8 s
of start-up on a 2-core CPU at a load of 4.5 (0.04 s from the catalogue) for a
command that trains nothing. ``catalog.json`` holds each listing's text as the registries print
it, so ``lengthbench list`` answers from it without importing torch; a test
holds it equal to the live registries (``python -m lengthbench.generated
--update`` rewrites it after a built-in is registered or changed). Anything else (a list
with another option, or in a process whose registries are loaded and may hold
a plugin or a script's own preset) goes through the full parser, live.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lengthbench.core.entry_points import installed_plugins

CATALOG = Path(__file__).with_name("catalog.json")
LISTED = ("tasks", "formats", "encodings", "models", "presets", "studies")


def listing(args: list[str]) -> str | None:
    """The stored text of ``lengthbench list <args>`` (``presets --json`` too),
    or None where the catalogue does not answer them, or where this process
    has loaded a registry already: it may hold more than the built-ins (a
    plugin, a preset registered by the script that calls the command line)."""
    key = " ".join(sorted(args, key=lambda a: a.startswith("-")))
    if "lengthbench.core.registry" in sys.modules or installed_plugins() or not CATALOG.is_file():
        return None
    return json.loads(CATALOG.read_text()).get(key)


def live() -> dict[str, str]:
    """Every listing as the registries print it now (imports the whole API)."""
    from lengthbench import api

    texts = {"tasks": api.tasks_table(), "formats": api.formats_table(), "encodings": api.encodings_text(),
             "models": api.models_text(), "presets": api.presets_text(), "studies": api.studies_text()}
    return {**texts, "presets --json": api.presets_text(as_json=True)}

