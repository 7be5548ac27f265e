"""The position-encoding contract, as executable checks.

``check_encoding(name)`` runs one registered encoding through every check
and returns a ``ContractReport``; ``lengthbench check FILE.py`` prints one
per encoding the file registers. Every check runs and reports, even after
another one failed.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import torch

from lengthbench.models.encodings.base import (
    PositionContext,
    PositionEncoding,
    PositionsOutOfRange,
    build_encoding,
    encoding_entry,
)
from lengthbench.models.families import ModelSize, RunInit
from lengthbench.models.transformer import Transformer

CHECK_SIZE = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
VOCAB = 16
BATCH = 2
TOLERANCE = 1e-5


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str


@dataclass
class ContractReport:
    encoding: str
    source: str
    n_parameters: int | None = None
    hooks: list[str] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    def format(self) -> str:
        lines = [f"encoding {self.encoding!r} ({self.source}): {'PASS' if self.passed else 'FAIL'}",
                 f"  parameters: {self.n_parameters if self.n_parameters is not None else 'n/a'}; "
                 f"hooks: {', '.join(self.hooks) or 'none'}"]
        lines += [f"  [{'ok' if r.passed else 'FAIL'}] {r.name}: {r.detail}" for r in self.results]
        return "\n".join(lines)


def _error(err: BaseException) -> str:
    frame = traceback.extract_tb(err.__traceback__)[-1]
    return f"raised {type(err).__name__}: {err} (at {frame.filename.split('/')[-1]}:{frame.lineno})"


def _model(name: str, seed: int = 0) -> Transformer:
    return Transformer(VOCAB, CHECK_SIZE, [RunInit(seed, lambda: build_encoding(name, CHECK_SIZE.d_model,
                                                                                 CHECK_SIZE.n_heads))])


def _forward(model: Transformer, tokens, seed=0):
    """The logits of a one-run model for ``(B, T)`` tokens."""
    position_ids = torch.arange(tokens.shape[1]).expand_as(tokens)
    seq_lens = torch.full((tokens.shape[0],), tokens.shape[1])
    return model.run_logits(tokens, position_ids, seq_lens, torch.Generator().manual_seed(seed))


def check_hook_shapes(encoding: PositionEncoding, t: int = 9) -> str:
    """Each hook returns what the model expects; returns a description."""
    b, h, dh = BATCH, CHECK_SIZE.n_heads, CHECK_SIZE.d_model // CHECK_SIZE.n_heads
    ids = torch.arange(t).expand(b, t)
    ctx = PositionContext(b, t, torch.full((b,), t), True, torch.Generator().manual_seed(0))
    base = ids if encoding.uses_task_positions else ids[:1]
    pos = encoding.positions(base, ctx)
    if pos.dim() != 2 or pos.shape[1] != t or pos.shape[0] not in (1, b):
        raise AssertionError(f"positions returned shape {tuple(pos.shape)}; expected (1 or {b}, {t})")
    x = torch.randn(b, t, CHECK_SIZE.d_model)
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
    content = encoding.content_bias(rq, rk, pos)
    if content is not None and content.shape != (b, h, t, t):
        raise AssertionError(f"content_bias returned shape {tuple(content.shape)}; expected {(b, h, t, t)}")
    return f"positions {tuple(pos.shape)}, embed/rotate keep shapes" + (
        f", bias {tuple(bias.shape)}" if bias is not None else ", no bias") + (
        f", content bias {tuple(content.shape)}" if content is not None else "")


def check_forward_backward(name: str, lengths: list[int]) -> str:
    """Finite outputs and gradients at every length; a length past what the
    encoding can represent (``PositionsOutOfRange``, e.g. a table too short)
    is reported as unsupported, as the harness records it, not as a failure;
    the shortest length must run."""
    model = _model(name).train()
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
        if logits.shape != (BATCH, t, VOCAB):
            raise AssertionError(f"logits shape {tuple(logits.shape)} at length {t}; "
                                 f"expected {(BATCH, t, VOCAB)}")
        if not torch.isfinite(logits).all():
            raise AssertionError(f"non-finite outputs at length {t}")
        logits.float().pow(2).mean().backward()
        for pname, p in model.named_parameters():
            if p.grad is not None and not torch.isfinite(p.grad).all():
                raise AssertionError(f"non-finite gradient of {pname} at length {t}")
    ran = [t for t in lengths if t not in unsupported]
    return f"finite outputs and gradients at lengths {', '.join(map(str, ran))}" + (
        f"; unsupported (recorded as such in a grid) at {', '.join(map(str, unsupported))}" if unsupported else "")


def check_eval_finite(name: str, lengths: list[int]) -> str:
    """Finite outputs in eval mode (what evaluation runs) at every length; a
    length the encoding cannot represent is skipped, as in forward/backward."""
    model = _model(name).eval()
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


def check_causality(name: str, t: int = 24) -> str:
    model = _model(name).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = _forward(model, tokens)
        for cut in (0, t // 3, t - 2):
            changed = tokens.clone()
            changed[:, cut + 1:] = (changed[:, cut + 1:] + 7) % VOCAB
            diff = (_forward(model, changed)[:, : cut + 1] - reference[:, : cut + 1]).abs().max().item()
            if diff > TOLERANCE:
                raise AssertionError(f"outputs at positions <= {cut} changed by {diff:.3g} when only "
                                     f"tokens after {cut} changed (the encoding leaks the future)")
    return f"outputs at <= t unchanged by tokens after t (t = 0, {t // 3}, {t - 2})"


def check_eval_determinism(name: str, t: int = 16) -> str:
    model = _model(name).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, t), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a, b = _forward(model, tokens, seed=5), _forward(model, tokens, seed=5)
    diff = (a - b).abs().max().item()
    if diff > 0:
        raise AssertionError(f"two eval passes with the same generator seed differ by {diff:.3g} "
                             "(use ctx.generator for any randomness)")
    return "identical outputs for the same generator seed"


def check_shift_invariance(encoding: PositionEncoding, t: int = 12, shift: int = 37) -> str:
    """Attention logits (rotate + bias) and embeddings unchanged when every
    position moves by the same amount."""
    h, dh = CHECK_SIZE.n_heads, CHECK_SIZE.d_model // CHECK_SIZE.n_heads
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, h, t, dh, generator=gen), torch.randn(1, h, t, dh, generator=gen)
    x = torch.randn(1, t, CHECK_SIZE.d_model, generator=gen)

    def logits(pos):
        rq, rk = encoding.rotate(q, k, pos)
        scores = rq @ rk.transpose(-1, -2)
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


def check_encoding(name: str, longest_test_length: int) -> ContractReport:
    """Every check on one registered encoding; forward/backward runs up to 4x
    ``longest_test_length`` (the longest length any preset evaluates)."""
    entry = encoding_entry(name)
    report = ContractReport(name, entry.source)
    try:
        encoding = build_encoding(name, CHECK_SIZE.d_model, CHECK_SIZE.n_heads)
    except Exception as err:  # noqa: BLE001  (reported, not raised)
        report.results.append(CheckResult("builds", False, f"constructor {_error(err)}"))
        return report
    if not isinstance(encoding, PositionEncoding):
        report.results.append(CheckResult("builds", False, f"factory returned {type(encoding).__name__}, "
                                          "not a PositionEncoding"))
        return report
    report.n_parameters = sum(p.numel() for p in encoding.parameters())
    report.hooks = encoding.hooks_used()
    report.results.append(CheckResult("builds", True, f"{type(encoding).__name__} with {encoding.params}"))
    top = 4 * longest_test_length
    checks = [
        ("hook shapes", lambda: check_hook_shapes(encoding)),
        ("forward/backward", lambda: check_forward_backward(name, sorted({1, 7, top // 4, top}))),
        ("eval finiteness", lambda: check_eval_finite(name, sorted({longest_test_length, top}))),
        ("causality", lambda: check_causality(name)),
        ("eval determinism", lambda: check_eval_determinism(name)),
    ]
    if encoding.shift_invariant:
        checks.append(("shift invariance", lambda: check_shift_invariance(encoding)))
    for check_name, run in checks:
        try:
            report.results.append(CheckResult(check_name, True, run()))
        except AssertionError as err:
            report.results.append(CheckResult(check_name, False, str(err)))
        except Exception as err:  # noqa: BLE001
            report.results.append(CheckResult(check_name, False, _error(err)))
    return report
