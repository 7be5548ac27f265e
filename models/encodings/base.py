"""The position-encoding contract and registry.

Every encoding is one ``PositionEncoding`` module with nine hooks; the model
calls them all and each encoding overrides only what it needs. Once per
optimizer step, on every encoding module of the model (the trainer calls it):

* ``project_parameters()``: put stored parameters back in their admissible
  set (KERPLE's bounds, as its authors' code does); nothing by default.

Once per forward pass, for the whole model:

* ``positions(pos, ctx)``: which positions the other hooks see (randomized
  sampling, training offsets); identity by default;
* ``embed(h, pos)``: additive absolute encodings on the token embeddings;
* ``bias(q_pos, k_pos)``: additive attention-logit biases ``(B|1, H, Tq, Tk)``.

Once per attention layer, on the encoding that layer uses (``layer``):

* ``layer(index, n_layers)``: the encoding the layer uses, called once per
  layer when the model is built; the encoding itself by default. A
  mechanism with parameters of its own in every layer (the Forgetting
  Transformer's gates, PaTH's projections, SSMax's scales) or a choice per
  layer (``rnope``) returns a new module, which the layer owns;
* ``rotate(q, k, pos)``: rotary encodings on queries and keys;
* ``content_bias(q, k, pos)``: an additive logit bias that also depends on
  the queries and keys of the layer (CoPE), ``(B, H, T, T)``; ``None`` by
  default;
* ``input_bias(x, q, k, pos)``: an additive logit bias computed from the
  layer's input ``x (B, T, D)`` (data-dependent position: forget gates,
  Householder products), ``(B, H, T, T)``; ``None`` by default;
* ``attention_weights(logits)``: the weights from the scaled logits
  (``-inf`` where a key is not visible); softmax by default, replaced by
  stick-breaking and scalable softmax. The model runs PyTorch's attention
  kernel unless a layer's encoding overrides it.

Names are leaderboard row keys, so they are stable once registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import torch
from torch import nn

from lengthbench.core.errors import InputError
from lengthbench.core.entry_points import discover_plugins
from lengthbench.core.registry import Registry, name_problem

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
    #: the kind a leaderboard groups it under (``encoding_kind``), where the hooks it overrides do not say
    kind: str | None = None

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

    def layer(self, index: int, n_layers: int) -> PositionEncoding:
        """The encoding attention layer ``index`` of ``n_layers`` uses (its
        per-layer hooks are called on it); this encoding by default. A new
        module returned here is created with the model, in layer order, and
        owned by the layer (its parameters are the layer's)."""
        return self

    def input_bias(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                   pos: torch.Tensor) -> torch.Tensor | None:
        """A logit bias ``(B, H, T, T)`` from the layer's (normalized) input
        ``x (B, T, D)`` and its rotated ``q, k``; causal as ``content_bias``.
        In a packed row (several examples end to end) a key of another
        example is masked, but the bias of (i, j) must depend only on the
        tokens from j to i."""
        return None

    def attention_weights(self, logits: torch.Tensor) -> torch.Tensor:
        """The attention weights ``(B, H, T, T)`` from the scaled logits, in
        which a key the query may not see is ``-inf``: softmax."""
        return logits.softmax(-1)

    def layer_hooks(self) -> list[str]:
        """Names of the per-layer hooks this (layer's) encoding overrides; a
        layer's part of a shared encoding (``LayerEncoding``) has those it
        adds and those of the encoding it shares."""
        return [h for h in LAYER_HOOKS if getattr(type(self), h) is not getattr(PositionEncoding, h)]

    def not_applicable(self, task) -> str | None:
        """Why this encoding cannot run on ``task`` (its cells are recorded
        "n/a", not trained), or None; by default, an encoding that consumes
        the task's position ids needs a task that has them."""
        if self.uses_task_positions and not task.has_coupled_ids:
            return f"needs coupled position ids; {task.name} has none"
        return None

    def project_parameters(self) -> None:
        """Called by the trainer after every optimizer step: project this
        module's own parameters onto their admissible set (a bound kept as a
        projection of the stored value keeps its gradient, where a clamp in
        the forward pass would zero it). Nothing by default."""

    def reachable_parameters(self, longest: int) -> int:
        """How many of this encoding's own parameters a run can use when its
        sequences are at most ``longest`` tokens long: all of them by
        default; a learned table counts only the rows those positions index
        (the parameter check compares encodings by this count)."""
        return sum(p.numel() for p in self.parameters())

    def hooks_used(self) -> list[str]:
        """Names of the hooks this encoding overrides."""
        return [h for h in HOOKS if getattr(type(self), h) is not getattr(PositionEncoding, h)]


HOOKS = ("positions", "embed", "rotate", "bias", "content_bias", "layer", "input_bias", "attention_weights",
         "project_parameters")
LAYER_HOOKS = ("rotate", "content_bias", "input_bias", "attention_weights")


def project_encoding_parameters(model: nn.Module) -> None:
    """``project_parameters`` on every encoding module of ``model`` (the
    shared one and those its layers own): the trainer's call after a step."""
    for module in model.modules():
        if isinstance(module, PositionEncoding):
            module.project_parameters()


def layer_encodings(encoding: PositionEncoding, n_layers: int) -> list[PositionEncoding]:
    """The encoding each of ``n_layers`` attention layers uses (``layer``)."""
    return [encoding.layer(index, n_layers) for index in range(n_layers)]


def encoding_parameter_count(encoding: PositionEncoding, n_layers: int) -> int:
    """The parameters an encoding adds to a model of ``n_layers`` attention
    layers: its own and those of the modules it makes per layer (each once)."""
    parameters = {id(p): p for m in [encoding, *layer_encodings(encoding, n_layers)] for p in m.parameters()}
    return sum(p.numel() for p in parameters.values())


class LayerEncoding(PositionEncoding):
    """One layer's part of a shared encoding: the shared encoding's per-layer
    hooks, plus what this layer adds (its own parameters, its own hooks).
    The shared encoding is held outside this module's tree (the model owns
    it), unless ``owned``: a module made for this layer alone, whose
    parameters are then this layer's."""

    def __init__(self, shared: PositionEncoding, owned: bool = False):
        super().__init__(shared.d_model, shared.n_heads, **shared.params)
        if owned:
            self.shared = shared
        else:
            self.__dict__["shared"] = shared

    def rotate(self, q, k, pos):
        return self.shared.rotate(q, k, pos)

    def content_bias(self, q, k, pos):
        return self.shared.content_bias(q, k, pos)

    def input_bias(self, x, q, k, pos):
        return self.shared.input_bias(x, q, k, pos)

    def attention_weights(self, logits):
        return self.shared.attention_weights(logits)

    def layer_hooks(self):
        own = [h for h in LAYER_HOOKS if getattr(type(self), h) is not getattr(LayerEncoding, h)]
        return [h for h in LAYER_HOOKS if h in own or h in self.shared.layer_hooks()]


@dataclass(frozen=True)
class EncodingEntry:
    name: str
    factory: Callable[..., PositionEncoding]
    defaults: dict = field(default_factory=dict)
    description: str = ""
    source: str = "built-in"
    version: int = 1  # bumped when a change alters results (enters the run config)
    base: str | None = None  # the encoding it feeds its positions to (``randomized-<base>``)
    rank: float | None = None  # its row's place on every board (None: after the ranked, as registered)


# Leaderboard row order: each built-in's own ``rank``; third-party encodings (no rank) follow as they register.
ENCODINGS: Registry[EncodingEntry] = Registry("encoding", rank=lambda entry: entry.rank, discover=discover_plugins)
def check_encoding_name(name) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise InputError(f"encoding name {problem}")
    return name


def register_encoding(name: str, *, defaults: dict | None = None, description: str = "",
                      source: str = "built-in", version: int = 1, base: str | None = None,
                      rank: float | None = None):
    """Class/factory decorator: ``factory(d_model, n_heads, **params)``."""
    check_encoding_name(name)

    def deco(factory):
        where = ENCODINGS[name].source if name in ENCODINGS else ""
        ENCODINGS.add(name, EncodingEntry(name, factory, dict(defaults or {}), description, source, version, base,
                                          rank), where)
        return factory

    return deco


# The kind of position information an encoding gives, by the hook its class overrides
# (first match), unless the class names its ``kind``; a leaderboard groups and filters encodings by it.
ENCODING_KINDS = {"input_bias": "data-dependent", "attention_weights": "attention normalization",
                  "content_bias": "contextual", "rotate": "rotary", "bias": "relative bias", "embed": "absolute"}


def encoding_kind(name: str) -> str:
    """``randomized``, ``task-structured`` (uses the task's coupled ids), the
    class's own ``kind``, ``data-dependent``, ``attention normalization``,
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
    if cls.kind is not None:
        return cls.kind
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
