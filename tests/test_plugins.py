"""Third-party encodings: the contract checker, submission, entry points."""

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import plugins_unloaded

import lengthbench.benchmark.runner as runner_module
from lengthbench.cli import main
from lengthbench.core.entry_points import ENTRY_POINT_GROUP
from lengthbench.models import plugins
from lengthbench.models.encodings import encoding_entry, encoding_names

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE = ROOT / "examples" / "log_decay_sink.py"


def test_what_a_plugin_registers_is_gone_after_the_block():
    with plugins_unloaded():
        names = plugins.load_plugin(plugins.PluginFile(str(EXAMPLE)))
        assert names and all(n in encoding_names() for n in names)
    assert not any(n in encoding_names() for n in names)
    assert plugins.load_plugin(plugins.PluginFile(str(EXAMPLE))) == names  # imported afresh, registered again
    assert all(n in encoding_names() for n in names)


def test_example_passes_check(capsys):
    assert main(["check", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "'log-decay-sink'" in out and "PASS" in out and "hooks: bias" in out
    assert "parameters: 8" in out and "FAIL" not in out


@pytest.mark.parametrize("fixture,check,reason", [
    ("broken_leaky.py", "causality", "leaks the future"),
    ("broken_nan.py --preset chomsky-paper", "forward/backward", "non-finite outputs at length"),
    ("broken_nan_in_eval.py --preset chomsky-paper", "eval finiteness", "non-finite outputs in eval mode at length"),
    ("broken_shape.py", "hook shapes", "bias returned shape (1, 4, 9, 10); expected"),
    ("broken_raises.py", "hook shapes", "raised RuntimeError: positions are not implemented yet"),
    ("broken_shift.py", "shift invariance", "declares shift_invariant but shifting positions"),
    ("broken_unused_parameter.py", "learned parameters get gradients",
     "learned parameter(s) scale got no gradient from 8 training batches of copy"),
    ("broken_unrecorded_argument.py", "constructor arguments recorded",
     "constructor argument(s) slope are not registered defaults"),
    ("broken_lost_setting.py", "constructor arguments recorded",
     "setting(s) slope do not reach PositionEncoding.__init__"),
    ("broken_lazy_parameter.py", "parameters created with the encoding",
     "parameter(s) encoding.slopes of the encoding appeared in a forward pass"),
    ("broken_mixes_examples.py", "examples independent", "when only example 0 changed (the encoding mixes examples)"),
])
def test_broken_fixtures_fail_with_reason(capsys, fixture, check, reason):
    """Each fixture fails its check, at the preset where it breaks (lengths past
    64 only at a preset that evaluates them: chomsky-paper's 500, run to 2000)."""
    fixture, *options = fixture.split()
    assert main(["check", str(FIXTURES / fixture), *options]) == 1
    out, err = capsys.readouterr()
    line = next(x for x in out.splitlines() if f"] {check}" in x)
    assert line.strip().startswith("[FAIL]") and reason in line
    assert err.startswith(f"lengthbench: error: {FIXTURES / fixture}: encoding ") and err.count("\n") == 1
    assert check in err


@pytest.mark.slow
def test_check_runs_at_the_target_presets_shapes(capsys):
    """Quick builds encodings with 4 heads, smoke with 2, nope-paper with 12: an
    encoding written for 4 heads passes on quick and fails where it would break."""
    path = str(FIXTURES / "broken_four_heads.py")
    assert main(["check", path]) == 0
    assert "(quick: d_model 64, 4 heads)" in capsys.readouterr().out
    assert main(["check", path, "--preset", "smoke"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] hook shapes (smoke: d_model 32, 2 heads): bias returned shape (1, 4, 9, 9)" in out
    assert main(["check", path, "--all-presets"]) == 1
    out = capsys.readouterr().out
    assert "d_model 768, 12 heads" in out and "d_model 256, 4 heads" in out


def test_file_without_encodings_is_refused(tmp_path, capsys):
    empty = tmp_path / "nothing.py"
    empty.write_text("x = 1\n")
    assert main(["check", str(empty)]) == 2
    assert "registers no encoding" in capsys.readouterr().err


def test_missing_file_is_refused(capsys):
    assert main(["check", "no/such/file.py"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_plugin_source_hash_in_config():
    plugins.load_plugin(plugins.PluginFile(str(EXAMPLE)))
    source = encoding_entry("log-decay-sink").source
    assert source.startswith("file log_decay_sink.py sha256:")


def _files(folder) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith(("leaderboard", "provenance"))}


def test_submit_ranks_and_reuses_builtin_records(tmp_path, capsys, tiny_preset, monkeypatch):
    results = tmp_path / "res"
    argv = ["submit", str(EXAMPLE), "--preset", "tiny", "--results", str(results), "--no-progress",
            "--workers", "1"]
    assert main(["run", "--preset", "tiny", "--results", str(results), "--no-progress",
                 "--workers", "1"]) == 0
    preset_files = _files(results)
    executed = []
    real = runner_module.execute_run
    monkeypatch.setattr(runner_module, "execute_run",
                        lambda config, *a, **k: executed.append(config.encoding) or real(config, *a, **k))
    assert main(argv) == 0
    assert set(executed) == {"log-decay-sink"} and len(executed) == 2  # two tasks, built-ins reused
    out = capsys.readouterr().out
    assert "log-decay-sink: rank per task" in out and "overall: " in out
    assert preset_files == _files(results)  # the preset's leaderboard and provenance, byte for byte
    shared = pd.read_csv(results / "submission-log-decay-sink.csv")
    assert set(shared.encoding) == {"log-decay-sink"} and len(shared) == 2
    assert "log-decay-sink" in (results / "submission-log-decay-sink.html").read_text()
    md = (results / "submission-log-decay-sink.md").read_text()
    assert md.startswith("# Submission `log-decay-sink` on preset `tiny`") and "95% rank range" in md
    provenance = json.loads((results / "submission-log-decay-sink.provenance.json").read_text())
    assert provenance["command"].startswith("lengthbench submit") and provenance["runs"] == len(shared) * 3
    assert provenance["hardware"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    executed.clear()
    assert main(argv) == 0
    assert executed == []  # the second submit trains nothing


def test_submit_name_collision_refused(capsys, tiny_preset, monkeypatch):
    assert main(["submit", str(EXAMPLE), "--name", "rope", "--preset", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert "encoding name 'rope' is already registered (built-in); choose another name" in err


def test_entry_point_plugins_are_discovered(tmp_path, monkeypatch):
    module = tmp_path / "lb_entry_plugin.py"
    module.write_text(
        "from lengthbench.models.encodings import PositionEncoding, register_encoding\n"
        "@register_encoding('entry-point-demo')\n"
        "class Demo(PositionEncoding):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint(name="demo", value="lb_entry_plugin", group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "installed_plugins", lambda: [ep])
    assert plugins.load_entry_points() == ["entry-point-demo"]
    assert "entry-point-demo" in encoding_names()
    assert encoding_entry("entry-point-demo").source.endswith("entry point lb_entry_plugin")


def _installed(folder: Path, dist: str, module: str, source: str) -> None:
    """A real installed distribution in ``folder``: its dist-info with an entry point, and its module."""
    (folder / f"{module}.py").write_text(source)
    info = folder / f"{dist.replace('-', '_')}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmain = {module}\n")


def _lengthbench(*argv, path=None):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])} if path else None
    return subprocess.run([sys.executable, "-m", "lengthbench", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.slow
def test_an_installed_package_adds_encodings_and_tasks_and_is_named_where_a_plugin_file_is(tmp_path):
    """A real installed distribution (its dist-info on the path) declaring an entry point in
    `lengthbench.plugins`: its encoding and its task are listed with the package they came from (live, not from
    the stored catalogue), and `check` takes the package's name as it takes a plugin file."""
    _installed(tmp_path, "lb-installed-demo", "lb_installed_demo",
               "from lengthbench.models.encodings import PositionEncoding, register_encoding\n"
               "from lengthbench.tasks.base import register_task\n"
               "from lengthbench.tasks.sequence import Copy\n"
               "@register_encoding('installed-demo', description='an encoding from an installed package')\n"
               "class Demo(PositionEncoding):\n    pass\n"
               "@register_task\n"
               "class InstalledCopy(Copy):\n    name = 'installed_copy'\n    description = 'copy, installed'\n")
    listed = _lengthbench("list", "encodings", path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("installed-demo"))
    assert "an encoding from an installed package" in line and "[package lb-installed-demo 1.2" in line
    tasks = _lengthbench("list", "tasks", path=tmp_path)
    assert "| `installed_copy` |" in tasks.stdout and "copy, installed" in tasks.stdout
    assert "From installed packages: `installed_copy` (package lb-installed-demo 1.2)." in tasks.stdout
    checked = _lengthbench("check", "lb_installed_demo", path=tmp_path)  # the package's name, spelled as pip allows
    assert checked.returncode == 0 and "installed-demo" in checked.stdout, checked.stdout + checked.stderr
    plain = _lengthbench("list", "encodings")
    assert "installed-demo" not in plain.stdout and "rope" in plain.stdout


@pytest.mark.slow
def test_a_broken_installed_package_is_named_in_one_line_and_the_built_ins_still_work(tmp_path):
    _installed(tmp_path, "lb-broken-demo", "lb_broken_demo", "import a_module_nobody_installed\n")
    listed = _lengthbench("list", "encodings", path=tmp_path)
    assert listed.returncode == 0 and "rope" in listed.stdout
    warning = [line for line in listed.stderr.splitlines() if "lb-broken-demo" in line]
    assert len(warning) == 1 and "ModuleNotFoundError" in warning[0] and "set aside" in warning[0], listed.stderr
    checked = _lengthbench("check", "lb-broken-demo", path=tmp_path)
    assert checked.returncode == 2 and "package lb-broken-demo's entry point main = lb_broken_demo failed to load" \
        in checked.stderr and "Traceback" not in checked.stderr


def test_a_plugin_with_the_old_top_level_imports_is_told_the_new_namespace(tmp_path):
    from lengthbench.models.plugins import _import_failure

    err = ModuleNotFoundError("No module named 'models'", name="models.encodings")
    message = str(_import_failure(tmp_path / "plugin.py", err))
    assert "from lengthbench.models.encodings import" in message and "plugin.py" in message


def test_submit_takes_tasks_and_seeds(tmp_path, capsys, tiny_preset):
    results = tmp_path / "res"
    assert main(["submit", str(EXAMPLE), "--preset", "tiny", "--tasks", "copy", "--seeds", "0,1", "--results",
                 str(results), "--no-progress", "--workers", "1"]) == 0
    rows = pd.read_csv(results / "submission-log-decay-sink.csv")
    assert list(rows.task) == ["copy"] and list(rows.n_seeds) == [2]
    assert not (results / "leaderboard.csv").exists()  # a submission writes only its own files
    assert sorted(p.name for p in results.glob("copy__*__seed1__*.json"))  # the built-ins ran on seed 1 too


def test_a_submissions_rank_range_is_what_the_intervals_allow():
    from lengthbench.leaderboard.submission import rank_range

    def cell(method, mean, low, high):
        return {"task": "copy", "method": method, "status": "ok", "fit_status": "fit", "n_seeds": 3, "n_fit": 3,
                "ood_exact_match_mean": mean, "ood_exact_match_ci_low": low, "ood_exact_match_ci_high": high}

    board = pd.DataFrame([cell("transformer/mine", 0.5, 0.4, 0.6), cell("a", 0.9, 0.8, 1.0),
                          cell("b", 0.55, 0.45, 0.65), cell("c", 0.45, 0.3, 0.55), cell("d", 0.1, 0.0, 0.2),
                          cell("e", 0.5, float("nan"), float("nan"))])  # one seed: its mean stands for its interval
    assert rank_range(board, "copy", "transformer/mine") == (2, 5)  # a surely above, d surely below
    one_seed = board.assign(ood_exact_match_ci_low=float("nan"))
    assert rank_range(one_seed, "copy", "transformer/mine") is None


GRU = Path(__file__).resolve().parent.parent / "examples" / "gru_family.py"


def test_a_model_family_plugin_passes_its_contract_and_runs_as_a_method(tmp_path, capsys, tiny_preset):
    assert main(["check", str(GRU)]) == 0
    out = capsys.readouterr().out
    assert "model family 'gru'" in out and "PASS" in out and "each run's seed decides its weights" in out
    results = tmp_path / "res"
    assert main(["run", "--preset", "tiny", "--plugin", str(GRU), "--models", "transformer,gru", "--results",
                 str(results), "--no-progress", "--workers", "1"]) == 0
    board = pd.read_csv(results / "leaderboard.csv")
    assert "gru" in set(board.method)
    [record] = [json.loads(p.read_text()) for p in results.glob("copy__gru__seed0__*.json")]
    assert record["config"]["family"] == "gru"
    assert record["config"]["family_source"].startswith("file gru_family.py sha256:")
    assert main(["submit", str(GRU), "--preset", "tiny", "--results", str(results), "--no-progress",
                 "--workers", "1"]) == 0
    assert "gru: rank per task" in capsys.readouterr().out
    assert set(pd.read_csv(results / "submission-gru.csv").method) == {"gru"}


@pytest.mark.parametrize("fixture,check,reason", [
    ("broken_family_seeds.py", "each run's seed decides its weights", "give the same outputs (do not reseed"),
    ("broken_family_no_flops.py", "FLOPs declared", "declares no FLOPs"),
    ("broken_family_leaky.py", "causality", "the model reads the future"),
    ("broken_family_mixes_examples.py", "examples independent", "changed by"),
])
def test_broken_model_families_fail_their_contract(capsys, fixture, check, reason):
    assert main(["check", str(FIXTURES / fixture), "--preset", "smoke"]) == 1
    out, err = capsys.readouterr()
    line = next(x for x in out.splitlines() if f"] {check}" in x)
    assert line.strip().startswith("[FAIL]") and reason in line
    assert err.startswith(f"lengthbench: error: {FIXTURES / fixture}: model family ")


def test_plan_refuses_a_family_that_declares_no_flops(capsys):
    """Never costed as some other family: run --plan names the family instead."""
    from lengthbench.models.families import FAMILIES, register_family
    from lengthbench.models.recurrent import Recurrent

    register_family("test-no-flops", description="no FLOPs declared")(lambda vocab, size: Recurrent("rnn", vocab, size))
    try:
        assert main(["run", "--preset", "smoke", "--models", "test-no-flops", "--tasks", "copy", "--plan"]) == 2
        assert "model family 'test-no-flops' declares no FLOPs" in capsys.readouterr().err
    finally:
        FAMILIES.remove("test-no-flops")


def test_an_encoding_with_a_frozen_parameter_passes_check(capsys):
    """A parameter with ``requires_grad=False`` holds a fixed value: the
    gradient check leaves it out (and still checks the learned one)."""
    from lengthbench.models.encodings.base import ENCODINGS

    try:
        assert main(["check", str(FIXTURES / "frozen_parameter.py"), "--preset", "smoke"]) == 0
        out = capsys.readouterr().out
        assert "encoding 'frozen-slope'" in out and "PASS" in out
        assert "all 1 learned parameter(s) get a gradient" in out and "1 frozen (requires_grad=False) left out" in out
    finally:
        ENCODINGS.remove("frozen-slope")


def test_an_encoding_that_reads_slot_indices_fails_the_packing_check(tmp_path, capsys):
    """The trainer packs examples end to end: a hook that numbers positions by
    slot instead of reading ``pos`` would train on wrong positions."""
    from lengthbench.models.encodings.base import ENCODINGS

    plugin = tmp_path / "by_slot.py"
    plugin.write_text(
        "import torch\nfrom lengthbench.models.encodings import PositionEncoding, register_encoding\n\n\n"
        "@register_encoding('by-slot')\nclass BySlot(PositionEncoding):\n"
        "    def embed(self, h, pos):\n"
        "        slots = torch.arange(h.shape[1], dtype=h.dtype)[:, None]\n"
        "        return h + torch.sin(slots * torch.arange(1, h.shape[-1] + 1, dtype=h.dtype))[None]\n")
    try:
        assert main(["check", str(plugin), "--preset", "smoke"]) == 1
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if "] packed examples compute as alone" in x)
        assert line.strip().startswith("[FAIL]") and "read positions from `pos`" in line
    finally:
        ENCODINGS.remove("by-slot")


def test_a_plugin_that_changes_torch_globals_at_import_leaves_them_as_they_were(caplog):
    """Default dtype, deterministic kernels, threads and the random states are
    process-wide: a plugin that sets them at import would change the built-in
    cells of its grid. They are put back, with a warning naming each."""
    import logging

    import numpy as np

    from lengthbench.models.encodings.base import ENCODINGS
    from lengthbench.models.plugins import PluginFile, load_plugin

    torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()[1].copy()
    try:
        with caplog.at_level(logging.WARNING):
            assert load_plugin(PluginFile(str(FIXTURES / "changes_torch_globals.py"))) == ["changes-globals"]
        assert torch.get_default_dtype() == torch.float32 and not torch.are_deterministic_algorithms_enabled()
        assert torch.equal(torch.random.get_rng_state(), torch_state)
        assert np.array_equal(np.random.get_state()[1], numpy_state)
        [warning] = [r.getMessage() for r in caplog.records if "at import" in r.getMessage()]
        assert ("changed default dtype, deterministic algorithms, torch random state, numpy random state at import"
                in warning and "changes_torch_globals.py" in warning)
    finally:
        ENCODINGS.remove("changes-globals")
        torch.set_default_dtype(torch.float32)
        torch.use_deterministic_algorithms(False)


def test_the_example_recommends_a_cheap_submit_that_ranks():
    """The example's first submit is quick on two tasks where every built-in
    encoding of the shipped quick reference fit (so a fitting submission is
    ranked among judged cells), never smoke, where nothing fits."""
    import shlex

    from lengthbench.leaderboard.aggregate import judged
    from lengthbench.leaderboard.schema import read_leaderboard

    docstring = EXAMPLE.read_text().split('"""')[1]
    submits = [shlex.split(line) for line in docstring.splitlines() if line.strip().startswith("lengthbench submit")]
    assert submits and not any("smoke" in submit for submit in submits)
    first = submits[0]
    preset, tasks = first[first.index("--preset") + 1], first[first.index("--tasks") + 1].split(",")
    board = read_leaderboard(ROOT / "leaderboard" / "reference" / preset / "leaderboard.csv")
    cells = board[board.task.isin(tasks) & (board.status == "ok")]
    assert len(tasks) == 2 and len(cells) >= 2 * 4 and judged(cells).all(), cells[["task", "method", "fit_status"]]


PACKAGE_OF_EVERY_KIND = """
from dataclasses import replace

from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.studies.base import Study, register_study
from lengthbench.tasks.base import register_task
from lengthbench.tasks.formats import Plain, register_format
from lengthbench.tasks.sequence import Copy


@register_task
class PackagedCopy(Copy):
    name = 'packaged_copy'
    rank = None
    description = 'copy, from a package'


@register_format
class PackagedPlain(Plain):
    name = 'packaged-plain'
    rank = None


register_preset(replace(PRESETS['smoke'], name='packaged-smoke', description='smoke on the packaged task',
                        tasks=('packaged_copy',), encodings=('nope',), families=('transformer',), seeds=(0,)))
register_study(Study(name='packaged-study', about='a study from a package', presets=('packaged-smoke',),
                     records='nowhere', report=lambda records: f"# packaged report of {len(records)} runs\\n"))
"""


@pytest.mark.slow
def test_an_installed_packages_task_format_study_and_preset_work_through_every_command(tmp_path):
    """A real installed distribution registering one of each kind: `generate`, `score` and `evaluate` take its
    task (and its format), `list studies`, `reproduce` and `run --preset` its study and preset."""
    site = tmp_path / "site"
    site.mkdir()
    _installed(site, "lb-every-kind", "lb_every_kind", PACKAGE_OF_EVERY_KIND)
    instances = tmp_path / "instances.jsonl"
    for task in ("packaged_copy+packaged-plain",):  # the packaged task in the packaged format
        made = _lengthbench("generate", task, "--lengths", "3", "--samples", "4", "--out", instances, path=site)
        assert made.returncode == 0, made.stderr
        lines = [json.loads(line) for line in instances.read_text().splitlines()]
        answered = tmp_path / "answered.jsonl"
        answered.write_text("".join(json.dumps({**line, "prediction": line["answer"]}) + "\n" for line in lines))
        scored = _lengthbench("score", task, answered, path=site)
        assert scored.returncode == 0 and "1.0" in scored.stdout, scored.stdout + scored.stderr
    evaluated = _lengthbench("evaluate", "packaged_copy", "--hf", tmp_path / "no-model", "--lengths", "3", path=site)
    assert "unknown task" not in evaluated.stderr and "no-model" in evaluated.stderr  # the task known, the model not
    listed = _lengthbench("list", "studies", path=site)
    assert listed.returncode == 0 and "packaged-study" in listed.stdout, listed.stderr
    planned = _lengthbench("run", "--preset", "packaged-smoke", "--plan", "--results", tmp_path / "runs", path=site)
    assert planned.returncode == 0 and "packaged_copy" in planned.stdout, planned.stderr
    ran = _lengthbench("run", "--preset", "packaged-smoke", "--set", "steps=2", "--results", tmp_path / "runs",
                       "--no-progress", path=site)
    assert ran.returncode == 0, ran.stderr
    report = _lengthbench("reproduce", "packaged-study", "--results", tmp_path / "runs", "--out", tmp_path / "report",
                          path=site)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "reproduction.md").read_text().startswith("# packaged report of 1 runs")


@pytest.mark.slow
def test_a_broken_installed_package_is_named_once_by_a_grid_of_several_workers(tmp_path):
    """Each pool worker loads the installed plugins again: only the command itself names a broken one."""
    _installed(tmp_path, "lb-broken-demo", "lb_broken_demo", "import a_module_nobody_installed\n")
    ran = _lengthbench("run", "--preset", "smoke", "--tasks", "copy", "--encodings", "nope", "--seeds", "0,1",
                       "--set", "steps=2", "--workers", "2", "--no-progress", "--results", tmp_path / "runs",
                       path=tmp_path)
    assert ran.returncode == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if "lb-broken-demo" in line]
    assert len(warnings) == 1 and warnings[0].startswith("lengthbench: WARNING: package lb-broken-demo"), ran.stderr


@pytest.mark.slow
def test_an_installed_packages_encoding_is_contract_checked_before_a_grid_takes_it(tmp_path):
    """As a `--plugin` file's is: an encoding that reads the future is refused before any run, its package named."""
    _installed(tmp_path, "lb-leaky-demo", "lb_leaky_demo", (FIXTURES / "broken_leaky.py").read_text())
    ran = _lengthbench("run", "--preset", "smoke", "--tasks", "copy", "--encodings", "broken-leaky", "--seeds", "0",
                       "--set", "steps=2", "--no-progress", "--results", tmp_path / "runs", path=tmp_path)
    assert ran.returncode == 2 and "package lb-leaky-demo" in ran.stderr and "causality" in ran.stderr, ran.stderr
    assert "fails the contract check, so nothing was run" in ran.stderr and not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_packaged_tasks_release_is_in_its_records_and_an_upgrade_reruns_them(tmp_path):
    """A task from an installed package carries its release and module digest into its runs' configs: the record
    says which release made it, and after an upgrade that changes the task the old record is not reused."""
    site = tmp_path / "site"
    site.mkdir()
    _installed(site, "lb-every-kind", "lb_every_kind", PACKAGE_OF_EVERY_KIND)
    grid = ("run", "--preset", "packaged-smoke", "--set", "steps=2", "--no-progress", "--results", tmp_path / "runs")
    assert _lengthbench(*grid, path=site).returncode == 0
    first = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("packaged_copy__*.json")]
    assert len(first) == 1 and first[0]["config"]["task_source"].startswith("package lb-every-kind 1.2, lb_every_kind sha256:")
    (site / "lb_every_kind.py").write_text(PACKAGE_OF_EVERY_KIND.replace("copy, from a package", "copy, upgraded"))
    assert _lengthbench(*grid, path=site).returncode == 0
    assert len(list((tmp_path / "runs").glob("packaged_copy__*.json"))) == 2  # trained again, the first kept
    from lengthbench.benchmark.presets import get_preset

    assert "task_source" not in get_preset("smoke").run_config("copy", "nope", 0).to_dict()  # built-ins' hashes kept
