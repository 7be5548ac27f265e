"""Encoding contract: causality for every encoding, randomized positions,
ALiBi slopes, RoPE relativity, out-of-range tables."""

from dataclasses import replace

import pytest
import torch

from lengthbench.models import ModelSize, build_encoding, build_model, encoding_names
from lengthbench.models.contract import logits_of
from lengthbench.models.encodings import PositionsOutOfRange, encoding_entry
from lengthbench.models.encodings.alibi import alibi_slopes
from lengthbench.models.encodings.randomized import random_sorted_positions

SIZE = ModelSize(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def make_model(name, **params):
    model = build_model("transformer", 12, SIZE, 0, lambda: build_encoding(name, SIZE.d_model, SIZE.n_heads, params))
    return model.eval()


@pytest.mark.parametrize("name", encoding_names())
@pytest.mark.parametrize("t", [1, 5, 9])
def test_causality(name, t):
    """Changing tokens after position t never changes outputs at <= t."""
    model = make_model(name)
    torch.manual_seed(1)
    tokens = torch.randint(0, 12, (3, 10))
    pos = torch.arange(10).expand(3, 10)
    changed = tokens.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 5) % 12
    seq_lens = torch.full((3,), 10)
    a = logits_of(model, tokens, pos, seq_lens, torch.Generator().manual_seed(3))
    b = logits_of(model, changed, pos, seq_lens, torch.Generator().manual_seed(3))
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])


@pytest.mark.parametrize("seed", range(5))
def test_randomized_positions_sorted_distinct_in_range(seed):
    seq_lens = torch.tensor([1, 7, 20, 13])
    pos = random_sorted_positions(seq_lens, 20, 50, torch.Generator().manual_seed(seed))
    for row, n in enumerate(seq_lens.tolist()):
        real = pos[row, :n]
        assert (real[1:] > real[:-1]).all()
        assert real.min() >= 0 and real.max() < 50
    assert (pos >= 0).all() and (pos < 50).all()


def test_randomized_positions_differ_per_example():
    pos = random_sorted_positions(torch.full((8,), 10), 10, 1000, torch.Generator().manual_seed(0))
    assert len({tuple(r.tolist()) for r in pos}) == 8


def test_randomized_positions_cover_range():
    """The subset is uniform: the first position is spread over [0, max_len - n]."""
    pos = random_sorted_positions(torch.full((4000,), 3), 3, 20, torch.Generator().manual_seed(0))
    assert set(pos[:, 0].tolist()) == set(range(18))
    assert set(pos[:, 2].tolist()) == set(range(2, 20))


def test_randomized_used_in_eval_and_reproducible():
    model = make_model("randomized-rope", max_len=64)
    tokens = torch.randint(0, 12, (2, 8))
    a = logits_of(model, tokens, None, None, torch.Generator().manual_seed(5))
    b = logits_of(model, tokens, None, None, torch.Generator().manual_seed(5))
    c = logits_of(model, tokens, None, None, torch.Generator().manual_seed(6))
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, c)


def test_alibi_slopes_match_press():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head list
    expected = [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]
    assert torch.allclose(alibi_slopes(6), torch.tensor(expected))


def test_rope_dot_product_depends_only_on_distance():
    enc = build_encoding("rope", 16, 2)
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)

    def score(i, j):
        qi, _ = enc.rotate(q, q, torch.tensor([[i]]))
        _, kj = enc.rotate(k, k, torch.tensor([[j]]))
        return (qi * kj).sum(-1)

    torch.testing.assert_close(score(7, 3), score(107, 103))
    assert not torch.allclose(score(7, 3), score(7, 2))


def test_learned_table_too_short_is_reported():
    model = make_model("learned", max_positions=6)
    with pytest.raises(PositionsOutOfRange, match="6 positions"):
        logits_of(model, torch.zeros(1, 8, dtype=torch.long))


def test_coupled_offsets_only_in_training():
    enc = build_encoding("coupled", 16, 2, {"max_positions": 40})
    from lengthbench.models.encodings import PositionContext

    pos = torch.tensor([[0, 1, 2, 0, 1, 2]]).expand(64, 6)
    train = enc.positions(pos, PositionContext(64, 6, None, True, torch.Generator().manual_seed(0)))
    offsets = train - pos
    assert (offsets == offsets[:, :1]).all()  # one offset per example
    assert offsets.min() >= 0 and train.max() < 40 and offsets.unique().numel() > 10
    test = enc.positions(pos, PositionContext(64, 6, None, False, None))
    assert torch.equal(test, pos)


def test_unknown_encoding_lists_choices():
    with pytest.raises(ValueError, match=r"unknown encoding 'ropee' \(did you mean 'rope'\?\); valid choices: .*rope"):
        build_encoding("ropee", 16, 2)


def test_unknown_encoding_parameter():
    with pytest.raises(ValueError, match="no parameter 'bse'; valid: base"):
        build_encoding("rope", 16, 2, {"bse": 3})


@pytest.mark.parametrize("name", ["alibi", "kerple-log", "kerple-power", "randomized-alibi"])
def test_distance_biases_non_increasing_at_init(name):
    enc = build_encoding(name, 16, 4)
    pos = torch.arange(40)[None]
    row = enc.bias(pos, pos)[0, :, -1, :]  # last query, every key: distance 39..0
    assert (row[:, 1:] >= row[:, :-1] - 1e-6).all()  # bias grows as keys get closer


@pytest.mark.parametrize("name", ["alibi", "t5", "kerple-log", "kerple-power"])
def test_relative_biases_shift_invariant(name):
    enc = build_encoding(name, 16, 4)
    pos = torch.arange(30)[None]
    torch.testing.assert_close(enc.bias(pos, pos), enc.bias(pos + 77, pos + 77))


def test_fire_uses_max_not_min():
    """psi(max(L, i)): for queries below L the normaliser is psi(L)."""
    enc = build_encoding("fire", 16, 2, {"L_init": 20.0})
    pos = torch.arange(8)[None]
    lifted = enc.bias(pos, pos)
    # below the threshold, the normaliser is constant, so the bias depends on i - j only
    torch.testing.assert_close(lifted[0, :, 5, 2], lifted[0, :, 7, 4])
    big = torch.arange(100, 108)[None]
    assert not torch.allclose(enc.bias(big, big)[0, :, 5, 2], lifted[0, :, 5, 2])


@pytest.mark.parametrize("name", ["kerple-log", "kerple-power"])
def test_kerple_bounds_project_the_stored_parameters_after_every_step(name):
    """As the authors' code keeps them: a parameter below its bound is put
    back on it by the trainer's step, and on the bound it keeps its gradient
    and moves (a clamp in the forward pass alone left it below, gradient-free,
    while weight decay pushed it further down)."""
    from lengthbench.benchmark.presets import get_preset
    from lengthbench.benchmark.train import train_run
    from lengthbench.models.encodings.kerple import MIN_PARAM
    from lengthbench.tasks import get_task

    config = replace(get_preset("quick").run_config("copy", name, 0), steps=20, warmup_steps=5)
    model = config.build_model(get_task("copy").vocab_size)
    encoding = model.encoding
    with torch.no_grad():
        encoding.r1.fill_(MIN_PARAM / 10)
    train_run(model, get_task("copy"), config, torch.device("cpu"))
    assert encoding.r1.min() >= MIN_PARAM and encoding.r2.min() >= MIN_PARAM
    assert (encoding.r1 > MIN_PARAM).any()  # moved off the bound it was put on


@pytest.mark.parametrize("name, r1_top, r2_top", [("kerple-log", 2.0, 1.0), ("kerple-power", 1.0, 2.0)])
def test_kerple_starts_from_the_authors_per_head_uniform_draws(name, r1_top, r2_top):
    """log: r1 ~ U(0, 2), r2 ~ U(0, 1); power: r1 ~ U(0, 1), r2 ~ U(0, 2),
    each projected onto its bound (version 1 started every head at r1 = 1)."""
    torch.manual_seed(0)
    drawn = [build_encoding(name, 16, 8) for _ in range(40)]
    for which, top in (("r1", r1_top), ("r2", r2_top)):
        values = torch.stack([getattr(e, which).detach() for e in drawn])
        assert values.min() >= 0.01 and values.max() <= top
        assert values.max() > 0.9 * top and values.std() > 0.2 * top  # spread over the whole range
        assert values[0].unique().numel() == 8  # one draw per head


def test_fire_threshold_moves_at_the_papers_rate():
    """L = |m * L_init| with the multiplier m learned (the paper's listing):
    an Adam step moves m by about the learning rate, so L by about L_init
    times it; a threshold learned directly moved by the learning rate alone."""
    from lengthbench.benchmark.adamw import FusedAdamW

    encoding = build_encoding("fire", 16, 2, {"L_init": 32.0})
    pos = torch.arange(16)[None]  # every query below L: the normaliser is psi(L)
    before = float(encoding.threshold)
    optimizer = FusedAdamW(encoding.parameters(), lr=1e-3, weight_decay=0.0)
    encoding.bias(pos, pos).square().sum().backward()
    optimizer.step()
    assert abs(float(encoding.threshold) - before) == pytest.approx(32.0 * 1e-3, rel=0.05)


def test_t5_buckets():
    from lengthbench.models.encodings.t5 import t5_bucket

    d = torch.tensor([0, 1, 15, 16, 50, 127, 128, 5000])
    b = t5_bucket(d, 32, 128)
    assert b[:3].tolist() == [0, 1, 15] and b[3] == 16
    assert (b[1:] >= b[:-1]).all() and b.max() == 31 and b[-1] == 31


@pytest.mark.parametrize("name", ["kerple-power", "kerple-log", "fire", "t5"])
def test_gradients_finite(name):
    model = make_model(name).train()
    out = logits_of(model, torch.randint(0, 12, (2, 12)))
    out.sum().backward()
    for p in model.parameters():
        assert p.grad is None or torch.isfinite(p.grad).all()


def test_xpos_logit_is_rope_times_the_distance_decay():
    """Pair t (dimensions 2t, 2t + 1) of q_i . k_j: cos((i-j) theta_t) * zeta_t^((i-j)/gamma), for unit q and k
    on pair t."""
    enc = build_encoding("xpos", 16, 2)
    d_head, half, gamma = 8, 4, 512.0
    pos = torch.tensor([[0, 5, 40, 300]])
    for t in range(half):
        unit = torch.zeros(1, 1, 4, d_head)
        unit[..., 2 * t] = 1.0
        q, k = enc.rotate(unit, unit, pos)
        logits = (q @ k.transpose(-1, -2))[0, 0]
        theta = 10000.0 ** (-2 * t / d_head)
        zeta = (t / half + 0.4) / 1.4
        for i in range(4):
            for j in range(4):
                d = float(pos[0, i] - pos[0, j])
                expected = torch.cos(torch.tensor(d * theta)) * zeta ** (d / gamma)
                torch.testing.assert_close(logits[i, j], expected.float(), rtol=1e-4, atol=1e-5)


def test_cope_positions_and_bias_follow_the_definition():
    """p_ij = sum_{m=j..i} sigmoid(q_i.k_m/sqrt(d)) (capped), bias = q_i . e interpolated at p_ij."""
    from lengthbench.models.encodings.cope import cope_positions

    torch.manual_seed(0)
    enc = build_encoding("cope", 16, 2, {"max_positions": 4})
    with torch.no_grad():
        enc.table.normal_()
    q, k = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    with torch.no_grad():
        p, bias = cope_positions(q, k, 4), enc.content_bias(q, k, None)
    for h in range(2):
        for i in range(6):
            for j in range(i + 1):
                gates = [torch.sigmoid(q[0, h, i] @ k[0, h, m] / 8 ** 0.5) for m in range(j, i + 1)]
                expected_p = min(float(sum(gates)), 3.0)
                assert float(p[0, h, i, j]) == pytest.approx(expected_p, abs=1e-5)
                lo, hi = int(expected_p // 1), min(int(-(-expected_p // 1)), 3)
                e = (enc.table[:, lo] * (1 - (expected_p - lo)) + enc.table[:, hi] * (expected_p - lo)).detach()
                assert float(bias[0, h, i, j]) == pytest.approx(float(q[0, h, i] @ e), abs=1e-4)
            assert (p[0, h, i, i + 1:] == 0).all()


def test_abacus_offsets_digits_only_and_only_in_training():
    """Digits (ids > 0) move by one offset k in [0, 100) per batch; non-digits stay 0; no offset at test."""
    import numpy as np

    from lengthbench.models.encodings import PositionContext
    from lengthbench.tasks import get_task, make_batch

    enc = build_encoding("abacus", 16, 2)
    batch = make_batch(get_task("addition"), np.random.default_rng(0), np.array([3, 5, 2, 4]))
    ids = torch.from_numpy(batch.position_ids)
    seen = set()
    for seed in range(30):
        ctx = PositionContext(4, ids.shape[1], None, True, torch.Generator().manual_seed(seed))
        moved = enc.positions(ids, ctx)
        offsets = (moved - ids)[ids > 0]
        assert (moved[ids == 0] == 0).all() and offsets.unique().numel() == 1
        seen.add(int(offsets[0]))
    assert min(seen) >= 0 and max(seen) < 100 and len(seen) > 10
    assert torch.equal(enc.positions(ids, PositionContext(4, ids.shape[1], None, False, None)), ids)


def test_abacus_ids_are_digit_significance_and_numeric_tasks_only():
    import numpy as np

    from lengthbench.tasks import get_task, task_names

    # BOS a3 a2 a1 a0 + b3 b2 b1 b0 SEP c0 c1 c2 c3 EOS: each digit's index from the least significant
    sample = get_task("addition").sample(np.random.default_rng(0), 3, 1)
    assert list(sample.coupled_ids[0]) == [0, 4, 3, 2, 1, 0, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5]
    enc = build_encoding("abacus", 16, 2)
    runs = {name for name in task_names() if enc.not_applicable(get_task(name)) is None}
    assert runs == {"addition", "multiplication", "binary_addition", "binary_multiplication"}


@pytest.mark.parametrize("name", [n for n in encoding_names() if encoding_entry(n).source == "built-in"])
def test_every_built_in_encoding_passes_the_contract(name):
    """What ``lengthbench check`` runs on a plugin, every built-in passes too. A table
    too short for the longest check length is reported as unsupported there, as a
    grid records it (``coupled``, ``abacus``), not as a failure."""
    from lengthbench.models.contract import CheckShape, check_encoding

    report = check_encoding(name, [CheckShape("test", 32, 4, 16, (("copy", 8), ("addition", 8)))])
    assert report.passed, report.format()


def test_saturation_study_counts_identical_pairs(tmp_path):
    """``python -m lengthbench.benchmark.tools.saturation``: both position ranges run, and a pair counts as identical
    only when its per-length accuracies all agree."""
    import pandas as pd

    from lengthbench.benchmark.tools import saturation

    frame = saturation.measure(tmp_path, workers=1, budget="smoke", tasks=("parity_check",))
    assert set(frame.max_len) == {64, 2048} and frame.method.nunique() == 6
    rows = [dict(max_len=64, method=f"transformer/{m}", task=t, length=n, split=["id", "val", "ood"][n - 1],
                 token_accuracy=acc)
            for m, t, accs in [("randomized-t5", "copy", [1, 0.5, 0.25]), ("t5", "copy", [1, 0.5, 0.25]),
                               ("randomized-t5", "even_pairs", [1, 0.5, 0.1]), ("t5", "even_pairs", [1, 0.4, 0.1])]
            for n, acc in enumerate(accs, start=1)]
    text = saturation.report(pd.DataFrame(rows))
    assert "randomized-t5 == t5 (identical per-length token accuracy) on 1 of 2 tasks: copy" in text
    table = text.split("the band this choice is judged on:")[1]  # the validation band's numbers, not the test band's
    assert "40.0" in table and "50.0" in table and "10.0" not in table and "25.0" not in table


def test_contract_checks_the_content_bias_shape():
    from lengthbench.models.contract import check_hook_shapes
    from lengthbench.models.families import ModelSize

    size_32 = ModelSize(d_model=32, n_layers=2, n_heads=4, d_ff=64)
    from lengthbench.models.encodings import PositionEncoding

    class WrongShape(PositionEncoding):
        def content_bias(self, q, k, pos):
            return q.new_zeros(q.shape[-2], q.shape[-2])  # (T, T): no batch or head dimension

    with pytest.raises(AssertionError, match="content_bias returned shape"):
        check_hook_shapes(WrongShape(32, 4), size_32)
    assert "content bias" in check_hook_shapes(build_encoding("cope", 32, 4), size_32)


def test_encoding_kind_follows_the_hooks_an_encoding_overrides():
    from lengthbench.models.encodings import encoding_kind

    expected = {"nope": "none", "learned": "absolute", "sinusoidal": "absolute", "rope": "rotary",
                "xpos": "rotary", "alibi": "relative bias", "t5": "relative bias", "fire": "relative bias",
                "cope": "contextual", "coupled": "task-structured", "abacus": "task-structured",
                "randomized-rope": "randomized", "no-such-encoding": "other"}
    assert {name: encoding_kind(name) for name in expected} == expected


def test_absolute_positions_are_added_at_the_token_embeddings_scale():
    from lengthbench.models.encodings.base import EMBEDDING_STD

    h = torch.zeros(1, 400, 64)
    added = build_encoding("sinusoidal", 64, 4).embed(h, torch.arange(400)[None])
    assert added.pow(2).mean().sqrt().item() == pytest.approx(EMBEDDING_STD, rel=0.02)
    assert build_encoding("learned", 64, 4).table.weight.std().item() == pytest.approx(EMBEDDING_STD, rel=0.05)


@pytest.mark.slow
def test_sinusoidal_fits_even_pairs_in_distribution_at_the_suite_budget():
    """At unit amplitude on std-0.02 tokens it fitted 54% in distribution; at the tokens' scale it fits."""
    from lengthbench.benchmark.presets import get_preset
    from lengthbench.benchmark.runner import execute_run

    record = execute_run(get_preset("suite").run_config("even_pairs", "sinusoidal", 0), torch.device("cpu"))
    assert record.summary["id_exact_match"] >= 0.9, record.summary


@pytest.mark.parametrize("mask_kind", ["causal", "boolean", "float"])
def test_attention_written_out_equals_the_kernel(mask_kind, monkeypatch):
    """In training with several CPU threads attention is written out
    (``attend``); it is the same function as ``scaled_dot_product_attention``,
    forward and backward."""
    import torch.nn.functional as F

    from lengthbench.models.transformer import allowed_keys, attend

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 7, 8, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    segments = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [0] * 7, [0, 1, 1, 2, 2, 2, -1]])
    mask = {"causal": None, "boolean": allowed_keys(7, q.device, segments),
            "float": torch.randn(3, 2, 7, 7, generator=g, dtype=torch.float64).masked_fill(
                ~allowed_keys(7, q.device, segments), float("-inf"))}[mask_kind]
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    written_out = attend(q, k, v, mask, 0.0)
    kernel = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
    torch.testing.assert_close(written_out, kernel, rtol=1e-12, atol=1e-12)
    weights = torch.randn(written_out.shape, generator=g, dtype=torch.float64)
    for a, b in zip(torch.autograd.grad((written_out * weights).sum(), (q, k, v)),
                    torch.autograd.grad((kernel * weights).sum(), (q, k, v))):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def _example(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", [n for n in encoding_names() if not build_encoding(n, 64, 4).uses_task_positions])
def test_an_encoding_in_your_own_transformer_computes_what_ours_does(name):
    """The recipe in examples/encoding_in_your_transformer.py: a decoder
    written from scratch that applies the nine hooks gives, with the same
    weights, the logits of lengthbench's transformer, in evaluation and in
    training (randomized positions drawn from the same generator)."""
    from lengthbench.models.transformer import Transformer, position_parameters

    theirs = _example("encoding_in_your_transformer").TinyDecoder(12, name)
    with torch.no_grad():  # away from any zero initialization (CoPE's position table), so every hook counts
        for _, p in position_parameters(theirs):  # the encoding's and its layers' own
            p.normal_(generator=torch.Generator().manual_seed(3))
    ours = Transformer(12, ModelSize(), build_encoding(name, 64, 4))
    ours.load_state_dict(theirs.state_dict())
    tokens = torch.randint(0, 12, (3, 20), generator=torch.Generator().manual_seed(1))
    for train in (False, True):
        theirs.train(train), ours.train(train)
        mine = theirs(tokens, torch.Generator().manual_seed(2))
        pos = ours.positions(tokens, None, None, torch.Generator().manual_seed(2))
        torch.testing.assert_close(mine, ours(tokens, pos), rtol=1e-5, atol=1e-5, msg=f"{name}, train={train}")
