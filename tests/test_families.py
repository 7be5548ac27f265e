"""Model families: the recurrent baselines, the method key, and reading
records and leaderboards written before families existed."""

import json
from dataclasses import replace

import pytest
import torch
from conftest import parity_after_training

from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import read_record
from lengthbench.cli import main
from lengthbench.leaderboard.schema import SCHEMA_VERSION, read_leaderboard
from lengthbench.models.families import ModelSize, build_model, family_entry, family_names
from lengthbench.models.recurrent import input_lengths, update_stack, update_tape

CPU = torch.device("cpu")
RECURRENT = ("rnn", "lstm", "stack-rnn", "tape-rnn")
SIZE = ModelSize(d_model=16, n_layers=1, n_heads=2, d_ff=32)


def test_families_registered_and_the_transformer_takes_encodings():
    assert family_names()[0] == "transformer" and set(RECURRENT) <= set(family_names())
    assert family_entry("transformer").takes_encoding and not family_entry("lstm").takes_encoding


def test_soft_stack_push_then_pop_restores_it():
    stack = torch.randn(2, 5, 8)
    push, pop = torch.tensor([[1.0, 0, 0]] * 2), torch.tensor([[0, 1.0, 0]] * 2)
    value = torch.randn(2, 8)
    pushed = update_stack(stack, push, value)
    assert torch.equal(pushed[:, 0], value) and torch.equal(pushed[:, 1:], stack[:, :-1])
    assert torch.equal(update_stack(pushed, pop, value)[:, :-1], stack[:, :-1])
    mixed = update_stack(stack, torch.tensor([[0.2, 0.3, 0.5]] * 2), value)
    expected = 0.2 * pushed + 0.3 * update_stack(stack, pop, value) + 0.5 * stack
    torch.testing.assert_close(mixed, expected)


def test_soft_tape_writes_then_moves_as_the_reference_does():
    """Cell 0 is under the head. Left by s puts old cell m + s at m, right by s
    old cell m - s (circular); a jump moves by the row's own input length."""
    tape = torch.arange(2 * 7 * 1, dtype=torch.float64).view(2, 7, 1) + 100
    value, jump = torch.tensor([[-1.0], [-2.0]], dtype=torch.float64), torch.tensor([2, 3])
    written = tape.clone()
    written[:, 0] = value
    for action, shift in enumerate([lambda r: 0, lambda r: 1, lambda r: -1, lambda r: int(jump[r]),
                                    lambda r: -int(jump[r])]):
        probs = torch.zeros(2, 5, dtype=torch.float64)
        probs[:, action] = 1
        moved = update_tape(tape, probs, value, jump)
        for r in range(2):
            expected = torch.stack([written[r, (m + shift(r)) % 7] for m in range(7)])
            torch.testing.assert_close(moved[r], expected)
    mix = torch.tensor([[0.1, 0.2, 0.3, 0.15, 0.25]] * 2, dtype=torch.float64)
    parts = [update_tape(tape, torch.eye(5, dtype=torch.float64)[[a, a]], value, jump) for a in range(5)]
    torch.testing.assert_close(update_tape(tape, mix, value, jump), sum(m * p for m, p in zip(mix[0], parts)))


def test_the_tape_jump_is_the_input_length_a_causal_reader_knows():
    # BOS a b c SEP x y EOS PAD: before SEP the input read so far, from SEP on its length, 3
    tokens = torch.tensor([[1, 5, 6, 7, 2, 8, 9, 3, 0], [1, 5, 2, 8, 8, 8, 3, 0, 0]])
    assert input_lengths(tokens).tolist() == [[0, 1, 2, 3, 3, 3, 3, 3, 3], [0, 1, 1, 1, 1, 1, 1, 1, 1]]


@pytest.mark.parametrize("cell", RECURRENT)
def test_recurrent_is_causal_and_seeded(cell):
    torch.set_default_dtype(torch.float64)
    try:
        model = build_model(cell, 11, SIZE, 3).eval()
        tokens = torch.randint(0, 11, (4, 9), generator=torch.Generator().manual_seed(0))
        out = model(tokens)
        assert out.shape == (4, 9, 11)
        torch.testing.assert_close(build_model(cell, 11, SIZE, 3).eval()(tokens), out, rtol=0, atol=0)
        assert not torch.allclose(build_model(cell, 11, SIZE, 4).eval()(tokens), out)
        changed = tokens.clone()
        changed[..., 5:] = (changed[..., 5:] + 3) % 11
        torch.testing.assert_close(model(changed)[..., :5, :], out[..., :5, :])
        assert not torch.allclose(model(changed)[..., 5:, :], out[..., 5:, :])
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("cell", RECURRENT)
@pytest.mark.slow
def test_recurrent_families_learn_parity(cell):
    """The regular task a transformer fails: each cell learns it within 300
    steps, scored on held-out strings (the fixed evaluation stream, never
    trained on) at every training length: the parity bit right on >= 95% of
    them (chance is 50%; the output format alone scores 50%)."""
    scores = parity_after_training(cell, steps=300, lr=1e-2, model=ModelSize(d_model=32))
    assert min(scores) >= 0.95, scores


@pytest.mark.slow
def test_a_family_run_through_the_grid_is_a_method_row(tmp_path):
    argv = ["run", "--preset", "smoke", "--tasks", "parity_check", "--encodings", "nope", "--models",
            "transformer,lstm", "--results", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    board = read_leaderboard(tmp_path / "leaderboard.csv")
    assert list(board.method) == ["transformer/nope", "lstm"]
    assert list(board.model) == ["transformer", "lstm"] and list(board.encoding) == ["nope", ""]
    [lstm] = [json.loads(p.read_text()) for p in tmp_path.glob("parity_check__lstm__seed0__*.json")]
    assert lstm["method"] == "lstm" and lstm["config"]["family"] == "lstm" and lstm["encoding"] == ""


def test_records_without_a_method_are_transformer_runs(tmp_path):
    """Records written before families (no ``method``, no ``family``) keep their hash and read as transformers."""
    config = get_preset("smoke").run_config("copy", "rope", 0)
    assert "family" not in config.to_dict() and config.method == "transformer/rope"
    from lengthbench.benchmark.runner import execute_run

    record = execute_run(replace(config, steps=2), CPU)
    data = record.to_json()
    del data["method"]
    path = tmp_path / f"{record.run_id}.json"
    path.write_text(json.dumps(data))
    assert read_record(path).method == "transformer/rope"


def test_a_schema_2_leaderboard_reads_as_transformer_methods_of_the_current_schema():
    from pathlib import Path

    old = Path(__file__).parent / "fixtures" / "leaderboard-schema-v2.csv"
    assert old.read_text().startswith("schema_version,task,level,encoding,")
    board = read_leaderboard(old)
    assert set(board.method) == {f"transformer/{e}" for e in board.encoding}
    assert set(board.model) == {"transformer"} and set(board.schema_version) == {SCHEMA_VERSION} and set(board.n_errors) == {0}
    assert set(board.fit_status) == {"unknown"}  # a board from before fit was recorded


@pytest.mark.parametrize("name", [n for n in family_names() if n != "transformer"])
def test_every_built_in_family_passes_the_family_contract(name):
    """What ``lengthbench check`` runs on a family plugin, every built-in family passes too
    (the transformer is the encoding contract's model)."""
    from lengthbench.models.contract import CheckShape, check_family

    report = check_family(name, [CheckShape("test", 16, 2, 12, (("copy", 6),))])
    assert report.passed, report.format()


GROWN = {"d_model": 24, "n_layers": 2, "n_heads": 4, "d_ff": 48}  # each field of SIZE changed, every family valid


@pytest.mark.parametrize("name", ["transformer", "looped", *RECURRENT, "ssm", "deltanet", "gated-deltanet-negative",
                                  "hf-llama", "hf-bloom"])
def test_a_family_declares_exactly_the_size_fields_its_model_reads(name):
    """Reports state a family's shape by its ``size_fields`` (``describe_size``): a
    field it declares must change its model (weights' shapes or, same seed, its
    logits), and one it leaves out must not, so no report claims heads for an LSTM."""
    from lengthbench.models.families import describe_size

    config = get_preset("smoke").run_config("copy", "nope" if family_entry(name).takes_encoding else "", 0, name)
    tokens = torch.randint(4, 10, (2, 7), generator=torch.Generator().manual_seed(0))

    def model_of(size):
        model = replace(config, model=size).build_model(11).eval()
        return {k: v.shape for k, v in model.state_dict().items()}, model(tokens, model.positions(tokens, None, None,
                                                                                                 None))

    shapes, logits = model_of(SIZE)
    read = set()
    for field, value in GROWN.items():
        other_shapes, other_logits = model_of(replace(SIZE, **{field: value}))
        if other_shapes != shapes or not torch.equal(other_logits, logits):
            read.add(field)
    assert read == set(family_entry(name).size_fields), read
    assert describe_size(name, SIZE).count(",") == len(read) - 1


def test_a_family_naming_a_size_field_that_does_not_exist_is_refused_with_the_valid_ones():
    from lengthbench.models.families import register_family

    with pytest.raises(ValueError, match=r"'width'.*d_model, n_layers, n_heads, d_ff"):
        register_family("test-bad-size", description="x", size_fields=("d_model", "width"))
    assert "test-bad-size" not in family_names()


def test_list_models_names_the_size_fields_that_shape_each_family(capsys):
    assert main(["list", "models"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["lstm"].endswith("[no encoding; shaped by d_model]")
    assert lines["ssm"].endswith("; shaped by d_model, n_layers]")
    assert lines["transformer"].endswith("(method transformer/<encoding>); shaped by d_model, n_layers, n_heads, d_ff]")
