"""The model-family registry: the architectures a run can train.

A *method* is what a leaderboard row ranks: ``transformer/<encoding>`` for
the transformer family (which takes a position encoding) and the family name
alone for families that take none (``lstm``, ``rnn``, ``stack-rnn``, ``tape-rnn``, ``ssm``).

A family registers one builder that makes the plain ``nn.Module`` of one run
(a ``RunModel``): ``build(vocab_size, size, encoding)`` for a family that
takes a position encoding, ``build(vocab_size, size)`` for one that does
not. The harness seeds the process-wide stream with the run's init seed
before it calls the builder (``build_model``), so the builder simply creates
its layers. Two facts the harness reads from the registry: the family's
useful FLOPs per sequence (``run --plan``, ``perf``) and the rule that makes
a cell not applicable. A new family is one file that registers its builder
with ``@register_family``, loaded as a plugin exactly as an encoding file is
(``lengthbench check``, ``run --plugin``, ``submit``, entry points) and
checked by the family contract (``contract.check_family``); a built-in one is
such a module imported in ``models/__init__.py`` that gives its ``rank``
(its rows' place). A family that declares no FLOPs can train but ``run
--plan`` refuses to cost it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch
from torch import nn

from lengthbench.core.errors import install_hint
from lengthbench.core.entry_points import discover_plugins
from lengthbench.core.registry import Registry
from lengthbench.models.encodings.base import PositionEncoding, check_encoding_name
from lengthbench.tasks.cells import TRANSFORMER


@dataclass(frozen=True)
class ModelSize:
    """The shape of a model; a recurrent family reads ``d_model`` as its hidden size."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0


# how a report names each shape field (``describe_size``)
SIZE_LABELS = {"d_model": "d_model {}", "n_layers": "{} layer(s)", "n_heads": "{} heads", "d_ff": "d_ff {}"}


class RunModel(nn.Module):
    """A family's model for one run: ``forward(tokens (B, T), positions
    (B|1, T)) -> logits (B, T, V)``, next-token prediction, causal.
    ``positions`` gives the positions the forward pass reads for a batch; a
    family that reads none keeps this default (0..T-1, ignored by its forward).

    A family whose ``packs_sequences`` is True also takes ``segments (B, T)``
    (``forward(tokens, positions, segments)``): several examples laid end to
    end in one row, each slot marked with its example's number (-1 for
    padding), each example computed as if alone (the trainer then skips
    padding; ``contract.check_encoding`` tests it for the transformer)."""

    packs_sequences = False

    def positions(self, tokens: torch.Tensor, position_ids: torch.Tensor | None, seq_lens: torch.Tensor | None,
                  generator: torch.Generator | None) -> torch.Tensor:
        return torch.arange(tokens.shape[1], device=tokens.device)[None]


def build_model(family: str, vocab_size: int, size: ModelSize, seed: int,
                make_encoding: Callable[[], PositionEncoding] | None = None) -> RunModel:
    """One run's model: the process-wide random stream seeded with ``seed``,
    then, for a family that takes one, its encoding (so the encoding's own
    parameters come first from the run's stream), then the family's layers."""
    entry = FAMILIES[family]
    torch.manual_seed(seed)
    if entry.takes_encoding:
        if make_encoding is None:
            raise ValueError(f"model family {family!r} takes a position encoding; none was given")
        return entry.build(vocab_size, size, make_encoding())
    return entry.build(vocab_size, size)


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def no_cell_is_not_applicable(task, encoding: PositionEncoding | None) -> str | None:
    """The not-applicable rule of a family that runs on every task."""
    return None


@dataclass(frozen=True)
class FamilyEntry:
    name: str
    build: Callable[..., RunModel]  # (vocab_size, size[, encoding]) -> one run's model
    description: str
    #: forward FLOPs of sequences of the given token lengths: (lengths, size, vocab) -> FLOPs; None: undeclared
    flops: Callable[[np.ndarray, ModelSize, int], float] | None
    #: why a run of this family cannot run on a task (its cell is recorded "n/a"), or None
    not_applicable: Callable[[object, PositionEncoding | None], str | None]
    takes_encoding: bool
    version: int  # bumped when a change alters results (enters the run config)
    source: str = "built-in"  # a plugin family: its file and content hash (part of its runs' configs)
    #: the ``ModelSize`` fields its model reads (a recurrent cell: ``d_model`` only), so a report states no other
    size_fields: tuple[str, ...] = ("d_model", "n_layers", "n_heads", "d_ff")
    #: packages its builder imports that lengthbench does not install by default (an extra's), and the extra
    requires: tuple[str, ...] = ()
    extra: str = ""
    rank: float | None = None  # its rows' place on every board (None: after the ranked, as registered)

    def missing(self) -> str | None:
        """Why this family cannot be built here (a package it needs is not installed), or None."""
        absent = [p for p in self.requires if not _installed(p)]
        if not absent:
            return None
        how = install_hint(self.extra) if self.extra else f"pip install {' '.join(absent)}"
        return f"model family {self.name} needs the {', '.join(absent)} package: {how}"


# Leaderboard row order: each built-in family's own ``rank``; third-party families (no rank) follow as they register.
FAMILIES: Registry[FamilyEntry] = Registry("model family", rank=lambda entry: entry.rank, discover=discover_plugins)


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported here (a module set to None, as a test hides one, cannot)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def register_family(name: str, *, description: str, flops=None, takes_encoding: bool = False,
                    not_applicable=no_cell_is_not_applicable, version: int = 1,
                    size_fields: tuple[str, ...] = FamilyEntry.size_fields, requires: tuple[str, ...] = (),
                    extra: str = "", rank: float | None = None):
    """Decorator for a family's builder ``build(vocab_size, size[, encoding])``;
    ``requires``: the optional packages it imports (``extra``: the extra that installs them)."""
    check_encoding_name(name)  # the same rules: it becomes a row key and part of record file names
    unknown = [f for f in size_fields if f not in SIZE_LABELS]
    if unknown or not size_fields:
        raise ValueError(f"family {name!r}: size_fields {list(size_fields)!r}; each one of {', '.join(SIZE_LABELS)}")

    def deco(build):
        FAMILIES.add(name, FamilyEntry(name, build, description, flops, not_applicable, takes_encoding, version,
                                       size_fields=tuple(size_fields), requires=tuple(requires), extra=extra,
                                       rank=rank),
                     FAMILIES[name].source if name in FAMILIES else "")
        return build

    return deco


def describe_size(family: str, size: ModelSize) -> str:
    """The shape of a family's model in a report's words, only the fields it
    reads ("d_model 64, 2 layer(s), 4 heads, d_ff 256"; a recurrent cell:
    "d_model 224"); every field for a family not registered here."""
    fields = FAMILIES[family].size_fields if family in FAMILIES else FamilyEntry.size_fields
    return ", ".join(SIZE_LABELS[f].format(getattr(size, f)) for f in fields)


def family_entry(name: str) -> FamilyEntry:
    return FAMILIES[name]


def set_family_source(name: str, source: str) -> None:
    """Record where a third-party family came from (file + content hash)."""
    FAMILIES.replace(name, replace(FAMILIES[name], source=source))


def family_names() -> list[str]:
    return FAMILIES.names()
