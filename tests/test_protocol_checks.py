"""A reference README: its protocol checks read what its records kept (a grid
that keeps protocol v2 passes every check, and each way of breaking it fails
exactly its check, naming what broke it), its budget as the records trained
it, and the machine of every sitting."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lengthbench.benchmark.applicable import longest_batch
from lengthbench.benchmark.presets import get_preset
from lengthbench.benchmark.records import RunRecord, summarize
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.protocol_checks import protocol_checks

CPU = torch.device("cpu")
TARGET_PARAMETERS = 100_000
CELLS = (("copy", "nope", "transformer"), ("copy", "rope", "transformer"), ("copy", "", "lstm"),
         ("parity_check", "nope", "transformer"), ("parity_check", "rope", "transformer"),
         ("addition", "nope", "transformer"))


def _record(task, encoding, family, seed, low=1.0, **settings):
    """A finished horizon run that scores 1 everywhere but ``low`` at length 16."""
    config = replace(get_preset("horizon").run_config(task, encoding, seed, family), **settings)
    record = RunRecord.start(config, CPU)
    record.status, record.n_parameters = "ok", TARGET_PARAMETERS
    record.per_length = [{"length": n, "status": "ok", "exact_match": low if n == 16 else 1.0,
                          "token_accuracy": 1.0, "n_samples": 8} for n in config.eval_lengths()]
    record.summary = summarize(record.per_length, config)
    record.training = {"steps_done": config.steps, "stopped": "max_steps"}
    return record


def _grid():
    return [_record(task, encoding, family, seed) for task, encoding, family in CELLS for seed in (0, 1, 2)]


def _failing(records) -> dict[str, str]:
    return {c.name: c.measured for c in protocol_checks(records, leaderboard_frame(records)) if not c.holds}


def test_a_grid_that_keeps_protocol_v2_passes_every_check():
    records = _grid()
    checks = protocol_checks(records, leaderboard_frame(records))
    assert [c.name for c in checks] == ["one budget per task", "no stop at fit", "horizon", "no unsupported length",
                                        "fit", "families matched", "encodings matched", "seeds"]
    assert all(c.holds for c in checks), [c for c in checks if not c.holds]
    assert {c.name: c.measured for c in checks}["horizon"] == "3 of 3 tasks"


def _break(records, kind):
    first = records[0]  # copy, nope, seed 0
    if kind == "budget":  # every seed of one method (a cell holds one setting)
        records[:] = [_record(r.task, r.encoding, r.config.family, r.seed, steps=3000)
                      if r.method == "transformer/rope" and r.task == "copy" else r for r in records]
    elif kind == "early stop":
        first.training = {"steps_done": 1500, "stopped": "fit"}
    elif kind == "horizon":
        records[:] = [_record(r.task, r.encoding, r.config.family, r.seed, **(dict(test_length=32) if r.task == "copy"
                                                                               else {})) for r in records]
    elif kind == "few test lengths":
        records[:] = [_record(r.task, r.encoding, r.config.family, r.seed, **(dict(test_points=4)
                                                                               if r.task == "parity_check" else {}))
                      for r in records]
    elif kind == "unsupported":
        first.per_length[-1]["status"] = "unsupported"
    elif kind == "fit":  # one seed of one of 5 non-arithmetic cells: 80% fit on every seed
        records[0] = _record("copy", "nope", "transformer", 0, low=0.5)
    elif kind == "families":
        for r in records:
            if r.config.family == "lstm":
                r.n_parameters = int(TARGET_PARAMETERS * 1.2)
    elif kind == "seeds":
        del records[0]


@pytest.mark.parametrize("kind, check, needle", [
    ("budget", "one budget per task", "1 of 3 tasks give methods different budgets (copy)"),
    ("early stop", "no stop at fit", "1 of 18 runs stopped once they fit (after 1500 steps)"),
    ("horizon", "horizon", "2 of 3 tasks; short: copy (train 16, 2.0x, 8 test lengths)"),
    ("few test lengths", "horizon", "2 of 3 tasks; short: parity_check (train 16, 4.0x, 4 test lengths)"),
    ("unsupported", "no unsupported length", "1 cell (copy transformer/nope)"),
    ("fit", "fit", "4 of 5 (80%)"),
    ("families", "families matched", "1 of 1 cell off (copy lstm +20%)"),
    ("seeds", "seeds", "2 to 3 per cell; 1 cell under 3"),
])
@pytest.mark.slow
def test_each_way_of_breaking_the_protocol_fails_its_check_by_name(kind, check, needle):
    records = _grid()
    _break(records, kind)
    assert _failing(records) == {check: needle}


def test_encodings_are_matched_on_the_parameters_a_run_can_use():
    """A 2048-row learned table more than doubles the model, but a run indexes only the rows of its longest
    evaluated sequence: counted so, `learned` is within 10% of NoPE. A randomized table's every row is drawn
    in training, so `randomized-learned` (512 rows) counts whole and is off, named with its gap."""
    records = _grid()
    d_model = records[0].config.model.d_model
    longest = longest_batch(records[0].config)[0].tokens.shape[1]  # copy at length 64
    learned = [_record("copy", "learned", "transformer", s) for s in range(3)]
    randomized = [_record("copy", "randomized-learned", "transformer", s) for s in range(3)]
    for r in learned:
        r.n_parameters = TARGET_PARAMETERS + 2048 * d_model
    for r in randomized:
        r.n_parameters = TARGET_PARAMETERS + 512 * d_model
    assert 2048 * d_model > TARGET_PARAMETERS and longest * d_model < 0.1 * TARGET_PARAMETERS
    assert _failing(records + learned) == {}
    gap = 512 * d_model / TARGET_PARAMETERS
    assert _failing(records + randomized) == {"encodings matched": (
        "1 of 3 cells off, 1 encoding (`transformer/randomized-learned`; copy transformer/randomized-learned "
        f"{gap:+.0%})")}


def test_an_arithmetic_cell_that_does_not_fit_leaves_the_fit_check_alone():
    records = [_record("addition", "nope", "transformer", r.seed, low=0.0) if r.task == "addition" else r
               for r in _grid()]
    assert _failing(records) == {}


def test_a_check_with_nothing_to_check_says_so_rather_than_passing():
    """Only arithmetic cells and no baseline family: fit and matching are n/a, never "yes"."""
    from lengthbench.leaderboard.protocol_checks import checks_table

    records = [r for r in _grid() if r.task == "addition"]
    rows = {row[0]: row[2:] for row in checks_table(protocol_checks(records, leaderboard_frame(records)))}
    assert rows["fit"] == ["no non-arithmetic cell", "n/a"]
    assert rows["families matched"] == ["no baseline family beside `transformer/nope`", "n/a"]
    assert rows["seeds"] == ["3 per cell", "yes"]


def test_a_reference_readme_states_a_budget_whose_fit_is_only_logged_as_fixed(tmp_path):
    """Fit checks with a patience of 0 never stop a run: the protocol line says so, not "until fit"."""
    from lengthbench.leaderboard.reference_notes import reference_readme

    records = _grid()
    text = reference_readme("horizon", records, leaderboard_frame(records), tmp_path, rebuild="(rebuild)")
    assert "4000 steps of 64 (the fit logged every 500 steps, never stopping a run)" in text
    assert "until fit" not in text


def test_a_reference_readme_names_the_machine_of_every_sitting(tmp_path):
    """A reference made in several sittings may move between machines (whose rounding differs):
    each sitting's row names its CPU, kernel level and cores, or says it was not recorded."""
    import json

    from lengthbench.leaderboard.reference_notes import reference_readme

    hardware = {"cpu": "Example CPU 9000", "cpu_capability": "AVX512", "cpu_cores": 2, "gpu": None}
    for name, extra in (("provenance-interrupted-1.json", {"hardware": hardware}), ("provenance.json", {})):
        (tmp_path / name).write_text(json.dumps({"command": "lengthbench run --preset horizon", "runs": 18, **extra}))
    records = _grid()
    text = reference_readme("horizon", records, leaderboard_frame(records), tmp_path, rebuild="(rebuild)")
    assert "| 18 |  | Example CPU 9000, AVX512, 2 cores | provenance-interrupted-1.json |" in text
    assert "| not recorded | provenance.json |" in text


def test_a_reference_readme_says_which_runs_no_sittings_provenance_accounts_for(tmp_path):
    """Sittings stopped without their interrupt handler leave no provenance file: where the
    interrupted sittings' own counts fall short of the runs on disk, the README says the wall
    time leaves those sittings out (per preset, where several share the folder); a grid with no interrupted
    sitting says nothing."""
    import json

    from lengthbench.leaderboard.reference_notes import reference_readme

    records = _grid()

    def readme(*provenances):
        for path in tmp_path.glob("provenance*.json"):
            path.unlink()
        for name, fields in provenances:
            (tmp_path / name).write_text(json.dumps({"command": "lengthbench run --preset horizon", **fields}))
        return reference_readme("horizon", records, leaderboard_frame(records), tmp_path, rebuild="(rebuild)")

    sitting = {"interrupted": True, "runs": 6, "runs_in_grid": 18, "runs_finished_this_invocation": 6}
    text = readme(("provenance-interrupted-1.json", sitting), ("provenance.json", {"runs": 18}))
    assert "The interrupted sittings finished 6 of the 18 runs the last of these commands found on disk; " \
           "the other 12 were finished" in text
    assert "The interrupted sittings" not in readme(("provenance.json", {"runs": 18}))
    looped = {"command": "lengthbench run --preset horizon-looped", "interrupted": True, "runs": 4, "runs_in_grid": 9,
              "runs_finished_this_invocation": 1}
    text = readme(("provenance-interrupted-1.json", sitting), ("provenance-interrupted-2.json", looped),
                  ("provenance.json", {"runs": 18}))
    assert "For `--preset horizon`, its interrupted sittings finished 6 of the 18 runs its last command found" in text
    assert "For `--preset horizon-looped`, its interrupted sittings finished 1 of the 4 runs" in text
    assert "The interrupted sittings" not in readme(("provenance-interrupted-1.json", {**sitting, "runs": 18,
                                                     "runs_finished_this_invocation": 18}))


def test_a_views_readme_names_the_records_folder_as_seen_from_beside_it(tmp_path):
    """A view of ``horizon/records`` says so, not just ``records`` (every reference keeps its records there);
    the reference itself says its records are in its ``records/``, not that it is a view."""
    import json

    from lengthbench.leaderboard.reference_notes import reference_readme

    records_folder = tmp_path / "horizon" / "records"
    records_folder.mkdir(parents=True)
    (records_folder / "provenance.json").write_text(json.dumps({"command": "lengthbench run --preset horizon",
                                                                "runs": 18}))
    (tmp_path / "horizon-view").mkdir()
    records = _grid()
    text = reference_readme("horizon-view", records, leaderboard_frame(records), tmp_path / "horizon-view",
                            rebuild="(rebuild)", records_folder=records_folder)
    assert "These records are those of `horizon/records` (this folder is a view of its cells)" in text
    text = reference_readme("horizon", records, leaderboard_frame(records), tmp_path / "horizon",
                            rebuild="(rebuild)", records_folder=records_folder)
    assert "The records are in `records/`; the commands that made them:" in text
