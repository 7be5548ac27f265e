"""Third-party encodings: from a Python file path or from installed packages
that declare a ``lengthbench.encodings`` entry point. Either way the module
registers its encodings with ``@register_encoding`` when imported."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path

from models.encodings.base import encoding_names, set_source

ENTRY_POINT_GROUP = "lengthbench.encodings"


def load_encoding_file(path: str | Path) -> list[str]:
    """Import ``path`` and return the names of the encodings it registered."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"encoding file {str(path)!r} does not exist")
    key = f"lengthbench_plugin_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if key in sys.modules:
        return list(sys.modules[key].__lengthbench_registered__)
    before = set(encoding_names())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    module.__lengthbench_registered__ = [n for n in encoding_names() if n not in before]
    for name in module.__lengthbench_registered__:
        set_source(name, f"file {path.name} sha256:{digest}")
    return list(module.__lengthbench_registered__)


def load_entry_points() -> list[str]:
    """Import every installed ``lengthbench.encodings`` entry point."""
    added = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        before = set(encoding_names())
        ep.load()
        version = ep.dist.version if getattr(ep, "dist", None) else "unknown"
        for name in encoding_names():
            if name not in before:
                set_source(name, f"entry point {ep.value} version {version}")
                added.append(name)
    return added


def load_plugins(paths=()) -> None:
    load_entry_points()
    for path in paths:
        load_encoding_file(path)
