"""`lengthbench perf` end to end at its smallest setting (figures are not
asserted, only that each is measured and consistent)."""

import json

from benchmark.cli import main


def test_perf_measures_and_writes_json(tmp_path, capsys):
    out = tmp_path / "perf.json"
    assert main(["perf", "--configs", "quick", "--steps", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["matmul_peak_gflops"] > 0
    quick = report["configs"]["quick"]
    for side in ("plain_loop", "trainer"):
        s = quick[side]
        assert s["steps_per_s"] > 0 and abs(s["steps_per_s"] * s["seconds_per_step"] - 1) < 1e-9
        assert s["useful_gflops"] > 0 and 0 < s["share_of_peak"] < 1
    assert 0 < quick["padding_share_padded_batch"] < 1 and 0 <= quick["padding_share_buckets"] < 1
    assert 0 < quick["data_share_of_trainer_step"] < 1
    printed = capsys.readouterr().out
    assert "fp32 matmul peak:" in printed and "trainer / plain loop:" in printed
