"""The README of a shipped reference folder: how its numbers were made.

Everything in it is read from the records (code versions, devices, hosts,
settings, selections, fit) and from the ``provenance*.json`` files of the
runs that made them (commands, wall times), so it cannot drift from them;
``lengthbench leaderboard --reference`` writes it, and a test rebuilds it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import write_json, write_text
from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS
from lengthbench.benchmark.records import RunRecord, distinct_runs, read_record, superseded_runs
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import judged
from lengthbench.leaderboard.protocol_checks import checks_table, protocol_checks
from lengthbench.leaderboard.tables import bands, markdown_table
from lengthbench.models.families import describe_size

DESIGN_NOTES = "PROTOCOL.md"  # a reference's hand-written design notes, beside the README this module writes
PLAN_CHECK = "plan-check"  # a quiet rerun of a sample of the reference's runs beside what --plan priced them at
# The shipped references. An installed wheel holds quick's alone (its records are what `submit --preset quick`
# reuses); a clone holds them all (setup.cfg's package data says which).
REFERENCES = Path(__file__).resolve().with_name("reference")


def shipped_records(preset: str) -> Path | None:
    """The records folder of ``preset``'s shipped reference, where this install has one."""
    folder = REFERENCES / preset / "records"
    return folder if folder.is_dir() else None


def _provenances(folder: Path) -> list[dict]:
    found = []
    for path in sorted(Path(folder).glob("provenance*.json")):
        try:
            found.append({"file": path.name, **json.loads(path.read_text())})
        except (OSError, ValueError):
            continue
    return found


def budget_text(record: RunRecord) -> str:
    """A run's training budget in words (a fixed one, or until fit with its cap)."""
    c = record.config
    if c.fit_check_every and not c.fit_patience:
        return (f"{c.steps} steps of {c.batch_size} (the fit logged every {c.fit_check_every} steps, "
                "never stopping a run)")
    if c.fit_check_every:
        return (f"until fit (held-out ID exact match ≥ {c.fit_threshold:g} at {c.fit_patience} checks in a row, every "
                f"{c.fit_check_every} steps), at most {c.steps} steps of {c.batch_size}")
    return f"{c.steps} steps of {c.batch_size}"


def _machine(provenance: dict) -> str:
    """A sitting's CPU, its kernel level and cores (a reference made in several
    sittings may have moved between machines, whose rounding differs)."""
    hardware = provenance.get("hardware") or {}
    parts = [hardware.get("cpu") or "", hardware.get("cpu_capability") or "",
             f"{hardware['cpu_cores']} cores" if hardware.get("cpu_cores") else "", hardware.get("gpu") or ""]
    return ", ".join(p for p in parts if p) or "not recorded"


def _runs(provenance: dict) -> str:
    """A provenance's run count, with what its sitting finished where it says (an
    interrupted sitting's always does, a complete one's since that was recorded)."""
    if not provenance.get("interrupted"):
        finished = provenance.get("runs_finished_this_invocation")
        return f"{provenance.get('runs', '')}" + ("" if finished is None else f" ({finished} finished in this sitting)")
    return (f"{provenance.get('runs', '')} of {provenance.get('runs_in_grid', '?')} when interrupted "
            f"({provenance.get('runs_finished_this_invocation', '?')} finished in this sitting)")


def _preset(provenance: dict) -> str:
    """The preset a sitting's command ran (its whole command when it named none)."""
    words = str(provenance.get("command", "")).split()
    for flag, value in zip(words, words[1:]):
        if flag == "--preset":
            return value
    for word in words:
        if word.startswith("--preset="):
            return word.split("=", 1)[1]
    return " ".join(words)


def _unaccounted(provenances: list[dict]) -> str:
    """Where the interrupted sittings' own counts leave runs to other sittings:
    one stopped without its interrupt handler (killed, or its machine gone)
    leaves no provenance file, and its wall time is not in the sum. Counted per
    preset, since several presets' cells may share one records folder."""
    presets = list(dict.fromkeys(_preset(p) for p in provenances))
    notes = []
    for preset in presets:
        own = [p for p in provenances if _preset(p) == preset]
        sittings = [p for p in own if p.get("interrupted")]
        finished = sum(int(p.get("runs_finished_this_invocation") or 0) for p in sittings)
        on_disk = max((int(p.get("runs") or 0) for p in own), default=0)
        if sittings and finished < on_disk:
            shared = ", by another preset's commands (a preset reuses the records of the cells it shares)"
            whose, last, shared = ((f"For `--preset {preset}`, its", "its last command", shared) if len(presets) > 1
                                   else ("The", "the last of these commands", ""))
            notes.append(f" {whose} interrupted sittings finished {finished} of the {on_disk} runs {last} found on "
                         f"disk; the other {on_disk - finished} were finished by a command that completed its grid"
                         f"{shared} or in sittings that left no provenance file.")
    if not notes:
        return ""
    return ("".join(notes) + " A sitting of the second kind (a process stopped without its interrupt handler: killed, "
            "or its machine gone) is not in the wall time above; the summed run time below counts every run.")


def _beside(source: Path, folder: Path) -> str:
    """``source`` as seen from beside ``folder`` (``horizon/records``, ``full``), else its name."""
    try:
        return source.relative_to(Path(folder).resolve().parent).as_posix()
    except ValueError:
        return source.name


def reference_readme(name: str, records: list[RunRecord], board: pd.DataFrame, folder: Path, rebuild: str,
                     grid_runs: int | None = None, records_folder: Path | None = None,
                     settings_source: str = "`benchmark/presets.py`") -> str:
    """The folder's README text. ``grid_runs``: how many runs the preset's
    grid had when the reference was built (the records are counted against
    it, complete or not; stored in ``reference.json``, so that a task or
    encoding registered later changes no shipped README); ``records_folder``: where the records are; when
    ``folder`` has no provenance, that of the records' folder (or of its
    parent) counts: a view of another reference's records. ``settings_source``:
    where the preset's settings are written (its study's module, or the core presets)."""
    superseded, records = superseded_runs(records), distinct_runs(records)
    ran = [r for r in records if r.status != "not_applicable"]
    complete = ("" if grid_runs is None else
                f" They are {len(records)} of the {grid_runs} runs of the preset's grid"
                + (" (complete)." if len(records) == grid_runs else f": {grid_runs - len(records)} missing."))
    lines = [f"# Reference: `{name}`", "",
             f"{len(records)} run records ({len(ran)} trained, {len(records) - len(ran)} not applicable) of "
             f"{board.task.nunique()} tasks × {board.method.nunique()} methods, seeds "
             f"{', '.join(map(str, sorted({r.seed for r in records})))}.{complete}", ""]
    if superseded:
        methods = ", ".join(f"`{m}`" for m in sorted({r.method for r in superseded}))
        lines += [f"{len(superseded)} more records in the folder were made by an earlier version of their code and "
                  f"rerun since ({methods}): kept on disk, never counted (a board reads a run's latest code).", ""]
    if (Path(folder) / DESIGN_NOTES).is_file():
        lines += [f"How the reference was designed, what it cuts and how to read it: [{DESIGN_NOTES}]({DESIGN_NOTES}) "
                  "(written by hand; this README is rebuilt from the records).", ""]
    lines += ["## How it was made", ""]
    provenances, source = _provenances(folder), None
    if not provenances and records_folder is not None:
        where = Path(records_folder).resolve()
        for candidate in (where, where.parent):
            if candidate != Path(folder).resolve() and _provenances(candidate):
                source, provenances = candidate, _provenances(candidate)
                break
    if provenances:
        if source is not None:
            whose = ("The records are in `records/`" if source.parent == Path(folder).resolve() else
                     f"These records are those of `{_beside(source, folder)}` (this folder is a view of its cells)")
            lines += [f"{whose}; the commands that made them:", ""]
        rows = [[f"`{p.get('command', '')}`", _runs(p), f"{p.get('wall_time_s_this_invocation', '')}",
                 _machine(p), p["file"]] for p in provenances]
        lines += markdown_table(["command", "runs", "wall time (s)", "machine", "provenance"], rows) + [""]
        total = sum(float(p.get("wall_time_s_this_invocation") or 0) for p in provenances)
        lines += [f"Wall time of those commands: {total:.0f} s ({total / 3600:.2f} h).{_unaccounted(provenances)}"]
    hosts = sorted({f"{r.device} ({r.host.get('machine', '')}{_kernels(r)}, Python {r.host.get('python', '')}, torch "
                    f"{r.torch_version})" for r in ran})
    lines += [f"Summed run time of the records: {sum(r.wall_time_s or 0 for r in ran) / 3600:.2f} h "
              "(each run's own wall time).",
              f"Code: {', '.join(f'`{v}`' for v in sorted({r.code_version for r in records}))} "
              "(committed code only: the build refuses records of uncommitted code).",
              f"Machine: {'; '.join(hosts) or 'none ran'}.", *_plan_check(Path(folder), ran), "", "## Protocol", ""]
    lines += _protocol(ran, board)
    chosen = board[board.selected.fillna("") != ""]
    lines += ["", "## Selection", "",
              (f"{len(chosen)} cells chose a setting on the validation band (`run --select`): see the table in "
               "`leaderboard.md`." if len(chosen) else
               "None: no setting was chosen per cell (`run --select`); the preset's settings and where they "
               f"came from are in {settings_source}.")]
    ok = board[board.status == "ok"]
    unfit = ok[~judged(ok)]
    lines += ["", "## Fit", "",
              f"{len(unfit)} of {len(ok)} cells that ran did not fit their training lengths (fewer than half their "
              "seeds reached the threshold); they keep their numbers, flagged, and are not judged "
              f"({int((ok.fit_status == 'partly_fit').sum())} cells fit on some seeds only)."]
    if len(unfit):
        by_method = unfit.groupby("method").task.apply(lambda t: ", ".join(t))
        lines += ["", *markdown_table(["method", "tasks it did not fit"],
                                      [[f"`{m}`", tasks] for m, tasks in by_method.items()])]
    lines += ["", "## Protocol checks", "",
              "Read from the records, against protocol v2's bars (docs/presets.md, \"Protocol v2\"; "
              "`leaderboard/protocol_checks.py`):", "",
              *markdown_table(["check", "bar", "the records", "holds"], checks_table(protocol_checks(records, board)))]
    lines += ["", "## Rebuild", "", f"`{rebuild}` rebuilds every table, figure and this README from the records.", ""]
    return "\n".join(lines)


def _plan_check(folder: Path, ran: list[RunRecord]) -> list[str]:
    """Why the summed run time differs from ``--plan``: the folder's ``plan-check/`` holds a sample of its
    runs rerun on a quiet machine (their records) and what ``--plan`` priced them at just before
    (``plan-check.json``); the same runs' records here say how much slower the reference's sittings were."""
    where = folder / PLAN_CHECK
    if not (where / f"{PLAN_CHECK}.json").is_file():
        return []
    check = json.loads((where / f"{PLAN_CHECK}.json").read_text())
    quiet = {r.run_id: r for r in map(read_record, sorted((where / "records").glob("*.json")))}
    here = [r for r in ran if r.run_id in quiet]
    quiet_s = sum(r.wall_time_s for r in quiet.values())
    here_s = sum(r.wall_time_s for r in here)
    plan, rerun, whole = check["plan"], check["rerun"], check["whole_grid"]
    summed = sum(r.wall_time_s or 0 for r in ran)
    workers = f"{check['workers']} worker{'s' * (check['workers'] != 1)}"
    return ["", f"`--plan` against a quiet rerun (`{PLAN_CHECK}/`): with nothing else running, `--plan --force` prices "
            f"the whole grid at {whole['run_time_one_worker_s'] / 3600:.1f} h of run time "
            f"({whole['wall_time_s'] / 3600:.1f} h on {workers}; load {whole['load_average_1min']:.1f}). A sample of "
            f"{len(quiet)} of its runs, {check['what']}, priced at {plan['run_time_one_worker_s'] / 60:.1f} min "
            f"(load {plan['load_average_1min']:.1f}), took {quiet_s / 60:.1f} min rerun at once from "
            f"`{rerun['code_version']}` ({rerun['wall_time_s'] / 60:.1f} min wall on {workers}; load "
            f"{rerun['load_average_1min_before']:.1f} to {rerun['load_average_1min_after']:.1f}): the plan is "
            f"{abs(plan['run_time_one_worker_s'] / quiet_s - 1):.0%} "
            f"{'under' if plan['run_time_one_worker_s'] < quiet_s else 'over'} "
            f"the quiet rerun ({rerun['hardware']['cpu']}). The same {len(here)} runs' records here took "
            f"{here_s / 60:.1f} min, {here_s / quiet_s:.2f}× the quiet rerun, and the summed run time above is "
            f"{summed / whole['run_time_one_worker_s']:.2f}× the whole grid's quiet plan. A run's own wall time "
            "counts two things the plan of a quiet machine does not: the load of the sittings it ran in (tests, "
            "builds, a second grid beside it) and the CPU it ran on (the machines above; a record names its CPU "
            "kernels, not the CPU model, so a run made in a sitting without provenance is not told apart by machine)."]


PROTOCOL_FIELDS = ("lengths", "budget", "optimizer", "size", "evaluation")


def _protocol(ran: list[RunRecord], board: pd.DataFrame) -> list[str]:
    """The settings the runs trained with: once, where every run shares them,
    then a row per group of methods and tasks for what differs (a model's size
    always does)."""
    groups: dict[tuple, tuple[set, set]] = {}
    for r in ran:
        row = board[(board.task == r.task) & (board.method == r.method)].iloc[0]
        c, lengths = r.config, bands(row)
        fields = (f"{lengths} ({'train / validation / test' if lengths.count('/') == 2 else 'train / test'})",
                  budget_text(r), f"lr {c.lr:g}, weight decay {c.weight_decay:g}", describe_size(c.family, c.model),
                  f"{c.eval_samples} examples per evaluated length")
        methods, tasks = groups.setdefault(fields, (set(), set()))
        methods.add(r.method)
        tasks.add(c.task)
    if not groups:
        return ["No run trained."]
    shared = [i for i, name in enumerate(PROTOCOL_FIELDS)
              if name != "size" and len({fields[i] for fields in groups}) == 1]
    first = next(iter(groups))
    lines = ["Every run: " + "; ".join(f"{PROTOCOL_FIELDS[i]} {first[i]}" for i in shared) + ".", ""] if shared else []
    every_task = {r.task for r in ran}
    varying = [i for i in range(len(PROTOCOL_FIELDS)) if i not in shared]
    family_of = {r.method: r.config.family for r in ran}
    rows = [[_methods(methods, family_of), _tasks(tasks, every_task), *(fields[i] for i in varying)]
            for fields, (methods, tasks) in groups.items()]
    return lines + markdown_table(["methods", "tasks", *(PROTOCOL_FIELDS[i] for i in varying)], rows)


def _methods(methods: set, family_of: dict) -> str:
    """A group's methods: a family's name where the group holds all its methods."""
    shown = []
    for family in sorted(set(family_of[m] for m in methods)):
        own = {m for m, f in family_of.items() if f == family}
        shown += [family] if own <= methods else sorted(own & methods)
    return ", ".join(shown)


def _tasks(tasks: set, every_task: set) -> str:
    """Which tasks a group trained on, the shorter way round."""
    if tasks == every_task:
        return "every task"
    left_out = every_task - tasks
    if len(left_out) < len(tasks):
        return "every task but " + ", ".join(sorted(left_out))
    return ", ".join(sorted(tasks))


def _kernels(record) -> str:
    """The CPU kernel level a record ran on, where it says (runs reproduce bit for bit only on one level)."""
    level = record.host.get("cpu_capability")
    return f" {level} kernels" if level else ""


def check_reference(records: list[RunRecord], results: Path, external) -> None:
    """Refuse a reference made from uncommitted code (``+g<commit>.dirty``) or given external rows: a shipped
    reference comes from committed code only and holds the records it was built from only."""
    dirty = sorted(r.run_id for r in records if r.code_version.endswith(".dirty"))
    if dirty:
        raise InputError(f"{len(dirty)} record(s) in {str(results)!r} were made from uncommitted code (e.g. "
                         f"{dirty[0]}.json); a reference is built from committed code only: commit, then rerun "
                         "those cells (move their records aside first)")
    if external:
        raise InputError("--external with --reference: a reference holds the records it was built from only")


def write_reference_files(records: list[RunRecord], board: pd.DataFrame, results: Path, out: Path,
                          preset: str | None, settings_source: str) -> dict[str, Path]:
    """The reference folder's ``README.md`` and ``reference.json`` (where its records are and how many runs the
    preset's grid has today, for the rebuild test)."""
    rebuild = (f"lengthbench leaderboard --reference --results {results} --out {out}"
               + (f" --preset {preset}" if preset else ""))
    grid_runs = len(grid_configs(PRESETS[preset])) if preset else None
    readme = reference_readme(out.name, records, board, out, rebuild, grid_runs, Path(results), settings_source)
    return {"readme": write_text(out / "README.md", readme),
            "reference": write_json(out / "reference.json", {"records": os.path.relpath(results, out),
                                                             "preset": preset, "grid_runs": grid_runs,
                                                             "rebuild": rebuild})}
