"""Published-vs-ours reports: the papers' aggregations, computed from records."""

import json
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.cli import main
from lengthbench.core.errors import InputError
from lengthbench.studies.chomsky import chomsky_report
from lengthbench.studies.copying import copying_report
from lengthbench.studies.nope import nope_report, reciprocal_ranks
from lengthbench.models import ModelSize

NOT_TESTABLE_2 = "not testable with 2 tasks (no verdict rests on fewer than 3)"
NOT_TESTABLE_1 = "not testable with 1 task (no verdict rests on fewer than 3)"

MODEL = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "dropout": 0.0}


def record(task, method, seed, token_acc, exact=None, train_length=2, validation_length=0):
    """A finished run whose per-length token accuracy (lengths 1..) is ``token_acc``."""
    exact = token_acc if exact is None else exact
    per_length = [{"length": n, "status": "ok", "token_accuracy": a, "exact_match": e, "n_samples": 8}
                  for n, (a, e) in enumerate(zip(token_acc, exact), start=1)]
    family, _, encoding = method.partition("/")
    config = replace(get_preset("smoke").run_config(task, encoding, seed, family), train_length=train_length,
                     validation_length=validation_length, test_length=len(token_acc), steps=10, batch_size=4,
                     lr=1e-3, model=ModelSize(**MODEL))
    parts = ("id", "val", "ood") if validation_length else ("id", "ood")
    summary = {f"{part}_{m}": float(np.mean([r[m] for r in per_length if config.split(r["length"]) == part]))
               for part in parts for m in ("exact_match", "token_accuracy")}
    return RunRecord(config, "test", "", "", {}, "", status="ok", per_length=per_length, summary=summary)


def test_reciprocal_rank_by_hand():
    scores = pd.DataFrame({"task": ["a"] * 3 + ["b"] * 3, "method": ["nope", "rope", "alibi"] * 2,
                           "mean": [0.9, 0.5, 0.5, 0.1, 0.8, 0.3]})
    mrr = reciprocal_ranks(scores)  # a: 1, 2, 2 (a tie shares the better rank); b: 3, 1, 2
    assert mrr["nope"] == pytest.approx((1 + 1 / 3) / 2)
    assert mrr["rope"] == pytest.approx((1 / 2 + 1) / 2) and mrr["alibi"] == pytest.approx(1 / 2)


def test_nope_score_averages_seen_and_unseen_lengths():
    records = [record("copy", "transformer/nope", 0, [1, 1, 0, 0]),
               record("copy", "transformer/rope", 0, [1, 1, 0.2, 0])]
    text = nope_report(records)
    assert "| copy | `nope` | 98.6 | 50.0 |" in text  # over lengths 1..4, not only the unseen 3..4
    assert "| copy | `rope` | 0.0 | 55.0 |" in text
    assert "| `rope` | 0.33 | 1.00 |" in text and "| `nope` | 0.69 | 0.50 |" in text


def test_the_nope_report_ranks_the_test_band_alone_beside_their_score_with_chance():
    """nope leads over every length (65.0 against 63.5) but rope leads on the
    unseen lengths 3..4 (32.0 against 30.0): the two orders differ, and each
    row shows the task's chance level on the test band."""
    records = [record("copy", "transformer/nope", 0, [1, 1, 0.3, 0.3]),
               record("copy", "transformer/rope", 0, [1, 0.9, 0.32, 0.32])]
    text = nope_report(records)
    assert "| `nope` | 0.69 | 1.00 | 0.50 |" in text and "| `rope` | 0.33 | 0.50 | 1.00 |" in text
    assert "Ours: rope > nope" not in text and "Ours: nope > rope" in text
    assert "On the test band alone: rope > nope." in text
    chance = text.split("| copy | `nope` | 98.6 | 65.0 | 30.0 | ")[1].split(" |")[0]
    assert 0 < float(chance) < 30.0  # copy's answers are mostly distinct: chance is low, and stated


def _banded(task, method, seed, validation, test, fit=1.0):
    """Trained 1..2, validation at 3, test at 4..5."""
    return record(task, method, seed, [fit, fit, validation, test, test], validation_length=3)


def test_chomsky_report_chooses_on_validation_and_rests_each_finding_on_the_mean():
    """even_pairs: rope is the best on the test band (one seed 95) but
    randomized-rope the best on validation: the finding rests on the chosen
    encoding's mean (60: "solved" does not hold); the papers' maximum over
    encodings and seeds is shown beside it, labelled, and decides nothing."""
    records = [_banded("even_pairs", "transformer/rope", s, 0.9, a) for s, a in enumerate([0.95, 0.5])]
    records += [_banded("cycle_navigation", "transformer/rope", s, 0.9, 0.96) for s in range(2)]
    records += [_banded("even_pairs", "transformer/randomized-rope", s, 0.95, 0.6) for s in range(2)]
    records += [_banded("cycle_navigation", "transformer/randomized-rope", s, 0.5, 0.5) for s in range(2)]
    records += [_banded(t, "lstm", s, 1.0, a) for t in ("even_pairs", "cycle_navigation")
                for s, a in enumerate([1.0, 0.8])]
    # bucket_sort's lstm "solved (almost perfectly)": one seed at 100, one at 60: the mean (80) decides
    records += [_banded("bucket_sort", m, s, 1.0, a) for m in ("transformer/rope", "lstm")
                for s, a in enumerate([1.0, 0.6])]
    text = chomsky_report(records)
    assert "published: solved (almost perfectly), does not hold" in text
    # beside each, the task's per-token chance on the test band: even_pairs answers one of two tokens
    even = re.search(r"\| even_pairs \| R \| solved \| `randomized-rope` \| 60.0 ± 0.0 \| 60.0 \| `rope` 95.0 \| "
                     r"([\d.]+) \| does not hold \|", text)
    assert even and 40 < float(even.group(1)) < 80 and "| chance (%, test band, per token) | finding |" in text
    assert re.search(r"\| cycle_navigation \| R \| not solved \(61.9%\) \| `rope` \| 96.0 ± 0.0 \| 96.0 \| `rope` 96.0 "
                     r"\| [\d.]+ \| does not hold \|", text)
    # the LSTM solves with one seed of two: "every seed" does not hold
    assert "1/2 seeds solve); published: solved (every seed), does not hold" in text
    # lstm against the chosen encoding, the task the unit: +30 (even_pairs: 90 against 60), -6 (cycle_navigation:
    # 90 against 96); P: every lstm seed beats 60, one of two beats 96
    assert "| `lstm` | 90.0 | 2 | +12.0 (2 units: no interval); p 1, not testable | 0.75 [" in text
    # randomized gain over the two tasks: (60 - 72.5 + 50 - 96) / 2 = -29.25 mean over seeds; two tasks
    # give a t interval (t = 12.7) wider than the range: not told apart
    assert (f"| `rope` | 2 | -29.2 (2 units: no interval); p 0.5, not testable | 0.25 [0.00, 0.50]; p 0.22, not testable "
            f"| {NOT_TESTABLE_2} | -40.5 |") in text


@pytest.mark.slow
def test_reproduce_cli_writes_the_report(capsys, tmp_path):
    assert main(["run", "--preset", "smoke", "--tasks", "copy,reverse_string", "--encodings", "nope,rope",
                 "--results", str(tmp_path / "r"), "--no-progress"]) == 0
    assert main(["reproduce", "nope", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 0
    report = (tmp_path / "o" / "reproduction.md").read_text()
    assert "Mean reciprocal rank" in report
    # 4 of nope's 20 cells ran: the report says so in one line, and tests no order
    assert ("Missing: 16 of the 20 cells of `nope` have no record here (addition/transformer/alibi, "
            "addition/transformer/nope,") in report and "not tested here" in report
    # with --preset, the cells expected are that preset's: 4 of smoke's 20 ran
    assert main(["reproduce", "nope", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "o"),
                 "--preset", "smoke"]) == 0
    assert "Missing: 16 of the 20 cells of `smoke` have no record here" in (tmp_path / "o" / "reproduction.md").read_text()
    # beside it, what a rebuild needs: the paper, the records relative to the report, the preset
    source = json.loads((tmp_path / "o" / "reproduction.json").read_text())
    assert source == {"paper": "nope", "records": "../r", "preset": "smoke",
                      "rebuild": f"lengthbench reproduce nope --results {tmp_path / 'r'} --out {tmp_path / 'o'} "
                                 "--preset smoke"}
    assert main(["reproduce", "nope", "--results", str(tmp_path / "missing")]) == 2
    assert main(["reproduce", "coupling", "--results", str(tmp_path / "o")]) == 2  # no records there
    assert "--preset coupling" in capsys.readouterr().err
    assert main(["reproduce", "coupling", "--results", str(tmp_path / "r")]) == 2  # records, none of its tasks
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no record of the coupling report's tasks (addition, multiplication)" in err
    # copy in plain is a cell of both horizon-formats and horizon-looped: the reports say what they lack
    for paper, needle in (("formats", "no task written in a format other than plain; run `lengthbench run --preset "
                                      "horizon-formats`"),
                          ("looped", "no run of the looped transformer; run `lengthbench run --preset horizon-looped`")):
        assert main(["reproduce", paper, "--results", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err
    # no transformer cell fit (30 steps): the copying report says so and which cells are missing (it once ended
    # in a KeyError: the task-agnostic choice over no fit cell)
    assert main(["reproduce", "copying", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "c")]) == 0
    report = (tmp_path / "c" / "reproduction.md").read_text()
    assert "| copy | none fit |" in report and "Missing: " in report and "cells of `copying` have no record" in report


def test_chomsky_report_without_transformer_runs_is_refused(capsys, tmp_path):
    assert main(["run", "--preset", "smoke", "--tasks", "parity_check", "--models", "lstm", "--results", str(tmp_path),
                 "--no-progress"]) == 0
    assert main(["reproduce", "chomsky", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "hold no finished transformer run" in err and "\n" not in err


def test_a_difference_by_hand():
    """Differences .4 .5 .5 .3 over 4 tasks: the t interval by hand; the sign-flip p 2/16 (4 units cannot pass)."""
    from lengthbench.leaderboard.inference import ComparisonFamily

    a, b = [0.5, 0.7, 0.9, 0.6], [0.1, 0.2, 0.4, 0.3]
    family = ComparisonFamily()
    c = family.compare({t: [x] for t, x in enumerate(a)}, {t: [y] for t, y in enumerate(b)}, ("A", "B"))
    half = 3.182446 * np.std([0.4, 0.5, 0.5, 0.3], ddof=1) / 2  # t(0.975, 3)
    assert c.across["mean"] == pytest.approx(0.425) and c.across["n"] == 4
    assert (c.across["low"], c.across["high"]) == pytest.approx((0.425 - half, 0.425 + half), rel=1e-5)
    assert c.across_test.raw == 2 / 16 and c.across_test.smallest == 2 / 16


def test_cells_that_did_not_fit_get_no_verdict():
    """ID token accuracy = exact match here; below 90% on the trained lengths 1..2 means not fit."""
    records = [_banded("even_pairs", "transformer/rope", s, 0.9, 0.2, fit=0.5) for s in range(2)]
    records += [_banded("cycle_navigation", "transformer/rope", s, 0.9, 0.96) for s in range(2)]
    records += [_banded("even_pairs", "transformer/randomized-rope", s, 0.6, 0.6) for s in range(2)]
    records += [_banded("cycle_navigation", "transformer/randomized-rope", s, 0.5, 0.5) for s in range(2)]
    records += [_banded(t, "lstm", s, 0.1, 0.1, fit=0.4) for t in ("even_pairs", "cycle_navigation")
                for s in range(2)]
    text = chomsky_report(records)
    # even_pairs: rope did not fit, so the encoding chosen there is randomized-rope
    assert "| even_pairs | R | solved | `randomized-rope` | 60.0 ± 0.0 |" in text
    assert "10.0 ± 0.0: did not fit (no verdict)" in text  # the lstm cells
    records += [_banded("even_pairs", "transformer/randomized-rope", s, 0.2, 0.2, fit=0.5) for s in range(2, 4)]
    records = [r for r in records if not (r.task == "even_pairs" and r.seed < 2 and "randomized" in r.method)]
    text = chomsky_report(records)
    assert re.search(r"\| even_pairs \| R \| solved \| none fit \|  \|  \|  \| [\d.]+ \| did not fit \(no verdict\) \|", text)
    assert "holds on 0 of the 1 tasks where some encoding fit (1 with none fit: no verdict)" in text


def test_the_nope_order_is_tested_pair_by_pair():
    curves = {"nope": [1, 1, 0.9, 0.8], "t5": [1, 1, 0.5, 0.4], "alibi": [1, 1, 0.6, 0.3],
              "rope": [1, 1, 0.2, 0.1], "sinusoidal": [1, 0.5, 0, 0]}  # sinusoidal did not fit
    records = [record(t, f"transformer/{e}", s, [min(1, x + 0.01 * s) for x in curve])
               for t in ("copy", "reverse_string") for e, curve in curves.items() for s in range(3)]
    text = nope_report(records)
    # the task the unit: +20 on both tasks (every seed of nope above every seed of t5); P's permutation test
    # alone would say nope better (p 0.005), but no verdict rests on 2 tasks, and 2 units get no t interval
    assert ("| `nope` > `t5` | 2 | +20.0 (2 units: no interval); p 0.5, not testable | 1.00 [1.00, 1.00]; p 0.005, not "
            f"testable | {NOT_TESTABLE_2} |") in text
    assert "| `t5` > `alibi` | 2 | +0.0 (2 units: no interval); p 1, not testable | 0.50 [" in text
    assert "| `rope` > `sinusoidal` | 0 |  |  | not run or never fit |" in text
    # the order of the four that fit matches the published one, but it is no test of the five-encoding order
    assert ("Ours: nope > t5 > alibi > rope (sinusoidal: not run or never fit, so the published order is not "
            "tested here).") in text and "(the same)" not in text


def test_the_nope_mrr_ranks_every_encoding_on_one_task_set():
    """All five fit copy, reverse_string and parity_check, where nope is last; only nope fits addition. An MRR
    over each encoding's own fit tasks would count addition for nope alone and lift it; on the one task set
    where all five fit nope is last, and the order with every cell counted (no fit filter) is beside it."""
    unseen = {"nope": 0.1, "t5": 0.9, "alibi": 0.8, "rope": 0.7, "sinusoidal": 0.6}
    records = [record(t, f"transformer/{e}", s, [1, 1, x, x]) for t in ("copy", "reverse_string", "parity_check")
               for e, x in unseen.items() for s in range(3)]
    records += [record("addition", f"transformer/{e}", s, [1, 1, 0.9, 0.9] if e == "nope" else [1, 0.3, 0, 0])
                for e in unseen for s in range(3)]
    text = nope_report(records)
    assert "| encoding | published MRR | our MRR (3 tasks where all of them fit) |" in text
    assert "| `nope` | 0.69 | 0.20 |" in text and "| `t5` | 0.55 | 1.00 |" in text
    assert "Ours: t5 > alibi > rope > sinusoidal > nope." in text
    assert "Sensitivity, every cell of every task counted whether it fit or not: t5 > alibi > nope > rope" in text


def test_the_coupling_claim_is_tested_by_seed():
    from lengthbench.studies.coupling import coupling_report

    records = [record("addition", "transformer/coupled", s, [1, 1, 0.9 + 0.01 * s, 0.8]) for s in range(3)]
    records += [record("addition", "transformer/nope", s, [1, 1, 0.1 * s, 0]) for s in range(3)]  # d = .85 .805 .76
    records += [record("addition", "transformer/rope", s, [1, 0.2, 0, 0]) for s in range(3)]  # did not fit
    text = coupling_report(records)
    # one task: one unit across tasks; on this task every coupled seed beats every nope seed (p 0.1), and no
    # verdict rests on one task
    assert ("| `transformer/nope` | 1 | +80.5 (1 unit: no interval); no test | 1.00 [1.00, 1.00]; p 0.1, not testable | "
            f"{NOT_TESTABLE_1} |") in text
    assert "| `transformer/rope` |  |  |  | did not fit (no verdict) |" in text
    # the horizon and budget every verdict is read at, beside the paper's own
    horizon = next(line for line in text.splitlines() if line.startswith("Horizon: "))
    assert horizon.startswith("Horizon: trained on lengths 1..2, tested on 3..4, up to 2× the longest training "
                              "length; budget: ") and "the same for every method." in horizon
    assert "The paper's: Cho et al.: addition trained on 1..30 digits, tested to 200 (6.7x)" in horizon
    # every test length, each with its ratio to the training length, and each seed's generalization length
    assert "| method | length 2 (1×) | length 3 (1.5×) | length 4 (2×) | generalization length | seeds that hold 2× (4) |" \
        in text
    assert "| `transformer/coupled` | 100.0 / 100.0 / 100.0 | 90.0 / 91.0 / 92.0 | 80.0 / 80.0 / 80.0 | 3 / 3 / 3 | 0/3 |" \
        in text
    held = [record("multiplication", "transformer/coupled", s, acc)
            for s, acc in enumerate([[1, 1, 1, 0.95], [1, 1, 1, 0.5], [1, 1, 0.8, 1]])]
    assert "| 4 / 3 / 2 | 1/3 |" in coupling_report(held)  # seed 2 fails at 3, so 4 does not count
    diverged = replace(record("multiplication", "transformer/coupled", 3, [1, 1, 1, 1]), status="diverged")
    assert "| 4 / 3 / 2 (+1 failed) | 1/4 |" in coupling_report([*held, diverged])  # a failed seed holds nothing


def test_copying_report_chooses_the_encoding_on_validation_and_tests_it_against_ssm():
    """Jelassi et al.'s claim: the transformer (its encoding chosen on the validation band, length 3, never on
    the test band 4..5) against `ssm`, the task the unit; a cell that did not fit is left out."""
    def run(task, method, seed, validation, test, fit=1.0):
        return record(task, method, seed, [fit, fit, validation, test, test], validation_length=3)

    records = []
    for seed, (copy_nope, dup_nope, copy_ssm, dup_ssm) in enumerate([(0.5, 0.8, 0.1, 0.3), (0.6, 0.9, 0.1, 0.4)]):
        records += [run("copy", "transformer/nope", seed, 0.9, copy_nope),
                    run("copy", "transformer/alibi", seed, 0.5, 0.95),  # best on test, worse on validation
                    run("duplicate_string", "transformer/nope", seed, 0.9, dup_nope),
                    run("duplicate_string", "transformer/alibi", seed, 0.2, 0.2),
                    run("copy", "ssm", seed, 0.5, copy_ssm), run("duplicate_string", "ssm", seed, 0.5, dup_ssm),
                    run("copy", "lstm", seed, 0.5, 0.1), run("duplicate_string", "lstm", seed, 0.5, 0.9, fit=0.5),
                    run("duplicate_string", "transformer/coupled", seed, 1.0, 1.0),  # reads the task's ids
                    run("parity_check", "ssm", seed, 1.0, 1.0)]  # not a copying task: ignored
    text = copying_report(records)
    assert ("| copy | `transformer/nope` | 55.0 ± 7.1 | `transformer/nope` | 55.0 ± 7.1 | 10.0 ± 0.0 | 10.0 ± 0.0 |"
            in text)
    assert ("| duplicate_string | `transformer/coupled` | 100.0 ± 0.0 | `transformer/nope` | 85.0 ± 7.1 | 90.0 ± 0.0 "
            "(did not fit) | 35.0 ± 7.1 |" in text)
    copy_row = [line for line in text.splitlines() if line.startswith("| copy |")][0]
    assert "| chance (%, test band) |" in text and 0 < float(copy_row.split("|")[-2]) < 10  # copy's answers differ
    # task-agnostic, the task the unit: +45 (copy), +50 (duplicate_string): mean 47.5, sd 3.54, t(0.975, 1) = 12.7;
    # the interval lies above 0, but two tasks can't decide (sign-flip p = 2/4)
    assert ("| transformer, task-agnostic encoding (chosen on validation) | 2 | +47.5 (2 units: no interval); p 0.5, not "
            f"testable | 1.00 [1.00, 1.00]; p 0.056, not testable | {NOT_TESTABLE_2} |") in text
    assert "| transformer, any encoding (chosen on validation) | 2 | +55.0 (2 units" in text  # coupled on duplicate_string
    # lstm fit copy only (10 against 10): one task, no interval
    assert f"| `lstm` | 1 | +0.0 (1 unit: no interval); no test | 0.50 [0.50, 0.50]; p 1, not testable | {NOT_TESTABLE_1} |" in text
    assert "parity_check" not in text
    with pytest.raises(InputError, match="no record of a copying task"):
        copying_report([r for r in records if r.task == "parity_check"])


def test_recurrent_families_are_tested_against_the_transformer_chosen_on_validation():
    """Deletang et al.'s architecture finding on the regular tasks: each family against the transformer
    encoding chosen per task on the validation band (length 3), the task the unit, token accuracy."""
    def run(task, method, seed, validation, test):
        return record(task, method, seed, [1, 1, validation, test, test], validation_length=3)

    records = []
    for task in ("even_pairs", "parity_check"):
        for seed, (nope, lstm) in enumerate([(0.5, 1.0), (0.6, 0.95)]):
            records += [run(task, "transformer/nope", seed, 0.9, nope),
                        run(task, "transformer/alibi", seed, 0.5, 0.99),  # the best on test, not on validation
                        run(task, "lstm", seed, 0.9, lstm)]
    text = chomsky_report(records)
    # the task the unit: 97.5 against 55 on both tasks: a t interval of zero width, but two tasks can't decide
    assert ("| `lstm` | 97.5 | 2 | +42.5 (2 units: no interval); p 0.5, not testable | 1.00 [1.00, 1.00]; p 0.056, not "
            f"testable | {NOT_TESTABLE_2} |") in text


def test_no_selection_or_reproduction_code_chooses_a_row_by_a_test_column():
    """Every choice (best encoding, selected setting) is made on the validation
    band: a line of the selection or reproduction code that picks a row
    (idxmax, nlargest, argmax, sorting) by a test-band (``ood``) column fails
    this test unless it says it is shown only and decides no verdict."""
    import re
    from pathlib import Path

    import lengthbench

    root = Path(lengthbench.__file__).resolve().parent
    picks = re.compile(r"idxmax|idxmin|nlargest|nsmallest|argmax|argmin|sort_values|\bmax\(key=")
    offending = []
    modules = ["leaderboard/verdicts.py", "benchmark/selection.py", "leaderboard/ranking.py",
               *(f"studies/{p.name}" for p in (root / "studies").glob("*.py"))]
    for module in modules:
        for number, line in enumerate((root / module).read_text().splitlines(), start=1):
            if "ood" in line and picks.search(line) and "no verdict" not in line:
                offending.append(f"{module}:{number}: {line.strip()}")
    assert not offending, offending


def test_a_submissions_overall_rank_is_the_levels_tables_over_the_common_fitted_tasks():
    """Three methods on two tasks; `alibi` does not fit `reverse_string`. Over
    its own judged task `nope` would rank 1.5 on average; the overall rank,
    as in the levels table and the Friedman ranking, uses only the task every
    method fit (copy): nope 1st there, one rank for one method everywhere."""
    from lengthbench.leaderboard.aggregate import leaderboard_frame, level_summary
    from lengthbench.leaderboard.submission import ranking_text

    curves = {("copy", "nope"): [1, 1, 0.9, 0.9], ("copy", "rope"): [1, 1, 0.5, 0.5],
              ("copy", "alibi"): [1, 1, 0.2, 0.2], ("reverse_string", "nope"): [1, 1, 0.1, 0.1],
              ("reverse_string", "rope"): [1, 1, 0.8, 0.8], ("reverse_string", "alibi"): [0.2, 0.2, 0, 0]}
    board = leaderboard_frame([record(t, f"transformer/{e}", 0, c) for (t, e), c in curves.items()])
    assert board.groupby("method")["rank"].mean()["transformer/nope"] == 1.5  # the per-own-tasks mean
    text = ranking_text(board, ["nope", "alibi"])
    summary = level_summary(board).set_index("method")
    assert summary.mean_rank["transformer/nope"] == 1.0
    assert "nope: rank per task" in text and "overall: mean rank 1.00 over the 1 task(s) every ranked method" in text
    assert "overall: mean rank 3.00 over the 1 task(s)" in text  # alibi: last on copy, the one common task


def test_the_randomized_claim_carries_its_probability_of_improvement_by_task():
    """Randomized rope beats rope on 3 tasks with every seed: P = 1 with an
    interval above 0.5; on the fourth task they tie (P = 0.5 there), which
    the average over tasks shows (0.88), the task being the unit."""
    def run(task, encoding, seed, test):
        return _banded(task, f"transformer/{encoding}", seed, test, test)

    records = []
    for i, task in enumerate(("even_pairs", "parity_check", "cycle_navigation", "modular_arithmetic")):
        for seed in range(3):
            base = 0.3 + 0.01 * seed
            records += [run(task, "rope", seed, base), run(task, "randomized-rope", seed, base if i == 3 else 0.8)]
    text = chomsky_report(records)
    row = next(line for line in text.splitlines() if line.startswith("| `rope` |"))
    assert "| 0.88 [" in row and "]; p 0.002 → 0.002 | randomized better on these 4 tasks (across tasks: not testable" in row


def test_a_difference_over_six_tasks_decides():
    """Six tasks where the variant gains 45 to 55 points: the t interval lies above 0 and the sign-flip test
    gives p = 2/64, so the verdict is across tasks (one base: one comparison, Holm changes nothing); five such
    tasks would not (p = 2/32 at best: not testable), and the probability of improvement decides on them."""
    tasks = ("even_pairs", "parity_check", "cycle_navigation", "modular_arithmetic", "reverse_string",
             "duplicate_string")
    records = [_banded(task, f"transformer/{e}", seed, x, x) for i, task in enumerate(tasks) for seed in range(2)
               for e, x in (("rope", 0.3), ("randomized-rope", 0.75 + 0.02 * i))]
    row = next(line for line in chomsky_report(records).splitlines() if line.startswith("| `rope` |"))
    assert "| `rope` | 6 | +50.0 [" in row and "]; p 0.031 → 0.031 |" in row and "| randomized better across tasks |" in row
    five = [r for r in records if r.task != "duplicate_string"]
    row = next(line for line in chomsky_report(five).splitlines() if line.startswith("| `rope` |"))
    assert "]; p 0.062, not testable |" in row and "randomized better on these 5 tasks (across tasks: not testable" in row


def test_the_randomized_claim_over_every_base_takes_the_task_as_the_unit():
    """**all**: per task, the mean gain over the bases (rope +50 on both tasks; alibi +10 on even_pairs, -10 on
    parity_check): +30 and +20 over 2 tasks, not 4 (base, task) pairs as if they were independent."""
    scores = {("rope", 0.3), ("randomized-rope", 0.8)}
    records = [_banded(task, f"transformer/{e}", seed, x, x) for task in ("even_pairs", "parity_check")
               for e, x in scores for seed in range(2)]
    records += [_banded(task, f"transformer/{e}", seed, x, x) for seed in range(2) for task, e, x in (
        ("even_pairs", "alibi", 0.5), ("even_pairs", "randomized-alibi", 0.6),
        ("parity_check", "alibi", 0.5), ("parity_check", "randomized-alibi", 0.4))]
    text = chomsky_report(records)
    # +30, +20: mean 25, sd 7.07, t(0.975, 1) = 12.7
    assert f"| **all** | 2 | +25.0 (2 units: no interval); p 0.5, not testable | 0.75 [0.75, 0.75]; p 0.18, not testable | {NOT_TESTABLE_2} |" in text


def test_formats_report_tests_each_format_against_plain_method_by_method():
    """Zhou et al.'s and Anil et al.'s findings: each format against the task in plain with the same method,
    the method (its seed mean) the unit within a task, the task the unit across tasks; a cell that did not fit
    pairs with nothing."""
    from lengthbench.studies.formats import formats_report

    scores = {  # (task label, method): seed scores on the test band
        ("addition", "rope"): (0.2, 0.4), ("addition", "fire"): (0.1, 0.3), ("addition", "randomized-rope"): (0.5, 0.5),
        ("addition+reversed", "rope"): (0.6, 0.8), ("addition+reversed", "fire"): (0.5, 0.5),
        ("addition+reversed", "randomized-rope"): (0.9, 0.9),
        ("addition-index-hints", "rope"): (0.4, 0.4), ("addition-index-hints", "fire"): (1.0, 1.0),
        ("parity_check", "rope"): (0.5, 0.5), ("parity_check+scratchpad", "rope"): (0.7, 0.9),
        ("addition+scratchpad", "rope"): (0.3, 0.3),
        ("parity_check", "fire"): (0.5, 0.5), ("parity_check+scratchpad", "fire"): (1.0, 1.0)}  # plain did not fit
    unfit = {("addition-index-hints", "fire"), ("parity_check", "fire")}
    records = [_banded(task, f"transformer/{e}", s, 1.0, x, fit=0.5 if (task, e) in unfit else 1.0)
               for (task, e), seeds in scores.items() for s, x in enumerate(seeds)]
    text = formats_report(records)
    # reversed: differences .4, .3, .4 over three methods: mean 36.7, sd 5.77, t(0.975, 2) = 4.303; P's
    # permutation p (0.0093) would decide, but three methods of one task are one task: no verdict
    assert ("| Zhou et al. (sign turned) | addition | `reversed` | 6/6 → 6/6, p 1 → 1 | 3 | +36.7 [+22.3, +51.0]; p 0.25, not "
            f"testable | 1.00 [1.00, 1.00]; p 0.0093, not testable | {NOT_TESTABLE_1} |") in text
    # plain addition is already Zhou et al.'s reversed order (least significant digit first): the report says so
    assert "so their finding predicts `plain` above `reversed`" in text
    # index hints: fire did not fit, so one method (rope: 40 against 30): no interval, no verdict either way;
    # P: 40 beats 20 and ties 40
    assert ("| Zhou et al. | addition | `index-hints` | 4/4 → 2/4, p 0.33, not testable | 1 | +10.0 (1 unit: no interval); no "
            f"test | 0.75 [0.50, 1.00]; p 1, not testable | {NOT_TESTABLE_1} |") in text  # seeds fit over rope and fire
    assert "| addition | index-hints | `transformer/fire` | 0/2 | 100.0 ± 0.0 (did not fit) |" in text
    assert "| Anil et al. | parity_check | `scratchpad` | 2/4 → 4/4, p 0.33, not testable | 1 | +30.0 (1 unit" in text  # fire fit only here
    # across tasks, the task the unit: +30 (parity) and 0 (addition): 2 tasks give no t interval and no verdict
    assert ("| Anil et al. | every task above, the task as the unit | `scratchpad` |  | 2 | +15.0 (2 units: no interval); p "
            f"1, not testable | 0.75 [0.50, 1.00]; p 0.44, not testable | {NOT_TESTABLE_2} |") in text
    assert "Horizon: trained on lengths 1..2, tested on 4..5, up to 2.5× the longest training length; budget: " in text
    # each cell beside its task's chance level on the test band (the final answer's: parity's about half)
    scratchpad = [line for line in text.splitlines() if line.startswith("| parity_check | scratchpad | `transformer/rope`")]
    assert "generalization length | chance (%, test band) |" in text and 30 < float(scratchpad[0].split("|")[-2]) < 70
    with pytest.raises(InputError, match="no task written in a format other than plain"):
        formats_report([r for r in records if "+" not in r.task and r.task != "addition-index-hints"])


def test_formats_report_tests_whether_a_format_changes_which_seeds_fit():
    """A format no seed fits in, where every seed fits in plain: no pair to compare on generalization, but the
    shift in seeds that fit has its stratified permutation p (within each method the six seeds' fit exchanged
    between the formats: all three methods at the extreme, p = 2 / 20^3); one method alone cannot decide
    (p = 2/20)."""
    from lengthbench.studies.formats import formats_report

    methods = ("rope", "fire", "randomized-rope")
    records = [_banded(task, f"transformer/{e}", s, 1.0, 0.5, fit=1.0 if task == "addition" else 0.5)
               for task in ("addition", "addition+reversed") for e in methods for s in range(3)]
    text = formats_report(records)
    assert "| Zhou et al. (sign turned) | addition | `reversed` | 9/9 → 0/9, p < 0.001 → < 0.001 | 0 |" in text
    one = [r for r in records if r.encoding == "rope"]
    assert "| Zhou et al. (sign turned) | addition | `reversed` | 3/3 → 0/3, p 0.1, not testable | 0 |" in formats_report(one)


def test_looped_report_pairs_looped_and_fixed_depth_by_task():
    """Fan et al.'s finding: the looped transformer against the fixed-depth one with the same encoding,
    paired by task (each task's seed means), where both fit."""
    from lengthbench.studies.looped import looped_report

    scores = {("parity_check", "transformer/nope"): (0.5, 0.5), ("parity_check", "looped/nope"): (0.9, 1.0),
              ("cycle_navigation", "transformer/nope"): (0.4, 0.6), ("cycle_navigation", "looped/nope"): (0.8, 0.8),
              ("parity_check", "transformer/rope"): (0.2, 0.2), ("parity_check", "looped/rope"): (0.4, 0.6),
              ("cycle_navigation", "transformer/rope"): (0.3, 0.3), ("cycle_navigation", "looped/rope"): (0.9, 0.9),
              ("copy", "transformer/nope"): (0.9, 0.9),  # no looped run on copy: not in the report
              ("binary_addition", "looped/nope"): (1.0, 1.0), ("binary_addition", "transformer/nope"): (0.1, 0.1)}
    unfit = {("cycle_navigation", "looped/rope"), ("binary_addition", "transformer/nope")}
    records = [_banded(task, m, s, 1.0, x, fit=0.5 if (task, m) in unfit else 1.0)
               for (task, m), seeds in scores.items() for s, x in enumerate(seeds)]
    text = looped_report(records)
    # nope: +45 (parity), +30 (cycle_navigation): mean 37.5, sd 10.6, t(0.975, 1) = 12.7: [-57.8, +100 (clipped)]
    assert ("| `nope` | 2 | +37.5 (2 units: no interval); p 0.5, not testable | 1.00 [1.00, 1.00]; p 0.056, not testable | "
            f"{NOT_TESTABLE_2} |") in text
    assert ("| `rope` | 1 | +30.0 (1 unit: no interval); no test | 1.00 [1.00, 1.00]; p 0.33, not testable | "
            f"{NOT_TESTABLE_1} |") in text  # cycle: unfit
    # seeds of both encodings together per task: parity (.9 1 .4 .6 against .5 .5 .2 .2: +37.5), cycle (nope
    # only: +30)
    assert "| every encoding (seeds together per task) | 2 | +33.8 (2 units: no interval)" in text
    assert "| cycle_navigation | `rope` | 2/2 | 30.0 ± 0.0 |" in text and "0/2 | 90.0 ± 0.0 (did not fit) |" in text
    assert "| copy |" not in text
    # each row ends with its task's chance level on the test band: parity's about half its examples
    assert "| looped: generalization length | chance (%, test band) |" in text
    parity = [line for line in text.splitlines() if line.startswith("| parity_check | `nope` |")][0]
    assert 30 < float(parity.split("|")[-2]) < 70
    with pytest.raises(InputError, match="no run of the looped transformer"):
        looped_report([r for r in records if r.config.family != "looped"])


def test_the_setting_states_a_fixed_budget_when_the_fit_is_only_logged():
    """A run whose fit checks are logged (patience 0) trains its whole budget: the report must not say "until fit"."""
    from lengthbench.leaderboard.verdicts import describe_config

    config = {"model": MODEL, "train_length": 16, "validation_length": 20, "test_length": 64, "steps": 4000,
              "batch_size": 64, "lr": 1e-3, "fit_check_every": 500, "fit_patience": 0}
    assert "test 21..64, 4000 steps of batch 64" in describe_config(config)
    assert "until fit, at most 4000 steps" in describe_config(config | {"fit_patience": 2})


def test_negative_report_pairs_the_eigenvalue_ranges_by_task_and_tests_the_fit_shift():
    """Grazzi et al.'s claim: beta in (0, 2) against (0, 1), the same family, on parity and modular counting.
    (0, 1) fits parity on no seed (the claim: it cannot learn it): the fit shift 2/4 → 4/4 carries its
    permutation p; where both fit (cycle_navigation) the difference is one task's: a task outside the claim
    where both fit (flip_flop) is in the per-task table, not in the comparison."""
    from lengthbench.studies.negative import negative_report

    scores = {("parity_check", "deltanet"): (0.5, 0.5), ("parity_check", "deltanet-negative"): (1.0, 1.0),
              ("cycle_navigation", "deltanet"): (0.4, 0.6), ("cycle_navigation", "deltanet-negative"): (0.9, 0.9),
              ("word_problem_s5", "deltanet-negative"): (0.2, 0.2),
              ("flip_flop", "deltanet"): (0.1, 0.1), ("flip_flop", "deltanet-negative"): (0.9, 0.9)}
    unfit = {("parity_check", "deltanet")}
    records = [_banded(task, m, s, 1.0, x, fit=0.5 if (task, m) in unfit else 1.0)
               for (task, m), seeds in scores.items() for s, x in enumerate(seeds)]
    text = negative_report(records)
    assert "# Negative eigenvalues in the delta rule (Grazzi et al. 2025)" in text
    assert ("| `deltanet-negative` against `deltanet` | 2/4 → 4/4, p 0.33, not testable | 1 | +40.0 (1 unit: no interval); "
            "no test | 1.00 [1.00, 1.00]; p 0.33, not testable") in text
    assert "| parity_check | `deltanet` | 0/2 | 50.0 ± 0.0 (did not fit) |" in text
    assert "| flip_flop | `deltanet-negative` | 2/2 | 90.0 ± 0.0 |" in text
    assert "The paper's: Grazzi et al.: trained on lengths up to 40" in text
    assert "gated-deltanet" not in text.split("## Beta in")[1]  # no gated pair ran: no row for it
    with pytest.raises(InputError, match="no pair of delta-rule runs"):
        negative_report([r for r in records if r.config.family == "deltanet"])
    assert "DeltaProduct" not in text  # no DeltaProduct ran: no section for it


def test_negative_report_reads_deltaproducts_claim_against_deltanet_on_the_word_problems():
    """Siems et al.'s claim: DeltaProduct (2 steps per token) against DeltaNet (1) with the same eigenvalue range,
    on the word problems: DeltaNet fits S3 on no seed, DeltaProduct on every one (the fit shift 2/4 → 4/4 over S3 and S5); where
    both fit (S5) the difference is one task's; parity, outside the claim, is read in the eigenvalue pairs only."""
    from lengthbench.studies.negative import negative_report

    scores = {("word_problem_s3", "deltanet-negative"): (0.2, 0.2), ("word_problem_s3", "deltaproduct-2-negative"): (0.9, 0.9),
              ("word_problem_s5", "deltanet-negative"): (0.3, 0.5), ("word_problem_s5", "deltaproduct-2-negative"): (0.6, 0.8),
              ("parity_check", "deltanet-negative"): (1.0, 1.0), ("parity_check", "deltaproduct-2-negative"): (0.1, 0.1),
              ("word_problem_s3", "deltaproduct-2"): (0.5, 0.5)}
    unfit = {("word_problem_s3", "deltanet-negative")}
    records = [_banded(task, m, s, 1.0, x, fit=0.5 if (task, m) in unfit else 1.0)
               for (task, m), seeds in scores.items() for s, x in enumerate(seeds)]
    section = negative_report(records).split("## More Householder steps per token")[1]
    assert "Siems" in section and "word_problem_s3, word_problem_s5" in section
    assert "| `deltaproduct-2-negative` against `deltanet-negative` | 2/4 → 4/4, p 0.33" in section
    assert "| 1 | +30.0 (1 unit: no interval); no test |" in section  # S5 only: 70 against 40
    assert "`deltaproduct-3" not in section and "`deltaproduct-2` against" not in section  # pairs that ran only


def test_state_report_says_who_tracks_the_state_past_the_training_lengths():
    """S5: the LSTM fits and reaches past 2x on both seeds, the transformer fits and fails, ssm does not fit
    (named in the comparison as fitting nowhere, not compared)."""
    from lengthbench.studies.state import state_report

    records = [record("word_problem_s5", m, s, [1, 1, 1, t, t], validation_length=3)
               for m, t in (("lstm", 1.0), ("transformer/rope", 0.1), ("transformer/forget", 0.2)) for s in range(2)]
    records += [record("word_problem_s5", "ssm", s, [0.5, 0.5, 0.5, 0.1, 0.1], validation_length=3) for s in range(2)]
    records += [record("word_problem_s5", "rnn", s, [1, 1, 1, 1, 0.1], validation_length=3) for s in range(2)]
    # S3: the fit lstm loses to the transformer; an rnn that did not fit (with a test score of 100) enters no comparison
    records += [record("word_problem_s3", m, s, [f, f, f, t, t], validation_length=3)
                for m, f, t in (("lstm", 1, 0.1), ("rnn", 0.5, 1.0), ("transformer/rope", 1, 0.5)) for s in range(2)]
    records += [record("copy", "lstm", s, [1, 1, 1, 1, 1], validation_length=3) for s in range(2)]  # not a state task
    text = state_report(records)
    assert "| transformer (every encoding) | word_problem_s5 | 2/2 | 10.0–20.0 | 0 |" in text
    # rnn reaches exactly 4 (2x the training length 2): it counts, as lstm (5) does
    assert "| nonlinear RNNs (`rnn`, `lstm`) | word_problem_s5 | 2/2 | 55.0–100.0 | 2 |" in text
    assert "| word_problem_s3 | transformer (every encoding) | 0.00 [0.00, 0.00]" in text
    assert "| diagonal state space (`ssm`) | word_problem_s5 | 0/1 |  | 0 |" in text
    # 4 RNN seeds (100, 100, 55, 55) against 4 transformer seeds (10, 10, 20, 20): every pair won
    # P's permutation p (0.029) would decide, but one task is too few for a verdict
    assert ("| word_problem_s5 | transformer (every encoding) | 1.00 [1.00, 1.00]; p 0.029, not testable | "
            f"{NOT_TESTABLE_1} |") in text
    # ssm ran S5 and fit it nowhere: named, not compared; no stack or tape RNN ran: no row
    assert "| word_problem_s5 | diagonal state space (`ssm`) |  | none of their cells fit the training lengths" in text
    assert "RNNs with a stack or tape" not in text.split("## Nonlinear RNNs against each group")[1]
    assert "No method that ran fit" not in text  # something fit each task
    none_fit = state_report([r for r in records if r.task == "word_problem_s3" and r.method == "rnn"] + records[:2])
    assert "No method that ran fit word_problem_s3 at its training lengths at this budget: no claim about it" in none_fit
    assert "| copy |" not in text
    with pytest.raises(InputError, match="no state-tracking task"):
        state_report([r for r in records if r.task == "copy"])


def test_mechanisms_report_pairs_each_mechanism_with_rope_and_nope_where_both_fit():
    from lengthbench.studies.mechanisms import mechanisms_report

    scores = {("copy", "forget"): (0.9, 0.7), ("copy", "rope"): (0.5, 0.5), ("copy", "nope"): (0.6, 0.6),
              ("parity_check", "forget"): (0.6, 0.6), ("parity_check", "rope"): (0.5, 0.5),
              ("parity_check", "nope"): (0.5, 0.5), ("parity_check", "path"): (0.9, 0.9)}
    unfit = {("parity_check", "path")}
    records = [_banded(task, f"transformer/{e}", s, 1.0, x, fit=0.5 if (task, e) in unfit else 1.0)
               for (task, e), seeds in scores.items() for s, x in enumerate(seeds)]
    text = mechanisms_report(records)
    # forget - rope: copy +30, parity +10: mean 20, sd 14.1, t(0.975, 1) = 12.7: the interval clipped to +-100
    assert ("| `forget` | `rope` | 2 | +20.0 (2 units: no interval); p 0.5, not testable | 1.00 [1.00, 1.00]; p 0.056, not "
            f"testable | {NOT_TESTABLE_2} |") in text
    assert "| `path` | `rope` | 0 |  |  | not tested: no task where both fit |" in text
    assert "| every mechanism | every static encoding | 2 |" in text
    assert "No published claim compares these mechanisms" in text
    with pytest.raises(InputError, match="no run of a data-dependent mechanism"):
        mechanisms_report([r for r in records if r.encoding in ("rope", "nope")])


def test_recall_report_reads_each_number_of_pairs_and_describes_attention_against_each_state():
    """Zoology's claim on mqar: each method's test exact match at each tested number of pairs (4 and 5 here,
    trained on 1..2, chosen on 3), and the transformer encoding chosen on validation against each recurrent
    family that fit, described (one task: no verdict); a cell that did not fit is flagged and not compared."""
    from lengthbench.studies.recall import recall_report

    def run(method, seed, validation, test, fit=1.0):
        return record("mqar", method, seed, [fit, fit, validation, *test], validation_length=3)

    records = []
    for seed in range(3):
        records += [run("transformer/rope", seed, 0.9, [0.7 + 0.1 * seed, 0.6]),
                    run("transformer/nope", seed, 0.5, [1.0, 1.0]),  # best on test, worse on validation
                    run("lstm", seed, 0.5, [0.2, 0.0]), run("ssm", seed, 0.5, [0.0, 0.0], fit=0.4),
                    record("copy", "lstm", seed, [1, 1, 1, 1, 1], validation_length=3)]  # not mqar: ignored
    text = recall_report(records)
    assert "| method | seeds | fit | 4 pairs | 5 pairs | test band |" in text
    assert "| `transformer/rope` | 3 | yes | 80.0 | 60.0 | 70.0 ± 5.0 |" in text  # means over seeds
    assert "| `ssm` | 3 | no | 0.0 | 0.0 | 0.0 ± 0.0 |" in text
    assert "chosen on the validation band (`transformer/rope`)" in text and "trained on 1..2" in text
    assert f"| `lstm` | 1 | +60.0 (1 unit: no interval); no test | 1.00 [1.00, 1.00]; p 0.1, not testable | {NOT_TESTABLE_1} |" in text
    comparisons = text.split("## Attention against each fixed-size state")[1]
    assert "`ssm`" not in comparisons and "copy" not in text  # did not fit: not compared; another task: ignored
    with pytest.raises(InputError, match="no record of mqar"):
        recall_report([record("copy", "transformer/rope", 0, [1, 1, 1])])


def test_recognition_report_tests_each_recurrence_against_the_transformer_chosen_on_validation():
    """FLaRe's claim over the languages (the task the unit): the LSTM against the transformer encoding chosen per
    language on the validation band (length 3), never on the test band (4..5); another level's task is ignored."""
    from lengthbench.studies.recognition import recognition_report

    def run(task, method, seed, validation, test):
        return record(task, method, seed, [1, 1, validation, test, test], validation_length=3)

    languages = ("recognize_first", "recognize_parity", "recognize_majority")
    records = [run(t, m, s, v, x) for s in range(3) for t in languages
               for m, v, x in (("transformer/rope", 0.9, 0.6 + 0.05 * s), ("transformer/nope", 0.5, 0.95),
                               ("lstm", 0.9, 0.9))]
    slices = {"member": {"exact_match": 1.0, "n": 4}, "distance 1": {"exact_match": 0.5, "n": 2},
              "distance 3+": {"exact_match": 1.0, "n": 2}}
    for r in records:
        for row in r.per_length[3:] if r.method == "lstm" else ():
            row["slices"] = slices
    records.append(run("copy", "lstm", 0, 1.0, 1.0))
    text = recognition_report(records)
    assert "| recognize_parity | `lstm` |" in text and "copy" not in text
    by_distance = text.split("## By distance to the language")[1].split("##")[0]
    assert "| method | member | distance 1 | distance 3+ |" in by_distance  # the slices some run has, in order
    assert "| `lstm` | 100.0 (72) | 50.0 (36) | 100.0 (36) |" in by_distance  # 3 languages x 3 seeds x 2 lengths
    comparison = text.split("## Each recurrence against the transformer")[1]
    row = [line for line in comparison.splitlines() if line.startswith("| `lstm` |")][0]
    assert row.startswith("| `lstm` | 3 | +25.0 [+25.0, +25.0]")  # 90 against rope's 60..70 (chosen), not nope's 95
    with pytest.raises(InputError, match="no record of a recognition task"):
        recognition_report([run("copy", "lstm", 0, 1.0, 1.0)])
