"""`lengthbench perf` end to end at its smallest setting (figures are not
asserted, only that each is measured and consistent)."""

import json

import pytest

from lengthbench.benchmark.presets import get_preset
from lengthbench.cli import main


def test_perf_measures_and_writes_json(tmp_path, capsys):
    out = tmp_path / "perf.json"
    assert main(["perf", "--configs", "quick", "--steps", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["matmul_peak_gflops"] > 0
    quick = report["configs"]["quick"]
    for side in ("plain_loop", "solo"):
        s = quick[side]
        assert s["run_steps_per_s"] > 0 and abs(s["run_steps_per_s"] * s["seconds_per_run_step"] - 1) < 1e-9
        # the share of the peak measured in the same run (above 1 when the machine's load fell between the two
        # measurements, as it may beside other work: only its arithmetic is asserted)
        assert s["useful_gflops"] > 0 and s["share_of_peak"] == pytest.approx(s["useful_gflops"]
                                                                              / report["matmul_peak_gflops"])
    assert "solo_bf16" not in quick
    assert 0 <= quick["padding_share_trainer"] < quick["padding_share_padded_batch"] < 1  # packed rows
    assert 0 < quick["data_share_of_trainer_step"] < 1
    printed = capsys.readouterr().out
    assert "fp32 matmul peak:" in printed and "solo trainer / plain loop:" in printed


def test_perf_bf16_times_the_trainer_and_checks_accuracy(tmp_path, monkeypatch, capsys):
    from conftest import make_tiny_preset

    import lengthbench.benchmark.tools.perf as perf

    monkeypatch.setattr(perf, "get_preset", lambda name: make_tiny_preset() if name == "smoke" else get_preset(name))
    out = tmp_path / "perf.json"
    assert main(["perf", "--configs", "quick", "--steps", "1", "--bf16", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["configs"]["quick"]["solo_bf16"]["run_steps_per_s"] > 0
    check = report["bf16_accuracy_check"]
    assert check["cells"] == 3 and check["failed_in_bf16"] == 0  # tiny: 4 cells, one n/a
    assert 0 <= check["ood_exact_match_mean_abs_diff"] <= check["ood_exact_match_max_abs_diff"] <= 1
    assert "bf16 autocast vs fp32 on smoke (3 cells" in capsys.readouterr().out


def test_perf_against_reads_the_solo_trainer_of_either_report_layout():
    from lengthbench.benchmark.tools.perf_against import solo_steps_per_s

    assert solo_steps_per_s({"configs": {"quick": {"solo": {"run_steps_per_s": 80.0}}}}, "quick") == 80.0
    assert solo_steps_per_s({"configs": {"quick": {"group_1": {"run_steps_per_s": 50.0}}}}, "quick") == 50.0


def test_perf_against_refuses_bad_input_in_one_line(capsys):
    from lengthbench.benchmark.tools.perf_against import main as perf_against

    assert perf_against(["no-such-commit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["lengthbench: error: 'no-such-commit' is not a commit of this repository; give a commit, e.g. "
                   "d900fb1 or HEAD~3"]
    assert perf_against(["HEAD", "--configs", "no-such-config", "--rounds", "1", "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["lengthbench: error: --configs no-such-config: no such perf configuration; valid: reference, "
                   "quick, horizon"]  # before any commit is unpacked


def test_perf_times_protocol_v2s_shapes():
    from lengthbench.benchmark.tools.perf import perf_configs

    horizon = perf_configs()["horizon"]
    assert (horizon.train_length, horizon.batch_size, horizon.model.d_model, horizon.model.n_layers) == (16, 64, 64, 2)


def test_perf_methods_time_each_method_beside_rope_and_refuse_a_bad_name(capsys):
    """--methods: each method's step at quick's shapes over the rotary transformer's, the ratio of the medians."""
    from lengthbench.benchmark.tools.perf import PERF_BASELINE, method_config, method_step_ratios

    assert method_config("deltanet").family == "deltanet" and method_config("transformer/path").encoding == "path"
    ratios = method_step_ratios(["deltanet"], steps=1, rounds=1)
    assert list(ratios) == [PERF_BASELINE, "deltanet"] and ratios[PERF_BASELINE]["vs_baseline"] == 1.0
    assert ratios["deltanet"]["vs_baseline"] == pytest.approx(
        ratios["deltanet"]["seconds_per_step"] / ratios[PERF_BASELINE]["seconds_per_step"])
    for bad, needle in (("transformer/nosuch", "unknown encoding 'nosuch'"), ("transformer", "takes an encoding"),
                        ("deltanet/rope", "takes no encoding")):
        assert main(["perf", "--methods", bad, "--out", ""]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err
