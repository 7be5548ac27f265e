"""Evaluating any model: the test instances written out (``generate``), a
model's answers scored (``score``) and a PyTorch model evaluated directly
(``evaluate``), all giving the numbers a run's record gives."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import lengthbench
from lengthbench.benchmark.evaluate import evaluate
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.train import train_run
from lengthbench.cli import main
from lengthbench.tasks import TASKS, get_task
from lengthbench.tasks.base import N_SPECIAL

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def trained():
    """A smoke run of copy with RoPE, trained briefly: its config, model and per-length record rows."""
    config = replace(get_preset("smoke").run_config("copy", "rope", 0), steps=60)
    task = get_task("copy")
    model = config.build_model(task.vocab_size)
    train_run(model, task, config, CPU)
    return config, model, evaluate(model, task, config, CPU)


@pytest.mark.parametrize("name", TASKS.names())
def test_every_instance_is_its_tasks_oracle_answer_to_its_input(name):
    task = get_task(name)
    lengths = [task.min_length, task.min_length + 2]
    for instance in lengthbench.generate(name, lengths, samples=4, preset="smoke"):
        symbols = [i - N_SPECIAL for i in instance["input_ids"][1:-1]]
        assert [a - N_SPECIAL for a in instance["answer_ids"]] == list(task.solve(symbols))
        assert instance["input"] == task.decode(symbols) and instance["answer"] == task.decode(
            [a - N_SPECIAL for a in instance["answer_ids"]])
        assert instance["input_ids"][0] == 1 and instance["input_ids"][-1] == 2  # <bos> ... <sep>
        assert instance["task_version"] == task.version and instance["length"] in lengths


def test_a_models_greedy_answers_scored_give_its_records_numbers(trained, tmp_path):
    """generate (the preset's defaults: the run's lengths, samples and seed),
    the model's argmax answers, score: the record's exact match and token
    accuracy at every length; and evaluate() of the same model gives them too."""
    config, model, rows = trained
    instances = lengthbench.generate("copy", preset="smoke")
    assert sorted({i["length"] for i in instances}) == [r["length"] for r in rows]
    model.eval()
    with torch.no_grad():
        for instance in instances:
            ids = torch.tensor([instance["input_ids"] + instance["answer_ids"]])
            positions = torch.tensor([instance["position_ids"]])
            logits = model(ids, model.positions(ids, positions, torch.tensor([ids.shape[1]]), None))
            start = len(instance["input_ids"]) - 1
            instance["prediction_ids"] = logits[0, start:start + len(instance["answer_ids"])].argmax(-1).tolist()
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in instances))
    scored = lengthbench.score("copy", path)
    assert scored.exact_match.tolist() == [r["exact_match"] for r in rows]
    assert np.allclose(scored.token_accuracy, [r["token_accuracy"] for r in rows], atol=1e-6)
    direct = lengthbench.evaluate(model, "copy", preset="smoke", heads=config.model.n_heads)
    assert direct.drop(columns="task").to_dict("records") == rows


def test_any_callable_and_a_hugging_face_style_output_are_evaluated(trained):
    """A function of token ids (plain positions) and an output with .logits:
    RoPE reads the plain positions, so the run's own numbers come back."""
    config, model, rows = trained
    lengths = [r["length"] for r in rows]

    def plain(tokens):
        return model(tokens, torch.arange(tokens.shape[1])[None])

    as_function = lengthbench.evaluate(plain, "copy", lengths, preset="smoke", heads=config.model.n_heads)
    as_hf = lengthbench.evaluate(lambda t: SimpleNamespace(logits=plain(t)), "copy", lengths, preset="smoke")
    assert as_function.exact_match.tolist() == as_hf.exact_match.tolist() == [r["exact_match"] for r in rows]
    with pytest.raises(lengthbench.api.InputError, match="logits of shape"):
        lengthbench.evaluate(lambda t: t.float(), "copy", [3], samples=2)


def test_a_model_with_nan_logits_is_scored_wrong_not_refused_as_reading_ahead():
    """NaN logits are not a look-ahead (NaN differs from itself): every answer is wrong and the table counts
    the non-finite examples, as for a run's own model."""
    vocab = get_task("copy").vocab_size

    def broken(tokens):
        return torch.full((*tokens.shape, vocab), float("nan"))

    table = lengthbench.evaluate(broken, "copy", [3, 4], samples=4, preset="smoke")
    assert table.exact_match.tolist() == [0.0, 0.0] and table.nonfinite.tolist() == [4, 4]


def test_a_model_that_reads_ahead_or_cannot_run_here_is_refused(trained):
    """A model whose logits at a position see later tokens (no causal mask) would read the answers it is scored
    on: refused, as `check` refuses such an encoding; a model on the meta device holds no weights."""
    config, model, rows = trained

    def plain(tokens):
        return model(tokens, torch.arange(tokens.shape[1])[None])

    def reads_ahead(tokens):  # every position also sees the sequence's last token
        logits = plain(tokens)
        return logits + logits[:, -1:]

    with pytest.raises(lengthbench.api.InputError, match="the model reads ahead: its logits at earlier positions"):
        lengthbench.evaluate(reads_ahead, "copy", [3], samples=2)
    meta = torch.nn.Linear(4, 4, device="meta")
    with pytest.raises(lengthbench.api.InputError, match="on device meta, where the harness cannot run it"):
        lengthbench.evaluate(meta, "copy", [3], samples=2)


def test_generate_then_score_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert main(["generate", "copy", "--lengths", "8,16,32", "--samples", "64", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 192 and {line["length"] for line in lines} == {8, 16, 32}
    for line in lines:
        line["prediction"] = line["answer"]
    lines[70]["prediction"] = " ".join(["a"] * 16)  # one wrong answer at length 16
    answered = tmp_path / "p.jsonl"
    answered.write_text("".join(json.dumps(line) + "\n" for line in lines))
    capsys.readouterr()
    assert main(["score", "copy", str(answered), "--out", str(tmp_path / "s")]) == 0
    table = lengthbench.score("copy", answered)
    assert table.exact_match.tolist() == [1.0, 63 / 64, 1.0] and table.token_accuracy.iloc[1] < 1.0
    assert (tmp_path / "s" / "score.csv").exists() and "wrote csv" in capsys.readouterr().out


@pytest.mark.parametrize("label", ["word_problem_s3+tagged", "mqar"])
def test_an_instance_whose_inputs_carry_targets_holds_its_whole_input_and_only_its_answer(label, tmp_path):
    """The tagged format trains every input position on its prefix's state and mqar its earlier queries on
    their values: the instance's prompt is still the whole input up to <sep> and its answer the one scored
    (they once held <bos> and the first symbol, and every prefix's state), so the right answers score 100%."""
    task = get_task(label.split("+")[0])
    instances = lengthbench.generate(label, [3, 5], samples=8, preset="smoke")
    for instance in instances:
        symbols = [i - N_SPECIAL for i in instance["input_ids"][1:-1]]
        assert len(symbols) == task.input_length(instance["length"]) and instance["input_ids"][-1] == 2
        assert [a - N_SPECIAL for a in instance["answer_ids"]] == list(task.solve(symbols))
        instance["prediction"] = instance["answer"]
    answered = tmp_path / "p.jsonl"
    answered.write_text("".join(json.dumps(i) + "\n" for i in instances))
    assert lengthbench.score(label, answered, preset="smoke").exact_match.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("change,needle", [
    (lambda line: line.update(input_ids=line["input_ids"][:-2] + [5, 2]), "input_ids differs from instance 0"),
    (lambda line: line.update(index=99), "index 99 is not one of the 4 instances"),
    (lambda line: line.pop("prediction"), "no prediction"),
    (lambda line: line.update(prediction_ids="abc"), "is not a list of token ids"),
    (lambda line: line.update(task="parity_check"), "task 'parity_check', not 'copy'"),
    (lambda line: line.pop("n_samples"), "needs the integer fields length, index and n_samples"),
    (lambda line: line.update(length=5.0), "length 5.0: needs the integer fields"),  # once read as length 5
    (lambda line: line.update(length="5"), "length '5': needs the integer fields"),
    (lambda line: line.update(index=True), "index True: needs the integer fields"),
])
def test_a_line_that_answers_no_generated_instance_is_refused_in_one_line(tmp_path, capsys, change, needle):
    lines = lengthbench.generate("copy", [5], samples=4)
    for line in lines:
        line["prediction"] = line["answer"]
    change(lines[0])
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    capsys.readouterr()
    assert main(["score", "copy", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 1" in err[0] and needle in err[0], err


def test_scoring_twice_and_bad_files_are_refused(tmp_path, capsys):
    lines = lengthbench.generate("copy", [5], samples=2)
    for line in lines:
        line["prediction"] = line["answer"]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines + lines[:1]))
    with pytest.raises(lengthbench.api.InputError, match="line 3: instance 0 of length 5 is scored twice"):
        lengthbench.score("copy", path)
    path.write_text("not json\n")
    with pytest.raises(lengthbench.api.InputError, match="line 1: not JSON"):
        lengthbench.score("copy", path)
    with pytest.raises(lengthbench.api.InputError, match="task 'copy' supports lengths 1..any, got 0"):
        lengthbench.generate("copy", [0], samples=2)
    capsys.readouterr()
    assert main(["generate", "nosuchtask", "--out", str(tmp_path / "y.jsonl")]) == 2
    assert "nosuchtask" in capsys.readouterr().err


def test_scored_predictions_become_a_leaderboard_row_that_compare_reads(tmp_path, capsys):
    """`score --method NAME --out DIR` writes one leaderboard row (method
    external/NAME) judged by quick's bands: right up to length 12 of copy's
    test band 11..16, wrong after, is 2 of 6 test lengths, generalization
    length 12; without trained lengths the fit is unknown, not failed."""
    from lengthbench.leaderboard.schema import read_leaderboard

    instances = lengthbench.generate("copy", samples=16)
    def answered(keep):
        path = tmp_path / f"answers-{keep.__name__}.jsonl"
        path.write_text("".join(json.dumps({**r, "prediction": r["answer"] if r["length"] <= 12 else "x"}) + "\n"
                                for r in instances if keep(r["length"])))
        return path

    def every(n):
        return True

    assert main(["score", "copy", str(answered(every)), "--method", "my-llm", "--out", str(tmp_path / "o")]) == 0
    row = read_leaderboard(tmp_path / "o" / "leaderboard.csv").iloc[0]
    assert (row.method, row.model, row.fit_status, int(row.n_seeds)) == ("external/my-llm", "external", "fit", 1)
    assert row.ood_exact_match_mean == pytest.approx(2 / 6) and row.generalization_length_exact_match == 12
    assert json.loads(row.protocol)["external"] is True
    capsys.readouterr()
    reference = "leaderboard/reference/quick/leaderboard.csv"
    assert main(["compare", reference, str(tmp_path / "o" / "leaderboard.csv"), "--out", str(tmp_path / "c")]) == 0
    assert "only in b 1" in capsys.readouterr().out

    def test_band_only(n):
        return n > 10

    table = lengthbench.score("copy", answered(test_band_only), method="my-llm")
    assert table.attrs["row"].fit_status.iloc[0] == "unknown" and table.attrs["row"]["rank"].iloc[0] == 1

    def trained_only(n):
        return n <= 8

    assert main(["score", "copy", str(answered(trained_only)), "--method", "my-llm", "--out", str(tmp_path)]) == 2
    assert "no scored length is in copy's test band (from 11)" in capsys.readouterr().err
    assert main(["score", "copy", str(answered(every)), "--method", "a/b", "--out", str(tmp_path)]) == 2
    assert main(["score", "copy", str(answered(every)), "--method", "my-llm"]) == 2
    assert "--method writes a leaderboard row: give --out DIR too" in capsys.readouterr().err


@pytest.mark.slow
def test_an_external_row_joins_a_board_and_its_page(tmp_path, capsys):
    """`leaderboard --external` ranks score's row beside the records' methods,
    in the tables and on the page; a row judged by other bands, one that is not
    external, and one for a task the board lacks are refused, naming it."""
    from lengthbench.leaderboard.schema import read_leaderboard

    instances = lengthbench.generate("copy", samples=16)  # quick's lengths: the shipped quick board's bands
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({**r, "prediction": r["answer"]}) + "\n" for r in instances))
    assert main(["score", "copy", str(answers), "--method", "oracle", "--out", str(tmp_path / "s")]) == 0
    records, row = "leaderboard/reference/quick/records", str(tmp_path / "s" / "leaderboard.csv")
    assert main(["leaderboard", "--results", records, "--out", str(tmp_path / "b"), "--external", row]) == 0
    board = read_leaderboard(tmp_path / "b" / "leaderboard.csv")
    oracle = board[board.method == "external/oracle"].iloc[0]
    assert (oracle.task, oracle["rank"], oracle.ood_exact_match_mean) == ("copy", 1.0, 1.0)
    assert board[(board.task == "copy") & (board.method == "transformer/coupled")]["rank"].iloc[0] == 2.0
    assert "external/oracle" in (tmp_path / "b" / "leaderboard.html").read_text()
    assert "external/oracle" in (tmp_path / "b" / "leaderboard.md").read_text()
    capsys.readouterr()
    assert main(["score", "copy", str(answers), "--method", "oracle", "--preset", "smoke",
                 "--out", str(tmp_path / "smoke")]) == 0
    other = lengthbench.generate("even_pairs", samples=16)
    answers.write_text("".join(json.dumps({**r, "prediction": r["answer"]}) + "\n" for r in other))
    assert main(["score", "even_pairs", str(answers), "--method", "oracle", "--out", str(tmp_path / "e")]) == 0
    capsys.readouterr()
    for externals, needle in (([str(tmp_path / "smoke" / "leaderboard.csv")], "where the board's copy cells have 1..8"),
                              (["leaderboard/reference/quick/leaderboard.csv"], "not an external row"),
                              ([str(tmp_path / "e" / "leaderboard.csv")], "this board has no task 'even_pairs'"),
                              ([row, row], "already has a row for 'external/oracle'")):
        argv = ["leaderboard", "--results", records, "--out", str(tmp_path / "x")]
        assert main(argv + [a for e in externals for a in ("--external", e)]) == 2
        assert needle in capsys.readouterr().err


def test_generating_more_than_memory_allows_is_refused_before_any_work(capsys, monkeypatch, tmp_path):
    """A length of a billion, or a large sample count under a small memory limit: one line naming the value and
    the estimate, at once (it once ran for minutes, or ended in a MemoryError traceback)."""
    import time

    from lengthbench.benchmark import instances
    from lengthbench.cli import main

    start = time.perf_counter()
    out = ["--out", str(tmp_path / "g.jsonl")]
    assert main(["generate", "copy", "--lengths", "1000000000", "--samples", "2", *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lengths up to 1000000000 of copy are 2,000,000,000 input symbols" in err
    assert time.perf_counter() - start < 60  # refused, not generated (a bound against a hang only)
    monkeypatch.setattr(instances, "available_memory", lambda: 2 * 10**9)  # as under `ulimit -v 2000000`
    assert main(["generate", "copy", "--lengths", "2000", "--samples", "10000", *out]) == 2
    assert "about 3.0 GB to generate, and 2.0 GB are available here" in capsys.readouterr().err
    assert not (tmp_path / "g.jsonl").exists()


def test_a_score_says_what_it_rests_on_when_instances_lengths_or_symbols_are_missing(tmp_path, caplog):
    """Part of the instances, whole lengths of the preset left out, answers written without the task's
    separator: each is scored as given, with a warning line that says so (never a silent 100%)."""
    import logging

    lines = lengthbench.generate("copy")  # quick's instances: every length it evaluates
    for line in lines:
        line["prediction"] = line["answer"]
    kept = [line for line in lines if line["length"] not in (12, 16) and (line["length"], line["index"]) != (8, 0)]
    joined = next(line for line in kept if line["length"] == 5)
    joined["prediction"] = joined["answer"].replace(" ", "")  # the symbols run together: no symbol of copy
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in kept))
    with caplog.at_level(logging.WARNING):
        table = lengthbench.score("copy", path)
    said = caplog.text
    assert table.loc[table.length == 8, "n_samples"].item() == 255 and set(table.length) == set(range(1, 17)) - {12, 16}
    assert "scored 255 of the 256 instances generated at length 8; the other 1 are missing" in said
    assert "predictions for 14 of the 16 lengths preset quick evaluates copy at; none for 12, 16" in said
    assert "1 of the 3583 predictions hold words that are no symbol of copy" in said


def _labels():
    from lengthbench.tasks.cells import TASK_ALIASES, format_label
    from lengthbench.tasks.formats import FORMATS, label_not_applicable

    labels = [format_label(t, f) if f != "plain" else t for t in lengthbench.tasks.TASKS.names() for f in FORMATS.names()]
    return [label for label in labels if label_not_applicable(label) is None] + list(TASK_ALIASES)


@pytest.mark.parametrize("label", _labels())
def test_what_generate_writes_score_reads_back_for_every_task_label(label, tmp_path):
    """A task in a format, its explicit label and its alias alike: the oracle's answers score 100%."""
    task = lengthbench.tasks.get_task(label)
    out = tmp_path / "g.jsonl"
    lines = lengthbench.generate(label, [task.min_length, task.min_length + 1], samples=2, out=out)
    answered = tmp_path / "p.jsonl"
    answered.write_text("".join(json.dumps({**line, "prediction": line["answer"]}) + "\n" for line in lines))
    table = lengthbench.score(label, answered)
    assert table.exact_match.tolist() == [1.0, 1.0] and table.n_samples.tolist() == [2, 2]


def test_a_length_listed_twice_is_refused_and_a_method_score_accepts_compare_accepts(tmp_path, capsys):
    from lengthbench.cli import main

    out = tmp_path / "g.jsonl"
    assert main(["generate", "copy", "--lengths", "8,8", "--out", str(out)]) == 2
    assert "length 8 is listed twice; give each once" in capsys.readouterr().err and not out.exists()
    lines = lengthbench.generate("copy", [11, 12], samples=2)
    answered = tmp_path / "p.jsonl"
    answered.write_text("".join(json.dumps({**line, "prediction": line["answer"]}) + "\n" for line in lines))
    for bad in ("my model", "a__b", "my/model", " x"):  # names a leaderboard refuses: score refuses them first
        assert main(["score", "copy", str(answered), "--method", bad, "--out", str(tmp_path / "s")]) == 2
        assert "is not valid; use letters, digits" in capsys.readouterr().err
    assert main(["score", "copy", str(answered), "--method", "my-llm.v2", "--out", str(tmp_path / "s")]) == 0
    board = str(tmp_path / "s" / "leaderboard.csv")
    assert main(["compare", board, board, "--out", str(tmp_path / "c")]) == 0
