"""The shipped reference leaderboards are what their shipped records give:
every record passes validation and the tables rebuild byte for byte."""

from pathlib import Path

import pytest

from lengthbench.benchmark.records import length_frame, load_records
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.html import render_html
from lengthbench.leaderboard.tables import write_tables

REFERENCE = Path(__file__).resolve().parent.parent / "leaderboard" / "reference"


@pytest.mark.parametrize("folder", sorted(p for p in REFERENCE.iterdir() if (p / "records").is_dir()),
                         ids=lambda p: p.name)
def test_reference_tables_rebuild_from_their_records(folder, tmp_path):
    records = load_records(folder / "records")
    assert records
    paths = write_tables(leaderboard_frame(records), tmp_path)
    for kind in ("csv", "md", "levels_csv"):
        assert paths[kind].read_bytes() == (folder / paths[kind].name).read_bytes(), paths[kind].name
    page = render_html(leaderboard_frame(records), length_frame(records), f"lengthbench leaderboard: {folder.name}")
    assert page == (folder / "leaderboard.html").read_text()


@pytest.mark.parametrize("folder", sorted(p for p in REFERENCE.iterdir() if (p / "reproduction.md").exists()),
                         ids=lambda p: p.name)
def test_reproduction_reports_rebuild_from_their_records(folder):
    from lengthbench.leaderboard.reproduction import REPORTS

    records = load_records(folder / "records")
    assert REPORTS[folder.name](records) == (folder / "reproduction.md").read_text()
