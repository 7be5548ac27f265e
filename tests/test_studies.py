"""Studies as units: every study is one registry entry that `list studies` and
`reproduce` read, and a study written in a folder of its own (a throwaway one
here) is added by registering it, then run and reproduced like the built-ins."""

from __future__ import annotations

import importlib.util
import json
import textwrap

import pytest

from lengthbench.benchmark.presets import PRESETS
from lengthbench.cli import main
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.studies import STUDIES, Study, register_study

THROWAWAY = textwrap.dedent('''
    """A study of one question: does NoPE copy past its training lengths?"""
    from dataclasses import replace

    from lengthbench.benchmark.presets import PRESETS, register_preset
    from lengthbench.leaderboard.aggregate import leaderboard_frame
    from lengthbench.leaderboard.verdicts import horizon_text, pct, setup_text
    from lengthbench.studies import Study, register_study

    CLAIM = "NoPE copies past its training lengths (a claim made up for this test)"
    register_preset(replace(PRESETS["smoke"], name="throwaway-grid", tasks=("copy",), encodings=("nope",),
                            description="the throwaway study's grid"))


    def throwaway_report(records):
        board = leaderboard_frame(records)
        row = board[board.method == "transformer/nope"].iloc[0]
        return "\\n".join(["# Throwaway", "", setup_text(records), "", horizon_text(records, "theirs: 1..4 -> 8"), "",
                          f"Published: {CLAIM}. Ours: {pct(row.ood_exact_match_mean)}% test exact match.", ""])


    register_study(Study(name="throwaway", about="does NoPE copy far", presets=("throwaway-grid",),
                         records="nowhere/records", sources=("Nobody 2026",), protocol="theirs",
                         report=throwaway_report))
''')


@pytest.fixture
def throwaway_study(tmp_path):
    folder = tmp_path / "my_study"
    folder.mkdir()
    (folder / "throwaway.py").write_text(THROWAWAY)
    spec = importlib.util.spec_from_file_location("throwaway_study_module", folder / "throwaway.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    yield "throwaway"
    STUDIES.remove("throwaway")
    PRESETS.remove("throwaway-grid")


def test_every_study_names_registered_presets_and_where_its_records_are():
    assert STUDIES.names()[:3] == ["horizon", "chomsky", "nope"]
    for name, study in STUDIES.items():
        assert study.name == name and study.presets and study.records.endswith("/records")
        for preset in study.presets:
            assert preset in PRESETS, (name, preset)
    with_reports = {n for n, s in STUDIES.items() if s.report is not None}
    assert {"chomsky", "nope", "coupling", "copying", "formats", "looped", "negative", "state", "mechanisms",
            "fit"} <= with_reports  # a study added since may bring its own


def test_list_studies_prints_each_with_its_presets_sources_and_report(capsys):
    assert main(["list", "studies"]) == 0
    out = capsys.readouterr().out
    for name, study in STUDIES.items():
        assert f"{name}: {study.about}" in out
        assert f"presets: {', '.join(study.presets)}" in out
        for source in study.sources:
            assert f"source: {source}" in out
    assert "report: lengthbench reproduce chomsky" in out and "report: none" in out


def test_a_study_in_its_own_folder_is_registered_run_and_reproduced(throwaway_study, tmp_path, capsys):
    results, out = tmp_path / "records", tmp_path / "report"
    assert main(["run", "--preset", "throwaway-grid", "--results", str(results), "--no-progress"]) == 0
    assert main(["list", "studies"]) == 0
    assert "throwaway: does NoPE copy far" in capsys.readouterr().out
    assert main(["reproduce", throwaway_study, "--results", str(results), "--out", str(out)]) == 0
    text = (out / "reproduction.md").read_text()
    assert text.startswith("# Throwaway") and "NoPE copies past its training lengths" in text
    assert "The paper's: theirs: 1..4 -> 8" in text and "% test exact match." in text
    assert json.loads((out / "reproduction.json").read_text())["paper"] == "throwaway"


def test_a_study_without_a_report_and_a_bad_registration_are_refused_in_one_line(tmp_path):
    with pytest.raises(InputError, match="study 'horizon' has no report.*studies with a report: chomsky"):
        from lengthbench.api import reproduce
        reproduce("horizon", tmp_path)
    with pytest.raises(UnknownNameError, match="unknown preset 'no-such-grid'"):
        register_study(Study(name="broken", about="", presets=("no-such-grid",), records="x/records"))
    with pytest.raises(InputError, match="names no preset"):
        register_study(Study(name="empty", about="", presets=(), records="x/records"))
    with pytest.raises(InputError, match="study name 'bad name' is not valid"):
        register_study(Study(name="bad name", about="", presets=("smoke",), records="x/records"))
    assert "broken" not in STUDIES and "empty" not in STUDIES


@pytest.mark.slow
def test_a_study_preset_is_found_from_below_the_studies_layer():
    """A tool under benchmark/ looks a study's preset up by name: the preset
    registry loads the installed ``lengthbench.presets`` entry points (the
    studies, as setup.cfg installs them) on the first miss."""
    import subprocess
    import sys

    code = ("import sys; from lengthbench.benchmark.presets import get_preset; "
            "assert 'lengthbench.studies' not in sys.modules; "
            "print(get_preset('horizon-zoo').name, 'lengthbench.studies' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["horizon-zoo", "True"]
