"""The model-family registry: the architectures a run can train.

A *method* is what a leaderboard row ranks: ``transformer/<encoding>`` for
the transformer family (which takes a position encoding) and the family name
alone for families that take none (``lstm``, ``rnn``, ``stack-rnn``, ``tape-rnn``).

A family registers one builder, ``build(vocab_size, size, runs) -> RunStack``:
it makes the models of a group of runs that share vocabulary and size (one
per ``RunInit``, each initialised from its own seed) behind the ``RunStack``
interface the trainer and evaluation use. A new family is one module that
defines its builder with ``@register_family`` plus its import in
``models/__init__.py``; nothing in the grid, records or leaderboard changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from lengthbench.models.encodings.base import PositionEncoding, check_encoding_name
from lengthbench.tasks.base import UnknownNameError

TRANSFORMER = "transformer"


@dataclass(frozen=True)
class RunInit:
    """What one run of a group brings to its model: the seed its weights are
    initialised from and, for a family that takes one, a factory for its
    position encoding (called right after seeding, so the encoding's own
    parameters come from the same stream as a solo run's)."""

    init_seed: int
    make_encoding: Callable[[], PositionEncoding] | None = None


@dataclass(frozen=True)
class FamilyEntry:
    name: str
    build: Callable  # (vocab_size, ModelSize, list[RunInit]) -> RunStack
    description: str
    takes_encoding: bool
    version: int  # bumped when a change alters results (enters the run config)


_FAMILIES: dict[str, FamilyEntry] = {}


def register_family(name: str, *, description: str, takes_encoding: bool = False, version: int = 1):
    """Decorator for a family's builder ``build(vocab_size, size, runs)``."""
    check_encoding_name(name)  # the same rules: it becomes a row key and part of record file names

    def deco(build):
        if name in _FAMILIES:
            raise ValueError(f"model family {name!r} is already registered")
        _FAMILIES[name] = FamilyEntry(name, build, description, takes_encoding, version)
        return build

    return deco


def family_entry(name: str) -> FamilyEntry:
    if name not in _FAMILIES:
        raise UnknownNameError("model family", name, _FAMILIES)
    return _FAMILIES[name]


def family_names() -> list[str]:
    return list(_FAMILIES)


def method_name(family: str, encoding: str) -> str:
    """The leaderboard key of a run: ``transformer/rope``, ``lstm`` (a run of
    a family without encodings has the empty encoding)."""
    return f"{family}/{encoding}" if encoding else family
