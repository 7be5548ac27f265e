"""The position-encoding contract and registry.

Every encoding is one ``PositionEncoding`` module with five hooks; the model
calls all five and each encoding overrides only what it needs:

* ``positions(pos, ctx)``: which positions the other hooks see (randomized
  sampling, training offsets); identity by default;
* ``embed(h, pos)``: additive absolute encodings on the token embeddings;
* ``rotate(q, k, pos)``: rotary encodings on queries and keys;
* ``bias(q_pos, k_pos)``: additive attention-logit biases ``(B|1, H, Tq, Tk)``;
* ``content_bias(q, k, pos)``: an additive logit bias that also depends on
  the queries and keys of the layer (CoPE), ``(B, H, T, T)``; ``None`` by
  default.

Names are leaderboard row keys, so they are stable once registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import torch
from torch import nn

from lengthbench.errors import InputError
from lengthbench.registry import Registry, name_problem

# The scale of the token embeddings (their init std) and of every absolute position embedding
# added to them: one scale, so that neither signal drowns the other (a unit-amplitude sinusoid
# on std-0.02 tokens kept `sinusoidal` from fitting even_pairs in distribution: 54%, now 100%).
EMBEDDING_STD = 0.02


class PositionsOutOfRange(RuntimeError):
    """The encoding cannot represent a position this input needs (e.g. a
    learned table that is too short). Evaluation records the length as
    unsupported instead of crashing."""


@dataclass
class PositionContext:
    """What ``positions`` may use besides the ids: batch shape, real
    (unpadded) length of each sequence, train/eval mode and the random
    generator that makes randomized encodings reproducible."""

    batch_size: int
    seq_len: int
    seq_lens: torch.Tensor | None
    train: bool
    generator: torch.Generator | None


class PositionEncoding(nn.Module):
    """Base class: every hook is the identity / no-op."""

    #: True when the encoding consumes the task's structured position ids
    #: (position coupling) instead of plain 0..T-1.
    uses_task_positions: bool = False
    #: True when the encoding claims attention depends only on i - j.
    shift_invariant: bool = False

    def __init__(self, d_model: int, n_heads: int, **params):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.params = dict(params)

    def positions(self, pos: torch.Tensor, ctx: PositionContext) -> torch.Tensor:
        return pos

    def embed(self, h: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return h

    def rotate(self, q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor):
        return q, k

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor | None:
        return None

    def content_bias(self, q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor | None:
        """Called in every layer with its (rotated) ``q, k (B, H, T, Dh)``
        and the positions; attention is causal, so entries above the
        diagonal are masked afterwards and must not feed the others."""
        return None

    def not_applicable(self, task) -> str | None:
        """Why this encoding cannot run on ``task`` (its cells are recorded
        "n/a", not trained), or None; by default, an encoding that consumes
        the task's position ids needs a task that has them."""
        if self.uses_task_positions and not task.has_coupled_ids:
            return f"needs coupled position ids; {task.name} has none"
        return None

    def hooks_used(self) -> list[str]:
        """Names of the hooks this encoding overrides."""
        return [h for h in HOOKS if getattr(type(self), h) is not getattr(PositionEncoding, h)]


HOOKS = ("positions", "embed", "rotate", "bias", "content_bias")


@dataclass(frozen=True)
class EncodingEntry:
    name: str
    factory: Callable[..., PositionEncoding]
    defaults: dict = field(default_factory=dict)
    description: str = ""
    source: str = "built-in"
    version: int = 1  # bumped when a change alters results (enters the run config)
    base: str | None = None  # the encoding it feeds its positions to (``randomized-<base>``)


# The built-ins in leaderboard row order; third-party encodings follow as they register.
BUILT_IN_ORDER = (
    "nope", "learned", "sinusoidal", "rope", "alibi", "t5", "kerple-log", "kerple-power", "fire", "xpos", "cope",
    "randomized-learned", "randomized-sinusoidal", "randomized-rope", "randomized-alibi", "randomized-t5",
    "randomized-kerple-log", "randomized-kerple-power", "randomized-fire",
    "coupled", "abacus",
)
ENCODINGS: Registry[EncodingEntry] = Registry("encoding", order=BUILT_IN_ORDER)
def check_encoding_name(name) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise InputError(f"encoding name {problem}")
    return name


def register_encoding(name: str, *, defaults: dict | None = None, description: str = "",
                      source: str = "built-in", version: int = 1, base: str | None = None):
    """Class/factory decorator: ``factory(d_model, n_heads, **params)``."""
    check_encoding_name(name)

    def deco(factory):
        where = ENCODINGS[name].source if name in ENCODINGS else ""
        ENCODINGS.add(name, EncodingEntry(name, factory, dict(defaults or {}), description, source, version, base),
                      where)
        return factory

    return deco


# The kind of position information an encoding gives, by the hook its class overrides
# (first match); a leaderboard groups and filters encodings by it.
ENCODING_KINDS = {"content_bias": "contextual", "rotate": "rotary", "bias": "relative bias", "embed": "absolute"}


def encoding_kind(name: str) -> str:
    """``randomized``, ``task-structured`` (uses the task's coupled ids),
    ``contextual``, ``rotary``, ``relative bias``, ``absolute`` or ``none``;
    ``other`` for a name not registered here or a factory that is not a class."""
    entry = ENCODINGS.get(name)
    if entry is not None and entry.base is not None:
        return "randomized"
    if entry is None or not isinstance(entry.factory, type):
        return "other"
    cls = entry.factory
    if cls.uses_task_positions:
        return "task-structured"
    return next((kind for hook, kind in ENCODING_KINDS.items()
                 if getattr(cls, hook) is not getattr(PositionEncoding, hook)), "none")


def encoding_entry(name: str) -> EncodingEntry:
    return ENCODINGS[name]


def encoding_names() -> list[str]:
    return ENCODINGS.names()


def set_source(name: str, source: str) -> None:
    """Record where a third-party encoding came from (file + content hash);
    it is part of every run config, so editing the file invalidates records."""
    ENCODINGS.replace(name, replace(ENCODINGS[name], source=source))


def resolve_params(name: str, overrides: dict | None = None) -> dict:
    """The encoding's defaults updated by ``overrides`` (unknown keys rejected)."""
    entry = encoding_entry(name)
    params = dict(entry.defaults)
    for key, value in (overrides or {}).items():
        if key not in params:
            valid = ", ".join(sorted(params)) or "none"
            raise InputError(f"encoding {name!r} has no parameter {key!r}; valid: {valid}")
        params[key] = value
    return params


def build_encoding(name: str, d_model: int, n_heads: int, overrides: dict | None = None) -> PositionEncoding:
    return encoding_entry(name).factory(d_model, n_heads, **resolve_params(name, overrides))


def check_table_range(pos: torch.Tensor, size: int, what: str) -> None:
    """Raise ``PositionsOutOfRange`` when ``pos`` indexes past a table."""
    top = int(pos.max())
    if top >= size:
        raise PositionsOutOfRange(f"{what} has {size} positions but position {top} is needed")
