"""The position-encoding contract, as executable checks.

``check_encoding(name, shapes)`` runs one registered encoding through every
check and returns a ``ContractReport``; ``lengthbench check FILE.py`` prints
one per encoding the file registers. The checks run at each ``CheckShape``
the caller gives: a preset's width and head count (what an encoding is built
with), the longest length it evaluates and its tasks, so an encoding is
checked where it will run. Every check runs and reports, even after another
one failed.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from lengthbench.models.encodings.base import (
    PositionContext,
    PositionEncoding,
    PositionsOutOfRange,
    build_encoding,
    encoding_entry,
    encoding_parameter_count,
    layer_encodings,
)
from lengthbench.models.families import TRANSFORMER, ModelSize, RunModel, build_model, family_entry
from lengthbench.models.transformer import Transformer, encoding_not_applicable, position_parameters
from lengthbench.tasks import IGNORE, get_task, make_batch

VOCAB = 16
BATCH = 2
GRADIENT_BATCH = 16
GRADIENT_BATCHES = 8
TOLERANCE = 1e-5


@dataclass(frozen=True)
class CheckShape:
    """Where an encoding will run: a width and head count a preset builds it
    with, the longest length evaluated there, and that preset's tasks (name,
    training length) for the gradient check. The checks' transformer has 2
    layers of this width (depth does not change what an encoding sees)."""

    label: str
    d_model: int
    n_heads: int
    test_length: int
    tasks: tuple[tuple[str, int], ...] = (("copy", 8),)

    @property
    def size(self) -> ModelSize:
        return ModelSize(d_model=self.d_model, n_layers=2, n_heads=self.n_heads, d_ff=2 * self.d_model)

    def describe(self) -> str:
        return f"{self.label}: d_model {self.d_model}, {self.n_heads} heads"


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str


@dataclass
class ContractReport:
    encoding: str  # the name checked: an encoding's or, with kind "model family", a family's
    source: str
    n_parameters: int | None = None
    hooks: list[str] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    kind: str = "encoding"

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    def failed_checks(self) -> list[str]:
        """The names of the failed checks, once each whatever the shapes they failed at."""
        return list(dict.fromkeys(r.name.split(" (")[0] for r in self.results if not r.passed))

    def failure(self) -> str:
        """``encoding 'name' (check, check)`` for a one-line error."""
        return f"{self.kind} {self.encoding!r} ({', '.join(self.failed_checks())})"

    def format(self) -> str:
        lines = [f"{self.kind} {self.encoding!r} ({self.source}): {'PASS' if self.passed else 'FAIL'}",
                 f"  parameters: {self.n_parameters if self.n_parameters is not None else 'n/a'}"
                 + (f"; hooks: {', '.join(self.hooks) or 'none'}" if self.kind == "encoding" else "")]
        lines += [f"  [{'ok' if r.passed else 'FAIL'}] {r.name}: {r.detail}" for r in self.results]
        return "\n".join(lines)


def _error(err: BaseException) -> str:
    frame = traceback.extract_tb(err.__traceback__)[-1]
    return f"raised {type(err).__name__}: {err} (at {Path(frame.filename).name}:{frame.lineno})"


def _model(name: str, size: ModelSize, seed: int = 0, vocab: int = VOCAB) -> Transformer:
    return build_model(TRANSFORMER, vocab, size, seed, lambda: build_encoding(name, size.d_model, size.n_heads))


def logits_of(model: RunModel, tokens, position_ids=None, seq_lens=None, generator=None) -> torch.Tensor:
    """A run's logits for ``(B, T)`` tokens, its positions drawn from ``generator``."""
    return model(tokens, model.positions(tokens, position_ids, seq_lens, generator))


def _forward(model: RunModel, tokens, seed=0):
    """The logits of a model for ``(B, T)`` tokens whose positions are plain."""
    position_ids = torch.arange(tokens.shape[1]).expand_as(tokens)
    seq_lens = torch.full((tokens.shape[0],), tokens.shape[1])
    return logits_of(model, tokens, position_ids, seq_lens, torch.Generator().manual_seed(seed))


def _finite_step(model, logits: torch.Tensor, expected: tuple, t: int, layout: str = "") -> None:
    """Logits of the ``expected`` shape, finite, with finite gradients after a backward pass."""
    if tuple(logits.shape) != expected:
        raise AssertionError(f"logits shape {tuple(logits.shape)} at length {t}; expected {expected}{layout}")
    if not torch.isfinite(logits).all():
        raise AssertionError(f"non-finite outputs at length {t}")
    logits.float().pow(2).mean().backward()
    for pname, p in model.named_parameters():
        if p.grad is not None and not torch.isfinite(p.grad).all():
            raise AssertionError(f"non-finite gradient of {pname} at length {t}")


def check_hook_shapes(encoding: PositionEncoding, size: ModelSize, t: int = 9) -> str:
    """Each hook returns what the model expects; returns a description."""
    b, h, dh = BATCH, size.n_heads, size.d_model // size.n_heads
    ids = torch.arange(t).expand(b, t)
    ctx = PositionContext(b, t, torch.full((b,), t), True, torch.Generator().manual_seed(0))
    base = ids if encoding.uses_task_positions else ids[:1]
    pos = encoding.positions(base, ctx)
    if pos.dim() != 2 or pos.shape[1] != t or pos.shape[0] not in (1, b):
        raise AssertionError(f"positions returned shape {tuple(pos.shape)}; expected (1 or {b}, {t})")
    x = torch.randn(b, t, size.d_model)
    out = encoding.embed(x, pos)
    if out.shape != x.shape:
        raise AssertionError(f"embed returned shape {tuple(out.shape)}; expected {tuple(x.shape)}")
    q, k = torch.randn(b, h, t, dh), torch.randn(b, h, t, dh)
    rq, rk = encoding.rotate(q, k, pos)
    if rq.shape != q.shape or rk.shape != k.shape:
        raise AssertionError(f"rotate returned shapes {tuple(rq.shape)}, {tuple(rk.shape)}; "
                             f"expected {tuple(q.shape)} each")
    bias = encoding.bias(pos, pos)
    if bias is not None:
        ok = bias.dim() == 4 and bias.shape[2:] == (t, t) and bias.shape[0] in (1, b) and bias.shape[1] in (1, h)
        if not ok:
            raise AssertionError(f"bias returned shape {tuple(bias.shape)}; expected (1 or {b}, 1 or {h}, {t}, {t})")
    layer_biases = [check_layer_hook_shapes(own, x, q, k, pos) for own in layer_encodings(encoding, size.n_layers)]
    return f"positions {tuple(pos.shape)}, embed/rotate keep shapes" + (
        f", bias {tuple(bias.shape)}" if bias is not None else ", no bias") + "".join(
        f", {what} {(b, h, t, t)}" for what in dict.fromkeys(w for found in layer_biases for w in found))


def check_layer_hook_shapes(encoding: PositionEncoding, x, q, k, pos) -> list[str]:
    """One layer's hooks (``layer``) return what the model expects; returns
    the names of the ``(B, H, T, T)`` terms it gives."""
    b, h, t, _ = q.shape
    rq, rk = encoding.rotate(q, k, pos)
    if rq.shape != q.shape or rk.shape != k.shape:
        raise AssertionError(f"a layer's rotate returned shapes {tuple(rq.shape)}, {tuple(rk.shape)}; "
                             f"expected {tuple(q.shape)} each")
    found = []
    for what, extra in (("content bias", encoding.content_bias(rq, rk, pos)),
                        ("input bias", encoding.input_bias(x, rq, rk, pos))):
        if extra is not None and extra.shape != (b, h, t, t):
            raise AssertionError(f"{what.replace(' ', '_')} returned shape {tuple(extra.shape)}; "
                                 f"expected {(b, h, t, t)}")
        found += [what] if extra is not None else []
    logits = (rq @ rk.transpose(-1, -2)).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    weights = encoding.attention_weights(logits)
    if weights.shape != (b, h, t, t) or not torch.isfinite(weights).all():
        raise AssertionError(f"attention_weights returned shape {tuple(weights.shape)} (expected {(b, h, t, t)}) or "
                             "non-finite weights")
    if weights.triu(1).abs().max() > 0:
        raise AssertionError("attention_weights gives weight to a key the query may not see (-inf logit)")
    return found + (["attention weights"] if "attention_weights" in encoding.layer_hooks() else [])


def check_forward_backward(name: str, size: ModelSize, lengths: list[int]) -> str:
    """Finite outputs and gradients at every length; a length past what the
    encoding can represent (``PositionsOutOfRange``, e.g. a table too short)
    is reported as unsupported, as the harness records it, not as a failure;
    the shortest length must run."""
    model = _model(name, size).train()
    unsupported = []
    for t in lengths:
        tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(t))
        model.zero_grad()
        try:
            logits = _forward(model, tokens)
        except PositionsOutOfRange:
            if t == min(lengths):
                raise
            unsupported.append(t)
            continue
        _finite_step(model, logits, (BATCH, t, VOCAB), t)
    ran = [t for t in lengths if t not in unsupported]
    return f"finite outputs and gradients at lengths {', '.join(map(str, ran))}" + (
        f"; unsupported (recorded as such in a grid) at {', '.join(map(str, unsupported))}" if unsupported else "")


def check_eval_finite(name: str, size: ModelSize, lengths: list[int]) -> str:
    """Finite outputs in eval mode (what evaluation runs) at every length; a
    length the encoding cannot represent is skipped, as in forward/backward."""
    model = _model(name, size).eval()
    ran = []
    with torch.no_grad():
        for t in lengths:
            tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(t))
            try:
                logits = _forward(model, tokens)
            except PositionsOutOfRange:
                continue
            if not torch.isfinite(logits).all():
                raise AssertionError(f"non-finite outputs in eval mode at length {t} (evaluation would count them "
                                     "as failures)")
            ran.append(t)
    return f"finite eval-mode outputs at lengths {', '.join(map(str, ran))}"


def _causal(logits_of, tokens: torch.Tensor, leak: str) -> str:
    """Outputs at positions <= t unchanged when only tokens after t change
    (tokens on the last axis, logits on the one before the vocabulary)."""
    t = tokens.shape[-1]
    with torch.no_grad():
        reference = logits_of(tokens)
        for cut in (0, t // 3, t - 2):
            changed = tokens.clone()
            changed[..., cut + 1:] = (changed[..., cut + 1:] + 7) % VOCAB
            diff = (logits_of(changed)[..., : cut + 1, :] - reference[..., : cut + 1, :]).abs().max().item()
            if diff > TOLERANCE:
                raise AssertionError(f"outputs at positions <= {cut} changed by {diff:.3g} when only "
                                     f"tokens after {cut} changed ({leak})")
    return f"outputs at <= t unchanged by tokens after t (t = 0, {t // 3}, {t - 2})"


def check_causality(name: str, size: ModelSize, t: int = 24) -> str:
    model = _model(name, size).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(1))
    return _causal(lambda x: _forward(model, x), tokens, "the encoding leaks the future")


def check_eval_determinism(name: str, size: ModelSize, t: int = 16) -> str:
    model = _model(name, size).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a, b = _forward(model, tokens, seed=5), _forward(model, tokens, seed=5)
    diff = (a - b).abs().max().item()
    if diff > 0:
        raise AssertionError(f"two eval passes with the same generator seed differ by {diff:.3g} "
                             "(use ctx.generator for any randomness)")
    return "identical outputs for the same generator seed"


def _parameters_fixed(model: RunModel, what: str) -> str:
    """The model's parameters are all there when it is built: the trainer
    builds its optimizer then, so a parameter created in a forward pass never learns."""
    before = {n for n, _ in model.named_parameters()}
    tokens = torch.randint(0, VOCAB, (BATCH, 9), generator=torch.Generator().manual_seed(6))
    model.train()
    _forward(model, tokens).float().pow(2).mean().backward()
    with torch.no_grad():
        _forward(model.eval(), tokens)
    late = sorted({n for n, _ in model.named_parameters()} - before)
    if late:
        raise AssertionError(f"parameter(s) {', '.join(late)} of the {what} appeared in a forward pass, after "
                             "construction: the optimizer is built with the model, so they never learn; create them "
                             "in __init__")
    return f"all {len(before)} parameters exist from construction on"


def _examples_independent(logits_of, tokens: torch.Tensor, mixes: str) -> str:
    """Each example's outputs depend on that example only: changing one
    example's tokens leaves every other example's logits as they were (a
    model that mixes or permutes the batch changes another's). The batch is
    not reordered: randomized positions are drawn per slot, legitimately."""
    with torch.no_grad():
        reference = logits_of(tokens)
        changed = tokens.clone()
        changed[0] = (changed[0] + 5) % VOCAB
        diff = (logits_of(changed)[1:] - reference[1:]).abs().max().item()
        if diff > TOLERANCE:
            raise AssertionError(f"the logits of examples 1..{len(tokens) - 1} changed by {diff:.3g} when only "
                                 f"example 0 changed ({mixes})")
    return f"each of {len(tokens)} examples' logits depend on that example only"


def check_parameters_fixed(name: str, size: ModelSize) -> str:
    return _parameters_fixed(_model(name, size), "encoding")


def check_examples_independent(name: str, size: ModelSize, t: int = 12) -> str:
    model = _model(name, size).eval()
    tokens = torch.randint(0, VOCAB, (4, t), generator=torch.Generator().manual_seed(7))
    return _examples_independent(lambda x: _forward(model, x), tokens, "the encoding mixes examples")


def check_packing(name: str, size: ModelSize) -> str:
    """Two examples laid end to end in one row (what the trainer does with
    every batch) give each the logits it gets alone: the hooks read
    positions from ``pos``, never from a slot's index."""
    return _packing(_model(name, size), "read positions from `pos` in every hook, not from slot indices")


def _packing(model: RunModel, hint: str, lengths: tuple[int, int] = (5, 9)) -> str:
    """``check_packing`` of a built model (an encoding's transformer, or a family that packs)."""
    model = model.eval()
    t = max(lengths)
    tokens = torch.randint(0, VOCAB, (len(lengths), t), generator=torch.Generator().manual_seed(4))
    seq_lens = torch.tensor(lengths)
    with torch.no_grad():
        pos = model.positions(tokens, torch.arange(t).expand(len(lengths), t), seq_lens,
                              torch.Generator().manual_seed(0)).expand(len(lengths), t)
        alone = model(tokens, pos)
        row = lambda x: torch.cat([x[i, :n] for i, n in enumerate(lengths)])[None]  # noqa: E731
        segments = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])[None]
        packed = model(row(tokens), row(pos), segments)[0]
    diff = (packed - row(alone)[0]).abs().max().item()
    if diff > TOLERANCE:
        raise AssertionError(f"examples of {lengths[0]} and {lengths[1]} tokens packed in one row differ by {diff:.3g} "
                             f"from each alone ({hint})")
    return f"examples of {lengths[0]} and {lengths[1]} tokens packed in one row give the logits they give alone"


def check_shift_invariance(encoding: PositionEncoding, size: ModelSize, t: int = 12, shift: int = 37) -> str:
    """Attention logits (rotate + bias) and embeddings unchanged when every
    position moves by the same amount."""
    h, dh = size.n_heads, size.d_model // size.n_heads
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, h, t, dh, generator=gen), torch.randn(1, h, t, dh, generator=gen)
    x = torch.randn(1, t, size.d_model, generator=gen)

    def logits(pos):  # every layer's, stacked
        scores = torch.stack([rq @ rk.transpose(-1, -2) for rq, rk in
                              (own.rotate(q, k, pos) for own in layer_encodings(encoding, size.n_layers))])
        bias = encoding.bias(pos, pos)
        return scores if bias is None else scores + bias

    pos = torch.arange(t)[None]
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    diff = (logits(pos) - logits(pos + shift))[..., causal].abs().max().item()
    emb = (encoding.embed(x, pos) - encoding.embed(x, pos + shift)).abs().max().item()
    if diff > 1e-4 or emb > 1e-4:
        raise AssertionError(f"declares shift_invariant but shifting positions by {shift} changes "
                             f"attention logits by {diff:.3g} and embeddings by {emb:.3g}")
    return f"logits and embeddings unchanged under a shift of {shift}"


def check_gradients(name: str, shape: CheckShape) -> str:
    """Every learned parameter of the encoding (one that requires a gradient:
    a frozen ``nn.Parameter`` holds a fixed value) gets a gradient (not None,
    not all zero) from one training batch of the first of the shape's tasks
    it can run on, as the trainer computes it: a parameter that never learns is a bug."""
    for task_name, train_length in shape.tasks:
        task = get_task(task_name)
        if encoding_not_applicable(task, build_encoding(name, shape.d_model, shape.n_heads)) is None:
            break
    else:
        return "no task of this shape's preset can run it; nothing to check"
    model = _model(name, shape.size, vocab=task.vocab_size).train()
    learned = [(n, p) for n, p in position_parameters(model) if p.requires_grad]
    if not learned:
        return "no learned parameters"
    rng, generator = np.random.default_rng(0), torch.Generator().manual_seed(0)
    for used in range(1, GRADIENT_BATCHES + 1):  # a parameter a hook uses only sometimes may miss one batch
        batch = make_batch(task, rng, rng.integers(task.min_length, max(task.min_length, train_length) + 1,
                                                   GRADIENT_BATCH))
        tensors = {k: torch.as_tensor(getattr(batch, k)) for k in ("tokens", "targets", "position_ids", "seq_lens")}
        logits = logits_of(model, tensors["tokens"], tensors["position_ids"], tensors["seq_lens"], generator)
        F.cross_entropy(logits.flatten(0, 1), tensors["targets"].flatten(), ignore_index=IGNORE).backward()
        dead = [n for n, p in learned if p.grad is None or not bool(p.grad.abs().sum() > 0)]
        if not dead:
            frozen = sum(1 for _, p in position_parameters(model) if not p.requires_grad)
            return (f"all {len(learned)} learned parameter(s) get a gradient from {used} training batch(es) of "
                    f"{task_name}" + (f"; {frozen} frozen (requires_grad=False) left out" if frozen else ""))
    raise AssertionError(f"learned parameter(s) {', '.join(dead)} got no gradient from {GRADIENT_BATCHES} training "
                         f"batches of {task_name} (lengths 1..{train_length}): they never learn; use them in a hook's "
                         "output, or register them as buffers")


def check_recorded_arguments(name: str, encoding: PositionEncoding) -> str:
    """Every constructor argument beyond ``d_model`` and ``n_heads`` is a
    registered default (so each run's config records it and a preset can set
    it) and reaches ``PositionEncoding.__init__`` (so ``encoding.params`` is
    what was recorded): otherwise two different settings could share one
    record."""
    entry = encoding_entry(name)
    signature = inspect.signature(entry.factory)
    taken = [p.name for p in list(signature.parameters.values())[2:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unregistered = [a for a in taken if a not in entry.defaults]
    if unregistered:
        raise AssertionError(f"constructor argument(s) {', '.join(unregistered)} are not registered defaults, so no "
                             "run config records them: register them, "
                             f"@register_encoding({name!r}, defaults={{{', '.join(repr(a) + ': ...' for a in unregistered)}}})")
    missing = sorted(k for k, v in entry.defaults.items() if k not in encoding.params or encoding.params[k] != v)
    if missing:
        raise AssertionError(f"setting(s) {', '.join(missing)} do not reach PositionEncoding.__init__ (its params are "
                             f"{encoding.params}, the registered ones {entry.defaults}): call "
                             "super().__init__(d_model, n_heads, **settings) with every setting")
    return f"settings {entry.defaults or '{}'} recorded in every run config"


def _run_checks(report: ContractReport, checks) -> ContractReport:
    """Run every ``(name, check)`` and record its result: a failed or raising check never stops the others."""
    for check_name, run in checks:
        try:
            report.results.append(CheckResult(check_name, True, run()))
        except AssertionError as err:
            report.results.append(CheckResult(check_name, False, str(err)))
        except Exception as err:  # noqa: BLE001
            report.results.append(CheckResult(check_name, False, _error(err)))
    return report


def check_encoding(name: str, shapes: Sequence[CheckShape]) -> ContractReport:
    """Every check on one registered encoding, at each shape: forward and
    backward up to 4x the shape's longest test length."""
    entry = encoding_entry(name)
    report = ContractReport(name, entry.source)
    built = {}
    for shape in shapes:
        try:
            built[shape] = build_encoding(name, shape.d_model, shape.n_heads)
        except Exception as err:  # noqa: BLE001  (reported, not raised)
            report.results.append(CheckResult(f"builds ({shape.describe()})", False, f"constructor {_error(err)}"))
            return report
        if not isinstance(built[shape], PositionEncoding):
            report.results.append(CheckResult("builds", False, f"factory returned {type(built[shape]).__name__}, "
                                              "not a PositionEncoding"))
            return report
    first = built[shapes[0]]
    report.n_parameters = encoding_parameter_count(first, shapes[0].size.n_layers)
    report.hooks = first.hooks_used()
    report.results.append(CheckResult("builds", True, f"{type(first).__name__} with {first.params} at "
                                      + "; ".join(s.describe() for s in shapes)))
    checks = [("constructor arguments recorded", lambda: check_recorded_arguments(name, first))]
    for shape in shapes:
        top, size, at = 4 * shape.test_length, shape.size, f" ({shape.describe()})"
        checks += [
            ("hook shapes" + at, lambda enc=built[shape], size=size: check_hook_shapes(enc, size)),
            ("forward/backward" + at,
             lambda size=size, top=top: check_forward_backward(name, size, sorted({1, 7, top // 4, top}))),
            ("eval finiteness" + at, lambda size=size, shape=shape, top=top: check_eval_finite(
                name, size, sorted({shape.test_length, top}))),
            ("causality" + at, lambda size=size: check_causality(name, size)),
            ("eval determinism" + at, lambda size=size: check_eval_determinism(name, size)),
            ("packed examples compute as alone" + at, lambda size=size: check_packing(name, size)),
            ("examples independent" + at, lambda size=size: check_examples_independent(name, size)),
            ("parameters created with the encoding" + at, lambda size=size: check_parameters_fixed(name, size)),
            ("learned parameters get gradients" + at, lambda shape=shape: check_gradients(name, shape)),
        ]
        if first.shift_invariant:
            checks.append(("shift invariance" + at,
                           lambda enc=built[shape], size=size: check_shift_invariance(enc, size)))
    return _run_checks(report, checks)


FAMILY_SEEDS = (3, 4)  # init seeds of the two runs the seeding check builds


def _family_model(name: str, size: ModelSize, seed: int = FAMILY_SEEDS[0], vocab: int = VOCAB) -> RunModel:
    make = lambda: build_encoding("nope", size.d_model, size.n_heads)  # noqa: E731  (used by families that take one)
    return build_model(name, vocab, size, seed, make)


def check_family_forward(name: str, size: ModelSize, lengths: list[int]) -> str:
    """One run's model maps ``(B, T)`` tokens to finite ``(B, T, V)`` logits
    with finite gradients at every length."""
    model = _family_model(name, size).train()
    if not isinstance(model, torch.nn.Module):
        raise AssertionError(f"the builder returned a {type(model).__name__}, not an nn.Module")
    for t in lengths:
        tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(t))
        model.zero_grad()
        logits = _forward(model, tokens)
        _finite_step(model, logits, (BATCH, t, VOCAB), t, " (batch, tokens, vocabulary)")
    return f"finite (batch, tokens, vocabulary) logits and gradients at lengths {', '.join(map(str, lengths))}"


def check_family_causality(name: str, size: ModelSize, t: int = 24) -> str:
    model = _family_model(name, size).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(1))
    return _causal(lambda x: _forward(model, x), tokens, "the model reads the future")


def check_family_determinism(name: str, size: ModelSize, t: int = 16) -> str:
    model = _family_model(name, size).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        diff = (_forward(model, tokens) - _forward(model, tokens)).abs().max().item()
    if diff > 0:
        raise AssertionError(f"two eval passes differ by {diff:.3g}")
    return "identical outputs in two eval passes"


def check_family_seeding(name: str, size: ModelSize, t: int = 12) -> str:
    """The run's init seed decides its weights: the same seed gives the same
    outputs, another seed other outputs (a builder that reseeds or shares
    weights between runs would make seeds meaningless)."""
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        first, again, other = (_forward(_family_model(name, size, seed).eval(), tokens)
                               for seed in (FAMILY_SEEDS[0], FAMILY_SEEDS[0], FAMILY_SEEDS[1]))
    diff = (first - again).abs().max().item()
    if diff > 0:
        raise AssertionError(f"two models built from init seed {FAMILY_SEEDS[0]} differ by {diff:.3g} (draw every "
                             "weight from torch's default random stream, which the harness seeds)")
    if (first - other).abs().max().item() == 0:
        raise AssertionError(f"init seeds {FAMILY_SEEDS[0]} and {FAMILY_SEEDS[1]} give the same outputs (do not "
                             "reseed inside the builder: the harness seeds each run)")
    return f"init seed {FAMILY_SEEDS[0]} twice gives the same outputs, seed {FAMILY_SEEDS[1]} other outputs"


def check_family_gradients(name: str, shape: CheckShape) -> str:
    """Every learned parameter gets a gradient from a training batch of the shape's first task."""
    task_name, train_length = shape.tasks[0]
    task = get_task(task_name)
    model = _family_model(name, shape.size, seed=0, vocab=task.vocab_size).train()
    rng = np.random.default_rng(0)
    batch = make_batch(task, rng, rng.integers(task.min_length, max(task.min_length, train_length) + 1,
                                               GRADIENT_BATCH))
    tokens, targets = torch.as_tensor(batch.tokens), torch.as_tensor(batch.targets)
    logits = _forward(model, tokens)
    F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE).backward()
    dead = [n for n, p in model.named_parameters()
            if p.requires_grad and (p.grad is None or not bool(p.grad.abs().sum() > 0))]
    if dead:
        raise AssertionError(f"parameter(s) {', '.join(dead)} got no gradient from a training batch of {task_name}: "
                             "they never learn")
    return f"every learned parameter gets a gradient from a training batch of {task_name}"


def check_family_flops(name: str, size: ModelSize) -> str:
    flops = family_entry(name).flops
    if flops is None:
        raise AssertionError("declares no FLOPs (register_family(..., flops=...)), so run --plan refuses to cost it")
    value = flops(np.array([5, 9]), size, VOCAB)
    longer = flops(np.array([10, 18]), size, VOCAB)
    if not (np.isfinite(value) and 0 < value < longer):
        raise AssertionError(f"flops gives {value!r} for token lengths 5 and 9 and {longer!r} for 10 and 18; expected "
                             "positive numbers that grow with length")
    return f"{value:.3g} forward FLOPs for token lengths 5 and 9"


def check_family(name: str, shapes: Sequence[CheckShape]) -> ContractReport:
    """Every check of the model-family contract, at each shape."""
    entry = family_entry(name)
    report = ContractReport(name, entry.source, kind="model family")
    try:
        model = _family_model(name, shapes[0].size, seed=0)
        report.n_parameters = sum(p.numel() for p in model.parameters())
    except Exception as err:  # noqa: BLE001  (reported, not raised)
        report.results.append(CheckResult("builds", False, f"build {_error(err)}"))
        return report
    report.results.append(CheckResult("builds", True, f"{type(model).__name__} at "
                                      + "; ".join(s.describe() for s in shapes)))
    checks = [("FLOPs declared", lambda: check_family_flops(name, shapes[0].size))]
    for shape in shapes:
        size, at, top = shape.size, f" ({shape.describe()})", shape.test_length
        checks += [
            ("forward/backward" + at, lambda size=size, top=top: check_family_forward(name, size, sorted({1, 7, top}))),
            ("causality" + at, lambda size=size: check_family_causality(name, size)),
            ("eval determinism" + at, lambda size=size: check_family_determinism(name, size)),
            ("each run's seed decides its weights" + at, lambda size=size: check_family_seeding(name, size)),
            ("examples independent" + at, lambda size=size: _examples_independent(
                lambda x, model=_family_model(name, size).eval(): _forward(model, x),
                torch.randint(0, VOCAB, (4, 12), generator=torch.Generator().manual_seed(7)),
                "the model mixes examples")),
            ("parameters created with the model" + at,
             lambda size=size: _parameters_fixed(_family_model(name, size), "model")),
            ("parameters get gradients" + at, lambda shape=shape: check_family_gradients(name, shape)),
        ]
        if model.packs_sequences:  # the trainer packs its batches: each example must compute as alone
            checks.append(("packed examples compute as alone" + at, lambda size=size: _packing(
                _family_model(name, size), "a token may read only its own example's tokens (`segments`)")))
    return _run_checks(report, checks)
