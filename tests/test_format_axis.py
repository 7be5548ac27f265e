"""Formats as an axis of the grid and the leaderboard: a cell is task x format
x method, named by its task label (``copy+reversed``); a format that cannot
write a task is an n/a cell with its reason; boards carry the format column
and old boards read as their labels' format."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

import lengthbench
from lengthbench.benchmark.applicable import not_applicable
from lengthbench.benchmark.config import Cut
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.versions import check_unchanged, code_versions
from lengthbench.cli import main
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.schema import LeaderboardFormatError, read_leaderboard
from lengthbench.tasks import get_task


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The tiny grid (copy, parity_check x nope, coupled) in plain and reversed."""
    from conftest import make_tiny_preset

    from lengthbench.benchmark.presets import PRESETS, register_preset

    register_preset(make_tiny_preset())
    try:
        root = tmp_path_factory.mktemp("formats")
        assert main(["run", "--preset", "tiny", "--formats", "plain,reversed", "--results", str(root),
                     "--no-progress", "--workers", "1"]) == 0
    finally:
        PRESETS.remove("tiny")
    return root


def test_a_cell_is_task_by_format_by_method_and_a_format_that_cannot_apply_is_na(board):
    records = [json.loads(p.read_text()) for p in board.glob("*__seed*.json")]
    by_task = {}
    for record in records:
        by_task.setdefault(record["config"]["task"], []).append(record)
    assert sorted(by_task) == ["copy", "copy+reversed", "parity_check", "parity_check+reversed"]
    assert {r["status"] for r in by_task["parity_check+reversed"]} == {"not_applicable"}
    assert all("format reversed parity_check's answer is one symbol" in r["reason"]
               for r in by_task["parity_check+reversed"])
    assert {r["status"] for r in by_task["copy+reversed"]} == {"ok"}  # coupled applies: ids follow their symbols


def test_the_board_has_the_format_column_and_reads_back(board):
    frame = read_leaderboard(board / "leaderboard.csv")
    assert dict(zip(frame.task, frame.format)) == {"copy": "plain", "copy+reversed": "reversed",
                                                    "parity_check": "plain", "parity_check+reversed": "reversed"}
    assert list(frame.columns[:3]) == ["schema_version", "task", "format"]
    na = frame[frame.task == "parity_check+reversed"]
    assert set(na.status) == {"not_applicable"} and na.chance_exact_match.isna().all()


def test_an_old_board_reads_as_its_labels_format_and_a_wrong_format_is_refused(board, tmp_path):
    frame = read_leaderboard(board / "leaderboard.csv")
    old = tmp_path / "v7.csv"
    frame.drop(columns=["format"]).assign(schema_version=7).to_csv(old, index=False)
    assert list(read_leaderboard(old).format) == list(frame.format)
    wrong = tmp_path / "wrong.csv"
    frame.assign(format=["plain"] * len(frame)).to_csv(wrong, index=False)
    with pytest.raises(LeaderboardFormatError, match="column 'format': 'plain' is not 'reversed'"):
        read_leaderboard(wrong)


def test_compare_pairs_cells_by_format(board):
    """The same board against itself: every format's cell is paired with its own, no protocol mismatch."""
    table = lengthbench.compare(board / "leaderboard.csv", board / "leaderboard.csv")
    assert set(table.task) == {"copy", "copy+reversed", "parity_check", "parity_check+reversed"}


def test_the_grid_names_each_cell_once_whatever_the_spelling():
    preset = get_preset("smoke").with_grid(tasks=["addition", "addition+index-hints", "copy+reversed"],
                                           formats=["plain", "index-hints"], encodings=["nope"])
    assert preset.grid_tasks() == ["addition", "addition-index-hints", "copy+reversed"]
    assert [c.task for c in grid_configs(preset)] == ["addition", "addition-index-hints", "copy+reversed"]
    assert preset.run_config("addition+index-hints", "nope", 0) == preset.run_config("addition-index-hints", "nope", 0)


def test_a_tasks_settings_and_cuts_hold_in_every_format():
    preset = replace(get_preset("smoke"), task_settings={"copy": {"steps": 7, "model": {"d_model": 8}}})
    assert preset.run_config("copy+reversed", "nope", 0).steps == preset.run_config("copy", "nope", 0).steps == 7
    assert preset.run_config("copy+reversed", "nope", 0).model.d_model == 8
    assert preset.run_config("reverse_string+reversed", "nope", 0).steps == preset.settings["steps"]
    cut = Cut("why", methods=("transformer/rope",), tasks=("copy",))
    assert cut.covers("copy+reversed", "transformer/rope") and not cut.covers("reverse_string", "transformer/rope")


def test_a_formats_version_enters_the_config_and_its_source_is_guarded(monkeypatch):
    from lengthbench.benchmark import versions

    assert code_versions("addition-index-hints", "nope")["format"] == 2
    assert "format" not in code_versions("addition+reversed", "nope")
    config = get_preset("smoke").run_config("copy+reversed", "nope", 0)
    monkeypatch.setattr(versions, "unrecorded_changes", lambda: ["format:reversed"])
    with pytest.raises(InputError, match="the source of format:reversed changed"):
        check_unchanged([config])
    check_unchanged([replace(config, cell=replace(config.cell, format="plain"))])  # a plain cell does not use it


def test_randomized_ranges_count_the_formats_tokens():
    """index hints double addition's input: a range that places plain addition's longest
    evaluated sequence cannot place the hinted one, and the cell is refused at plan time."""
    preset = get_preset("smoke")
    plain = replace(preset.run_config("addition", "randomized-rope", 0), encoding_params={"max_len": 40})
    hinted = replace(plain, cell=replace(plain.cell, format="index-hints"))
    assert not_applicable(plain) is None
    assert "cannot place the longest evaluated sequence" in not_applicable(hinted)


def test_unknown_and_combined_labels_are_refused_by_name(capsys):
    for bad, needle in [("copy+revresed", "unknown format (in task label 'copy+revresed') 'revresed' (did you mean "
                                          "'reversed'?)"),
                        ("addition-index-hints+reversed", "formats do not combine"),
                        ("cpy+reversed", "unknown task 'cpy'")]:
        with pytest.raises(InputError, match=re.escape(needle)):
            get_task(bad)
    assert main(["run", "--preset", "smoke", "--formats", "plain,revresed", "--plan"]) == 2
    assert "unknown format 'revresed'" in capsys.readouterr().err


def test_list_formats_names_each_format_and_where_it_applies(capsys):
    assert main(["list", "formats"]) == 0
    out = capsys.readouterr().out
    assert "`index-hints` | `addition-index-hints`, `multiplication+index-hints` |" in out
    assert "`reversed` |" in out and "`parity_check+reversed`" not in out


def test_instances_of_a_format_with_given_symbols_score_the_answer_alone():
    """Index hints: an instance's answer_ids is the whole output (hints and
    digits), ``scored`` its digits; a prediction with every digit right scores
    1 whatever hints it writes, and one wrong digit makes it wrong."""
    from lengthbench.benchmark.instances import evaluation_instances, score_predictions

    instances = evaluation_instances("addition-index-hints", [3], 4)
    assert all(i["scored"] == [1, 3, 5, 7] and len(i["answer_ids"]) == 8 for i in instances)
    assert all(i["input_ids"][-1] == 2 and i["format_version"] == 2 for i in instances)  # the prompt ends at <sep>

    def scored(edit):
        rows = [(n, {**i, "prediction_ids": edit(list(i["answer_ids"]))}) for n, i in enumerate(instances, 1)]
        return score_predictions("addition-index-hints", rows)[0]["exact_match"]

    assert scored(lambda ids: ids) == 1.0
    assert scored(lambda ids: [0 if k % 2 == 0 else x for k, x in enumerate(ids)]) == 1.0  # hints not scored
    assert scored(lambda ids: ids[:3] + [ids[3] + 1] + ids[4:]) == 0.0
    assert "scored" not in evaluation_instances("copy+reversed", [3], 1)[0]  # every output symbol is the answer


def test_the_format_cells_join_the_horizon_reference():
    """horizon-formats keeps horizon's protocol: its plain cells are horizon's own runs (same ids), so its
    other cells join that folder by running them."""
    formats = {c.run_id for c in grid_configs(get_preset("horizon-formats"))}
    horizon = {c.run_id for c in grid_configs(get_preset("horizon"))}
    shared = formats & horizon
    assert {run_id.split("__")[0] for run_id in shared} == {"addition", "parity_check", "copy"}
    assert len(shared) == 3 * 6 * 3  # 3 plain tasks x 6 encodings x 3 seeds, none cut in horizon
    # the formats themselves with the three encodings of its budget (coupled, abacus and nope cut, with the reason)
    formatted = {(c.task, c.encoding) for c in grid_configs(get_preset("horizon-formats")) if "+" in c.task
                 or c.task == "addition-index-hints"}
    assert {e for _, e in formatted} == {"rope", "fire", "randomized-rope"} and len(formatted) == 5 * 3


def test_the_looped_cells_join_the_horizon_reference():
    """horizon-looped: its fixed-depth cells are horizon's own runs; the looped family trains on the tasks its
    budget keeps, and a cut naming a family cuts it with every encoding."""
    looped = grid_configs(get_preset("horizon-looped"))
    horizon = {c.run_id for c in grid_configs(get_preset("horizon"))}
    assert {c.run_id for c in looped if c.family == "transformer"} <= horizon
    assert {(c.task, c.method) for c in looped if c.family == "looped"} == {
        (t, f"looped/{e}") for t in ("parity_check", "cycle_navigation") for e in ("nope", "rope")}
    assert {(c.model.d_model, c.model.n_layers) for c in looped if c.family == "looped"} == {(104, 1)}
