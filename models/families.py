"""The model-family registry: the architectures a run can train.

A *method* is what a leaderboard row ranks: ``transformer/<encoding>`` for
the transformer family (which takes a position encoding) and the family name
alone for families that take none (``lstm``, ``rnn``, ``stack-rnn``, ``tape-rnn``, ``ssm``).

A family registers one builder, ``build(vocab_size, size, runs) -> RunStack``:
it makes the models of a group of runs that share vocabulary and size (one
per ``RunInit``, each initialised from its own seed) behind the ``RunStack``
interface the trainer and evaluation use, with two facts the harness reads
from the registry: its useful FLOPs per sequence (``run --plan``, ``perf``)
and the rule that makes a cell not applicable. A new family is one file that
registers its builder with ``@register_family``, loaded as a plugin exactly
as an encoding file is (``lengthbench check``, ``run --plugin``, ``submit``,
entry points) and checked by the family contract (``contract.check_family``);
a built-in one is such a module imported in ``models/__init__.py`` with its
name in ``FAMILY_ORDER``. A family that declares no FLOPs can train but
``run --plan`` refuses to cost it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Protocol

import numpy as np
import torch
from torch import nn

from lengthbench.models.encodings.base import PositionEncoding, check_encoding_name
from lengthbench.registry import Registry

TRANSFORMER = "transformer"


@dataclass(frozen=True)
class ModelSize:
    """The shape of a model; a recurrent family reads ``d_model`` as its hidden size."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0


@dataclass(frozen=True)
class RunInit:
    """What one run of a group brings to its model: the seed its weights are
    initialised from and, for a family that takes one, a factory for its
    position encoding (called right after seeding, so the encoding's own
    parameters come from the run's stream, before the family's weights)."""

    init_seed: int
    make_encoding: Callable[[], PositionEncoding] | None = None


class RunStack(Protocol):
    """What the trainer and evaluation need from a model family: the models of
    R runs of one shape behind one module (an ``nn.Module``: ``parameters``,
    ``state_dict``, ``train``/``eval``, ``to``). ``n_parameters(r)`` counts
    run r's parameters, ``run_parameters(r)`` lists them (views into the
    stacked tensors), ``run_gradients(r)`` lists all of run r's gradients,
    ``positions`` gives run r's positions for a batch (a family may ignore
    them), and calling it maps ``(R', B, T)`` tokens of the chosen ``runs``
    (default: all, in order) to ``(R', B, T, V)`` logits."""

    n_runs: int

    def n_parameters(self, run: int) -> int: ...

    def run_parameters(self, run: int) -> list[torch.Tensor]: ...

    def run_gradients(self, run: int) -> list[torch.Tensor]: ...

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor: ...

    def __call__(self, tokens: torch.Tensor, positions: list[torch.Tensor],
                 runs: list[int] | None = None) -> torch.Tensor: ...


class StackedWeights(nn.Module):
    """The ``RunStack`` bookkeeping of a family whose every weight is one
    tensor of ``self.weights`` (an ``nn.ParameterDict``) with the run on its
    first dimension, and which reads no positions (the recurrent and
    state-space families)."""

    n_runs: int
    weights: nn.ParameterDict

    def n_parameters(self, run: int) -> int:
        return sum(p.numel() for p in self.weights.values()) // self.n_runs  # every weight is stacked

    def run_parameters(self, run: int) -> list[torch.Tensor]:
        return [p[run] for p in self.weights.values()]

    def run_gradients(self, run: int) -> list[torch.Tensor]:
        return [p.grad[run] for p in self.weights.values() if p.grad is not None]

    def positions(self, run: int, tokens, position_ids, seq_lens, generator) -> torch.Tensor:
        return torch.arange(tokens.shape[1], device=tokens.device)[None]

    def _weights(self, runs: list[int] | None) -> dict[str, torch.Tensor]:
        """The chosen runs' weights (all, in order, by default)."""
        if runs is None or list(runs) == list(range(self.n_runs)):
            return dict(self.weights.items())
        index = torch.tensor(list(runs), device=next(iter(self.weights.values())).device)
        return {name: p.index_select(0, index) for name, p in self.weights.items()}


def no_cell_is_not_applicable(task, encoding: PositionEncoding | None) -> str | None:
    """The not-applicable rule of a family that runs on every task."""
    return None


@dataclass(frozen=True)
class FamilyEntry:
    name: str
    build: Callable[[int, ModelSize, list[RunInit]], nn.Module]  # -> a RunStack
    description: str
    #: forward FLOPs of sequences of the given token lengths: (lengths, size, vocab) -> FLOPs; None: undeclared
    flops: Callable[[np.ndarray, ModelSize, int], float] | None
    #: why a run of this family cannot run on a task (its cell is recorded "n/a"), or None
    not_applicable: Callable[[object, PositionEncoding | None], str | None]
    takes_encoding: bool
    version: int  # bumped when a change alters results (enters the run config)
    source: str = "built-in"  # a plugin family: its file and content hash (part of its runs' configs)


# Leaderboard row order of the built-in families; third-party families follow as they register.
FAMILY_ORDER = (TRANSFORMER, "rnn", "lstm", "stack-rnn", "tape-rnn", "ssm")
FAMILIES: Registry[FamilyEntry] = Registry("model family", order=FAMILY_ORDER)


def register_family(name: str, *, description: str, flops=None, takes_encoding: bool = False,
                    not_applicable=no_cell_is_not_applicable, version: int = 1):
    """Decorator for a family's builder ``build(vocab_size, size, runs)``."""
    check_encoding_name(name)  # the same rules: it becomes a row key and part of record file names

    def deco(build):
        FAMILIES.add(name, FamilyEntry(name, build, description, flops, not_applicable, takes_encoding, version),
                     FAMILIES[name].source if name in FAMILIES else "")
        return build

    return deco


def family_entry(name: str) -> FamilyEntry:
    return FAMILIES[name]


def set_family_source(name: str, source: str) -> None:
    """Record where a third-party family came from (file + content hash)."""
    FAMILIES.replace(name, replace(FAMILIES[name], source=source))


def family_names() -> list[str]:
    return FAMILIES.names()


def method_name(family: str, encoding: str) -> str:
    """The leaderboard key of a run: ``transformer/rope``, ``lstm`` (a run of
    a family without encodings has the empty encoding)."""
    return f"{family}/{encoding}" if encoding else family


def method_parts(method: str) -> tuple[str, str]:
    """``(family, encoding)`` of a leaderboard key (the inverse of ``method_name``)."""
    family, _, encoding = method.partition("/")
    return family, encoding
