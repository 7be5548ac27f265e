"""The state-space baseline: its chunked scan is the recurrence, the model is
causal and seeded, it learns, and ``full`` sizes it fairly."""

from dataclasses import replace

import pytest
import torch

from lengthbench.benchmark.evaluate import evaluate_length
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.train import train_run
from lengthbench.models.families import ModelSize, build_model, n_parameters
from lengthbench.models.state_space import StateSpace, chunked_scan, naive_scan
from lengthbench.tasks import get_task

CPU = torch.device("cpu")
SIZE = ModelSize(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def _scan_inputs(length: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, length, 2, 4, generator=g, dtype=torch.float64, requires_grad=True)
    log_decay = (-3 * torch.rand(3, length, 2, generator=g, dtype=torch.float64)).requires_grad_()
    b = torch.randn(3, length, 5, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(3, length, 5, generator=g, dtype=torch.float64, requires_grad=True)
    return x, log_decay, b, c


@pytest.mark.parametrize(("length", "chunk"), [(1, 32), (7, 32), (40, 8), (45, 16), (45, 1), (70, 32)])
def test_the_chunked_scan_equals_the_step_by_step_recurrence_and_its_gradients(length, chunk):
    inputs = _scan_inputs(length)
    expected, got = naive_scan(*inputs), chunked_scan(*inputs, chunk=chunk)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)
    weights = torch.randn_like(expected)
    grads = [torch.autograd.grad((f(*inputs) * weights).sum(), inputs) for f in
             (naive_scan, lambda *a: chunked_scan(*a, chunk=chunk))]
    for g_naive, g_chunked in zip(*grads):
        torch.testing.assert_close(g_chunked, g_naive, rtol=1e-9, atol=1e-9)


def test_a_strong_decay_over_a_long_chunk_stays_finite():
    """exp(-1e4) underflows to 0: a scan that divided by a running product would give inf or nan."""
    x, log_decay, b, c = (v.detach() for v in _scan_inputs(64))
    log_decay = torch.full_like(log_decay, -300.0)
    out = chunked_scan(x, log_decay, b, c, chunk=64)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, naive_scan(x, log_decay, b, c))


def test_the_model_is_causal_and_seeded():
    torch.set_default_dtype(torch.float64)
    try:
        model = build_model("ssm", 11, SIZE, 3).eval()
        tokens = torch.randint(0, 11, (4, 40), generator=torch.Generator().manual_seed(0))
        out = model(tokens)
        assert out.shape == (4, 40, 11)
        torch.testing.assert_close(build_model("ssm", 11, SIZE, 3).eval()(tokens), out, rtol=0, atol=0)
        assert not torch.allclose(build_model("ssm", 11, SIZE, 4).eval()(tokens), out)  # runs differ by seed
        changed = tokens.clone()
        changed[..., 35:] = (changed[..., 35:] + 3) % 11  # past the first scan chunk: the carried state
        torch.testing.assert_close(model(changed)[..., :35, :], out[..., :35, :])
        assert not torch.allclose(model(changed)[..., 35:, :], out[..., 35:, :])
    finally:
        torch.set_default_dtype(torch.float32)


def test_a_width_the_heads_cannot_split_is_refused_by_value():
    with pytest.raises(ValueError, match="multiple of 8, not 20"):
        StateSpace(11, ModelSize(d_model=20))


@pytest.mark.slow
def test_it_learns_copy_beyond_the_reach_of_its_convolutions():
    """Copy of up to 6 symbols, scored on held-out strings: an output token
    reads its source 7 tokens back, beyond what two width-4 convolutions
    reach (6), so only the recurrence can carry it."""
    preset = get_preset("full")
    config = replace(preset.run_config("copy", "", 0, "ssm"), steps=450, train_length=6, lr=3e-3, warmup_steps=20,
                     eval_samples=128, model=ModelSize(d_model=32, n_layers=2), fit_check_every=0)
    task = get_task("copy")
    model = config.build_model(task.vocab_size)
    train_run(model, task, config, CPU)
    scores = [evaluate_length(model, task, n, config, CPU)["exact_match"] for n in range(1, 7)]
    assert min(scores) >= 0.9, scores


def test_full_gives_every_family_about_the_transformers_parameter_count():
    preset = get_preset("full")
    counts = {}
    for family in preset.families:
        config = preset.run_config("copy", "rope" if family == "transformer" else "", 0, family)
        counts[family] = n_parameters(config.build_model(get_task("copy").vocab_size))
    reference = counts.pop("transformer")
    assert all(abs(n / reference - 1) < 0.1 for n in counts.values()), (reference, counts)
