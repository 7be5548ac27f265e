"""The shipped reference leaderboards are what their shipped records give:
every record passes validation and the tables rebuild byte for byte."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import shipped_records

from lengthbench.benchmark.records import length_frame
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.html import render_html
from lengthbench.leaderboard.tables import write_tables
from lengthbench.studies.base import settings_source

REFERENCE = Path(__file__).resolve().parent.parent / "leaderboard" / "reference"


def _records(folder: Path) -> list:
    """A reference folder's records: its own, or (``reference.json``) those of
    another folder's preset grid."""
    from lengthbench.benchmark.reading import of_preset

    source = json.loads((folder / "reference.json").read_text()) if (folder / "reference.json").exists() else {}
    where = folder / source.get("records", "records")
    return of_preset(list(shipped_records(where)), source.get("preset"), where)


# every built reference (its tables shipped); a folder still training has records and no tables yet
FOLDERS = sorted(p for p in REFERENCE.iterdir() if (p / "leaderboard.csv").exists())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
@pytest.mark.slow
def test_reference_tables_rebuild_from_their_records(folder, tmp_path):
    records = _records(folder)
    assert records
    board = leaderboard_frame(records)
    paths = write_tables(board, tmp_path)
    for kind in ("csv", "md", "levels_csv"):
        assert paths[kind].read_bytes() == (folder / paths[kind].name).read_bytes(), paths[kind].name
    page = render_html(board, length_frame(records), f"lengthbench leaderboard: {folder.name}")
    assert page == (folder / "leaderboard.html").read_text()
    if (folder / "reference.json").exists():  # a reference build: committed code only, and its README
        from lengthbench.leaderboard.reference_notes import reference_readme

        assert not [r.run_id for r in records if r.code_version.endswith(".dirty")]
        source = json.loads((folder / "reference.json").read_text())
        readme = reference_readme(folder.name, records, board, folder, source["rebuild"], source.get("grid_runs"),
                                  folder / source["records"], settings_source(source.get("preset")))
        assert readme == (folder / "README.md").read_text()


@pytest.mark.parametrize("folder", sorted(p for p in REFERENCE.iterdir() if (p / "reproduction.md").exists()),
                         ids=lambda p: p.name)
@pytest.mark.slow
def test_reproduction_reports_rebuild_from_their_records(folder, tmp_path):
    """Rebuilt as its ``reproduction.json`` says (the paper, its records, the
    preset), so a view named other than the paper (``horizon-chomsky``) rebuilds too."""
    from lengthbench.api import reproduce

    source = json.loads((folder / "reproduction.json").read_text())
    reproduce(source["paper"], folder / source["records"], tmp_path, preset=source["preset"])
    assert (tmp_path / "reproduction.md").read_text() == (folder / "reproduction.md").read_text()


@pytest.mark.slow
def test_a_reference_build_refuses_records_of_uncommitted_code_and_takes_a_presets_cells(tmp_path, capsys, caplog):
    import json

    from lengthbench.cli import main

    results = tmp_path / "r"
    assert main(["run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope,rope", "--results", str(results),
                 "--no-progress", "--workers", "1"]) == 0
    for path in results.glob("copy__*.json"):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "code_version": data["code_version"].split("+")[0] + "+gabc.dirty"}))
    capsys.readouterr()
    assert main(["leaderboard", "--results", str(results), "--reference"]) == 2
    assert "2 record(s) in" in capsys.readouterr().err
    assert main(["leaderboard", "--results", str(results)]) == 0  # not a reference build: allowed
    for path in results.glob("copy__*.json"):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "code_version": data["code_version"].split("+")[0] + "+gabc"}))
    out = results  # where the run wrote its provenance.json
    (out / "PROTOCOL.md").write_text("# Why this budget\n")  # hand-written design notes survive, linked
    assert main(["leaderboard", "--results", str(results), "--reference"]) == 0
    readme = (out / "README.md").read_text()
    assert "[PROTOCOL.md](PROTOCOL.md)" in readme and (out / "PROTOCOL.md").read_text() == "# Why this budget\n"
    assert "Code: `0.3.0+gabc` (committed code only" in readme
    assert "2 of 2 cells that ran did not fit" in readme and "| `transformer/rope` | copy |" in readme
    # the settings every run shares once, then what differs per group (here only the model's size)
    assert "Every run: lengths 1.." in readme and "| methods | tasks | size |" in readme
    assert "| transformer | every task | d_model" in readme
    assert "`lengthbench run --preset smoke --tasks copy --encodings nope,rope" in readme  # its provenance
    assert json.loads((out / "reference.json").read_text())["records"] == "."
    from dataclasses import replace

    from lengthbench.benchmark.presets import PRESETS, register_preset

    register_preset(replace(PRESETS["smoke"], name="smoke-rope", tasks=("copy",), encodings=("rope",)))
    try:
        assert main(["leaderboard", "--results", str(results), "--preset", "smoke-rope", "--out",
                     str(tmp_path / "o")]) == 0
        board = (tmp_path / "o" / "leaderboard.csv").read_text()
        assert "transformer/rope" in board and "transformer/nope" not in board
        # a view of another folder's records: its completeness against the preset, and that folder's provenance,
        # an interrupted sitting's included
        from lengthbench.benchmark.grid import GridInterrupted
        from lengthbench.benchmark.provenance import write_sitting_provenance

        write_sitting_provenance(results, "lengthbench run --preset smoke", 12.0, GridInterrupted(1, 2, 1))
        assert main(["leaderboard", "--results", str(results), "--preset", "smoke-rope", "--out",
                     str(tmp_path / "view"), "--reference"]) == 0
        view = (tmp_path / "view" / "README.md").read_text()
        assert "They are 1 of the 1 runs of the preset's grid (complete)." in view
        assert "These records are those of `r`" in view
        assert "| 1 of 2 when interrupted (1 finished in this sitting) | 12.0 |" in view
        assert "Wall time of those commands: " in view
        # a sitting whose provenance cannot be written (its folder is a file) warns; the interrupt goes on
        assert write_sitting_provenance(tmp_path / "o" / "leaderboard.csv", "c", 1.0, GridInterrupted(1, 2, 1)) is None
        assert "this sitting has no provenance file, its records are kept" in caplog.text
        capsys.readouterr()
        assert main(["leaderboard", "--results", str(results), "--preset", "quick"]) == 2
        assert "holds no record of the grid of preset 'quick'; run" in capsys.readouterr().err
    finally:
        PRESETS.remove("smoke-rope")


def test_the_protocol_table_names_a_whole_family_and_its_tasks_the_shorter_way():
    from lengthbench.leaderboard.reference_notes import _methods, _tasks

    family_of = {"transformer/rope": "transformer", "transformer/nope": "transformer", "lstm": "lstm"}
    assert _methods({"transformer/rope", "transformer/nope", "lstm"}, family_of) == "lstm, transformer"
    assert _methods({"transformer/rope", "lstm"}, family_of) == "lstm, transformer/rope"
    every = {"copy", "parity_check", "reverse_string", "addition"}
    assert _tasks(every, every) == "every task"
    assert _tasks(every - {"addition"}, every) == "every task but addition"
    assert _tasks({"copy"}, every) == "copy"


def test_a_grid_grown_after_the_build_changes_no_shipped_readme(tmp_path):
    """A reference folder counts its records against the grid it was built
    from (``reference.json``), not against what the registry holds today: a
    preset given another seed (as a new task or encoding would grow it)
    leaves the shipped README as it is."""
    from dataclasses import replace

    from lengthbench.benchmark.presets import PRESETS
    from lengthbench.leaderboard.reference_notes import reference_readme

    folder = REFERENCE / "nope"
    source = json.loads((folder / "reference.json").read_text())
    original = PRESETS[source["preset"]]
    PRESETS.replace(original.name, replace(original, seeds=(*original.seeds, 99)))
    try:
        records = _records(folder)
        readme = reference_readme(folder.name, records, leaderboard_frame(records), folder, source["rebuild"],
                                  source.get("grid_runs"), folder / source["records"], settings_source(source["preset"]))
    finally:
        PRESETS.replace(original.name, original)
    assert readme == (folder / "README.md").read_text()


def test_every_shipped_record_was_made_by_committed_code():
    """Reference records come from committed code only, a reference still
    training included (its records are committed as they come)."""
    dirty = [path.name for path in REFERENCE.glob("**/records/*__seed*.json")
             if json.loads(path.read_text())["code_version"].endswith(".dirty")]
    assert REFERENCE.joinpath("horizon", "records").is_dir() and not dirty, dirty[:5]


def test_the_references_a_wheel_ships_are_todays_grids():
    """`submit --preset quick|smoke` takes the built-in cells from these records only while their run ids are
    the preset's today (a config or version change would make a fresh install retrain all of them)."""
    from lengthbench.benchmark.grid import grid_configs
    from lengthbench.benchmark.presets import PRESETS

    for preset in ("quick", "smoke"):
        shipped = {r.run_id for r in shipped_records(REFERENCE / preset / "records")}
        assert shipped == {c.run_id for c in grid_configs(PRESETS[preset])}, preset


def test_no_horizon_record_is_stale():
    """Every record of the protocol-v2 reference was made by the current versions of its task, format,
    encoding, family and trainer: a version bump reruns its cells and removes the old records (git keeps them)."""
    from lengthbench.benchmark.versions import code_versions

    stale = [r.run_id for r in shipped_records(REFERENCE / "horizon" / "records")
             if r.config.code_versions != code_versions(r.config.task, r.config.encoding or None, r.config.family)]
    assert not stale, f"{len(stale)} stale records, e.g. {stale[:3]}"


def test_every_interval_quoted_in_the_results_page_and_readme_is_a_shipped_number():
    """docs/results.md and the README quote intervals by hand; each must stand in a shipped reference's report,
    README or table, or (the suite's randomized-rope over rope, said nowhere else) be recomputed here from its
    board."""
    import re

    import pandas as pd

    from lengthbench.leaderboard.aggregate import judged
    from lengthbench.leaderboard.statistics import sign_flip_p_value, t_interval

    root = REFERENCE.parent.parent
    page = "\n".join((root / name).read_text() for name in ("docs/results.md", "README.md")).replace("−", "-")
    shipped = "\n".join(p.read_text() for p in REFERENCE.rglob("*.md")).replace("−", "-")
    board = pd.read_csv(REFERENCE / "suite" / "leaderboard.csv")
    scores = board[judged(board)].pivot_table(index="task", columns="method", values="ood_exact_match_mean")
    both = scores[["transformer/randomized-rope", "transformer/rope"]].dropna()
    d = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()
    low, high = t_interval(d, bounds=None)
    recomputed = f"{100 * d.mean():+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
    assert f"**{recomputed} points**" in page and low > 0 and sign_flip_p_value(d) < 0.001
    quoted = re.findall(r"\[[+-]?\d+\.\d+, [+-]?\d+\.\d+\]", page)
    assert len(quoted) >= 10
    assert [q for q in quoted if q not in shipped and q not in recomputed] == []


def test_the_protocol_notes_quote_the_unfit_count_their_readme_computes():
    """``PROTOCOL.md`` is written by hand; the count of cells that did not fit it quotes is the README's,
    which is rebuilt from the records."""
    import re

    folder = REFERENCE / "horizon"
    computed = re.search(r"(\d+) of (\d+) cells that ran did not fit", (folder / "README.md").read_text())
    quoted = re.search(r"(\d+) of (\d+) cells that ran did not fit", (folder / "PROTOCOL.md").read_text())
    assert computed and quoted and quoted.groups() == computed.groups()


def test_no_shipped_report_prints_a_clipped_interval():
    """No interval is clipped at +-100 points (a clipped t interval hides how wide it is)."""
    texts = [p.read_text() for p in REFERENCE.rglob("*.md")]
    texts += [(REFERENCE.parent.parent / name).read_text() for name in ("docs/results.md", "README.md")]
    assert not [t for t in texts if "[-100" in t.replace("−", "-") or "+100.0]" in t or ", +100]" in t]


def test_every_shipped_verdict_prints_raw_and_adjusted_p_and_says_what_was_detectable():
    """In every shipped report, each comparison's p is printed raw → Holm-adjusted or said not testable, and
    each "not told apart" says what was detectable or that a question was not testable."""
    rows = 0
    for path in REFERENCE.glob("*/reproduction.md"):
        for line in (ln for ln in path.read_text().splitlines() if ln.startswith("|")):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tests = [c for c in cells if "; p " in c or c.endswith("; no test")]
            if not tests:
                continue
            rows += 1
            for cell in tests:
                assert "→" in cell or cell.endswith(("not testable", "; no test")), (path.parent.name, cell)
            verdict = cells[-1] if not cells[-1].startswith(("+", "-")) and cells[-1] else cells[-2]
            if verdict.startswith("not told apart"):
                assert "detectable" in verdict or "not testable" in verdict, (path.parent.name, line)
    assert rows > 50


def test_an_earlier_commands_provenance_is_kept_under_its_finish_time_never_overwritten(tmp_path):
    from datetime import datetime, timezone

    from lengthbench.benchmark.provenance import write_run_provenance

    now = [SimpleNamespace(started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), wall_time_s=1.0,
                           code_version="v")]  # a run this invocation trained

    def earlier(command, finished_at):
        (tmp_path / "provenance.json").write_text(json.dumps({"command": command, "finished_at": finished_at}))

    earlier("lengthbench run --preset a", "2026-12-04T10:38:20+00:00")
    (tmp_path / "provenance-20261204T103820Z.json").write_text("{}")  # that name is taken: the next number
    write_run_provenance(tmp_path, "lengthbench run --preset b", 1.0, now)
    assert json.loads((tmp_path / "provenance-20261204T103820Z-2.json").read_text())["command"].endswith("a")
    earlier("lengthbench run --preset c", "not a time")
    write_run_provenance(tmp_path, "lengthbench run --preset b", 1.0, now)
    assert json.loads((tmp_path / "provenance-earlier.json").read_text())["command"].endswith("c")
    write_run_provenance(tmp_path, "lengthbench run --preset b", 2.0, now)  # the same command: replaced, not kept
    assert len(list(tmp_path.glob("provenance*.json"))) == 4
    assert json.loads((tmp_path / "provenance.json").read_text())["wall_time_s_this_invocation"] == 2.0
    # an invocation that trained nothing (every record reused) leaves the provenance of the one that did
    write_run_provenance(tmp_path, "lengthbench run --preset b", 0.1, [])
    write_run_provenance(tmp_path, "lengthbench run --preset d", 0.1, [])
    assert len(list(tmp_path.glob("provenance*.json"))) == 4
    assert json.loads((tmp_path / "provenance.json").read_text())["wall_time_s_this_invocation"] == 2.0


def test_a_complete_runs_provenance_counts_the_runs_it_finished(tmp_path):
    """Runs that started during the invocation are its own; a reused record started before it (or its start
    does not read) is not; the README's table says it as an interrupted sitting's does."""
    from datetime import datetime, timedelta, timezone

    from lengthbench.benchmark.provenance import write_run_provenance
    from lengthbench.leaderboard.reference_notes import _runs

    def started(seconds_ago):
        when = datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)
        return SimpleNamespace(started_at=when.isoformat(timespec="seconds"), wall_time_s=1.0, code_version="v")

    records = [started(5), started(50), started(150), started(5000),
               SimpleNamespace(started_at="", wall_time_s=1.0, code_version="v")]
    provenance = json.loads(write_run_provenance(tmp_path, "lengthbench run", 100.0, records).read_text())
    assert provenance["runs"] == 5 and provenance["runs_finished_this_invocation"] == 2
    assert _runs(provenance) == "5 (2 finished in this sitting)"
    assert _runs({"runs": 1023}) == "1023"  # written before the count was recorded


def test_a_run_that_started_a_moment_before_the_invocation_is_not_its_own(tmp_path):
    """Starts are kept to the microsecond: a reused record that started 0.3 s before the invocation (the grid
    before it in the same second, as in a test suite) is not counted as the invocation's, one 0.3 s after is."""
    import time
    from datetime import datetime, timezone

    from lengthbench.benchmark.provenance import write_run_provenance

    def started(at):
        return SimpleNamespace(started_at=datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="microseconds"),
                               wall_time_s=1.0, code_version="v")

    now = time.time()
    written = write_run_provenance(tmp_path, "lengthbench run", 1.0, [started(now - 0.3), started(now + 0.3)],
                                   started=now)
    assert json.loads(written.read_text())["runs_finished_this_invocation"] == 1


def test_the_protocol_notes_name_every_cut_the_zoo_adds():
    """The zoo's cuts beyond ``horizon``'s (the delta rule's and the data-dependent mechanisms') are
    printed by ``--plan`` and written by hand in ``PROTOCOL.md``: each is there with every task it cuts."""
    from lengthbench.benchmark.presets import ZOO_ENCODINGS
    from lengthbench.studies.zoo import DELTA_FAMILIES, ZOO_CUTS
    from lengthbench.tasks.cells import transformer_method

    text = (REFERENCE / "horizon" / "PROTOCOL.md").read_text()
    section = text[text.index("### After the grid: the 2025-26 zoo"):]
    new_methods = {*DELTA_FAMILIES, *(transformer_method(e) for e in ZOO_ENCODINGS)}
    added = [cut for cut in ZOO_CUTS if set(cut.methods) & new_methods]
    assert len(added) == 3 and section.count("\n7. **") == 1
    for cut in added:
        assert [t for t in cut.tasks if f"`{t}`" not in section.split("\n\nIt runs view by view")[0]] == [], cut.reason


@pytest.mark.slow
def test_the_protocol_notes_quote_each_complete_zoo_view_as_its_records_hold_it():
    """The zoo's table in ``PROTOCOL.md`` is written by hand as views land: a complete view's new runs
    (its cells not in ``horizon``) and their summed run time are what the records say."""
    import re

    from lengthbench.benchmark.reading import of_preset

    where = REFERENCE / "horizon" / "records"
    records = list(shipped_records(where))
    horizon = {r.run_id for r in of_preset(records, "horizon", where)}
    text = (REFERENCE / "horizon" / "PROTOCOL.md").read_text()
    rows = re.findall(r"^\| `(horizon-\w+)`[^|]* \| (\d+) \| [^|]+ \| ([\d.]+) h \| complete", text, re.M)
    assert rows
    for view, runs, hours in rows:
        new = [r for r in of_preset(records, view, where) if r.run_id not in horizon]
        assert (len(new), f"{sum(r.wall_time_s for r in new) / 3600:.2f}") == (int(runs), hours), view
