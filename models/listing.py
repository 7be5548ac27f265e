"""The encodings and model families shown by ``lengthbench list encodings|models``, and the line naming the
installed package each third-party entry of a listing came from."""

from __future__ import annotations

import json

from lengthbench.models.encodings import ENCODINGS
from lengthbench.models.families import FAMILIES
from lengthbench.models.plugins import ORIGINS


def origins_line(names) -> str:
    """The line naming the installed package each of ``names`` came from, if any did."""
    added = [f"`{name}` ({ORIGINS[name][1]})" for name in names if name in ORIGINS]
    return f"\n\nFrom installed packages: {', '.join(added)}." if added else ""


def encodings_listing() -> str:
    """Every registered encoding: its description, defaults and where a third-party one came from."""
    lines = []
    for name, entry in ENCODINGS.items():
        source = "" if entry.source == "built-in" else f"  [{entry.source}]"
        lines.append(f"{name:24s} {entry.description}  defaults={json.dumps(entry.defaults)}{source}")
    return "\n".join(lines)


def families_listing() -> str:
    """Every model family, the descriptions in one column, with whether it takes an encoding and its size fields."""
    width = max(12, *(len(name) for name in FAMILIES.names()))
    return "\n".join(f"{name:{width}s} {entry.description}  ["
                     + (f"takes an encoding (method {name}/<encoding>)" if entry.takes_encoding else "no encoding")
                     + f"; shaped by {', '.join(entry.size_fields)}]"
                     + ("" if entry.source == "built-in" else f"  [{entry.source}]")
                     for name, entry in FAMILIES.items())
