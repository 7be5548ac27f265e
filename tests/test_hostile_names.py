"""Names are data: task, method and encoding names from records and CSVs
follow the registration rule (a length bound too), and every writer escapes
for its format: the page's inline data, Markdown cells, and CSV cells a
spreadsheet would run as a formula, which lengthbench still reads back exactly."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from lengthbench.benchmark.files import write_csv
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RecordError, RunRecord, read_record
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.html import render_html
from lengthbench.leaderboard.schema import LeaderboardFormatError, read_leaderboard
from lengthbench.leaderboard.tables import markdown_table
from lengthbench.models.encodings import ENCODINGS, PositionEncoding, register_encoding

HOSTILE = ["x|y", "a\nb", "<script>", "=1+1", "-cmd", "@SUM(A1)", "a" * 250, "../etc", "a__b", ""]


@pytest.mark.parametrize("name", ["a" * 65, "a" * 250])
def test_an_overlong_encoding_name_is_refused_at_registration(name):
    with pytest.raises(InputError, match="characters long; at most 64"):
        register_encoding(name)(PositionEncoding)
    assert name not in ENCODINGS


@pytest.mark.parametrize("name", [n for n in HOSTILE if n])
def test_a_record_with_a_hostile_encoding_name_is_refused_on_read(tmp_path, name):
    config = get_preset("smoke").run_config("copy", "nope", 0)
    config = replace(config, cell=replace(config.cell, encoding=name))
    record = RunRecord(config, "test", "", "", {}, "", status="not_applicable", reason="n/a")
    data = record.to_json()
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data))
    path = path.rename(tmp_path / f"{json.dumps(config.run_id)[1:-1].replace('/', '_')[:100]}.json")
    with pytest.raises(RecordError, match="its encoding name"):
        read_record(path)


@pytest.fixture
def board_csv(tmp_path, tiny_preset):
    from lengthbench.cli import main

    assert main(["run", "--preset", "tiny", "--results", str(tmp_path / "r"), "--no-progress", "--workers", "1"]) == 0
    return tmp_path / "r" / "leaderboard.csv"


@pytest.mark.parametrize("column, value", [("task", "=1+1"), ("method", "transformer/<script>"),
                                           ("encoding", "x|y"), ("model", "a" * 250), ("method", "-cmd")])
def test_a_csv_with_a_hostile_name_is_refused_naming_row_and_column(board_csv, column, value):
    frame = pd.read_csv(board_csv, dtype=str, keep_default_na=False)
    frame.loc[0, column] = value
    frame.to_csv(board_csv, index=False)
    with pytest.raises(LeaderboardFormatError, match=rf"row 2, column '{column}'"):
        read_leaderboard(board_csv)


def test_text_cells_that_look_like_formulas_are_guarded_and_read_back_exactly(board_csv):
    board = read_leaderboard(board_csv)
    evidence = ["=HYPERLINK(\"http://x\")", "+1", "-2", "@A1", "\tx", "plain", "'=kept as written"]
    board = pd.concat([board] * 3, ignore_index=True).iloc[:len(evidence)]
    board["task"] = [f"task{i}" for i in range(len(board))]
    board["selection_evidence"] = evidence
    write_csv(board_csv, board)
    raw = board_csv.read_text()
    assert "'=HYPERLINK" in raw and ",'+1," in raw and ",'-2," in raw and ",'@A1," in raw and ",plain," in raw
    assert list(read_leaderboard(board_csv).selection_evidence) == list(board.selection_evidence)


def test_the_page_keeps_hostile_text_inside_its_data():
    hostile = "<!--</script><script>alert(1)</script>"
    board = pd.DataFrame([{"task": hostile, "level": "R", "method": "transformer/" + hostile, "model": "transformer",
                           "encoding": hostile, "status": "not_applicable", "train_length": 2, "validation_length": 0,
                           "test_length": 4, "fit_threshold": 0.9, "n_fit": 0, "fit_status": "", "selected": "",
                           "selection_evidence": "", "n_seeds": 0, "n_failed": 0, "n_errors": 0,
                           "ood_exact_match_mean": float("nan"), "rank": float("nan")}])
    page = render_html(board, pd.DataFrame(), "t")
    script = page[page.index("<script"):]
    assert page.count("</script>") == 2 and "<!--" not in page  # the template's own two
    assert "alert(1)" in script and "<script>alert" not in page


def test_markdown_cells_cannot_split_a_table_or_open_a_tag():
    [header, rule, row] = markdown_table(["task"], [["x|y\nz <script> <!-- a < b"]])
    assert row == "| x\\|y z &lt;script> &lt;!-- a < b |"
