"""The command line: unknown names, listings, an end-to-end leaderboard."""

import json

import pandas as pd
import pytest

from lengthbench.arguments import build_parser
from lengthbench.cli import main
from lengthbench.leaderboard.schema import COLUMN_NAMES


@pytest.mark.parametrize("argv,needle", [
    (["run", "--tasks", "copyy"], "unknown task 'copyy' (did you mean 'copy'?); valid choices: addition, addition-index-hints, binary_addition"),
    (["run", "--encodings", "rop"], "unknown encoding 'rop' (did you mean 'rope'?); valid choices:"),
    (["run", "--preset", "huge"], "unknown preset 'huge'; valid choices: arithmetic, chomsky, chomsky-paper,"),
    # the choices are the registry's: a family another test's plugin registered in this process is one of them
    (["run", "--models", "lstn"], "unknown model family 'lstn' (did you mean 'lstm'?); valid choices: "),
])
def test_unknown_names_one_line_error(capsys, tmp_path, argv, needle):
    assert main(argv + ["--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err
    assert not list(tmp_path.iterdir())


def test_list_commands(capsys):
    for what in ("tasks", "encodings"):
        assert main(["list", what]) == 0
    out = capsys.readouterr().out
    assert "reverse_string" in out and "randomized-rope" in out


def test_list_presets_is_a_table_and_its_json_every_setting(capsys):
    """One line per preset (runs in its grid, lengths, steps), and the whole of each behind --json."""
    from lengthbench.benchmark.grid import grid_configs
    from lengthbench.benchmark.presets import PRESETS

    assert main(["list", "presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["preset", "runs", "tasks"] and len(lines) == len(PRESETS) + 1
    full = next(line for line in lines if line.startswith("full "))
    assert full.split()[1] == str(len(grid_configs(PRESETS["full"]))) and " 8/10/16 " in full
    assert main(["list", "presets", "--json"]) == 0
    described = json.loads("[" + capsys.readouterr().out.replace("}\n{", "},{") + "]")
    assert [d["name"] for d in described] == list(PRESETS) and described[0]["settings"]


@pytest.mark.slow
def test_run_then_leaderboard(capsys, tmp_path, tiny_preset, monkeypatch):
    results = tmp_path / "res"
    assert main(["run", "--preset", "tiny", "--results", str(results), "--no-progress"]) == 0
    for name in ("leaderboard.csv", "leaderboard.md", "accuracy_vs_length.png"):
        assert (results / name).exists()
    board = pd.read_csv(results / "leaderboard.csv")
    assert tuple(board.columns) == COLUMN_NAMES and len(board) == 4
    na = board[(board.task == "parity_check") & (board.encoding == "coupled")]
    assert na.status.item() == "not_applicable"
    first = (results / "leaderboard.csv").read_text()
    out = tmp_path / "again"
    assert main(["leaderboard", "--results", str(results), "--out", str(out)]) == 0
    assert (out / "leaderboard.csv").read_text() == first
    assert "| `transformer/nope` |" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "verbose"), [(["list", "tasks"], False), (["-v", "list", "tasks"], True),
                                               (["list", "tasks", "-v"], True), (["list", "tasks", "--verbose"], True)])
def test_verbose_goes_before_or_after_the_command(argv, verbose):
    assert build_parser().parse_args(argv).verbose is verbose


def test_run_set_overrides_a_setting_in_every_cell_and_keeps_its_own_folder(capsys, tmp_path, tiny_preset,
                                                                           monkeypatch):
    """--set steps=2 trains every cell 2 steps (the records and the board's
    protocol say so), in results/tiny-steps2, never in the preset's own folder."""
    from lengthbench.benchmark.store import ResultsFolder

    monkeypatch.chdir(tmp_path)
    assert main(["run", "--preset", "tiny", "--set", "steps=2", "--set", "lr=0.002", "--no-progress",
                 "--workers", "1"]) == 0
    folder = tmp_path / "results" / "tiny-lr0.002-steps2"
    records = ResultsFolder(folder).records()
    assert records and {(r.config.steps, r.config.lr) for r in records} == {(2, 0.002)}
    assert {r.training["steps_done"] for r in records if r.status == "ok"} == {2}
    assert not (tmp_path / "results" / "tiny").exists()
    board = pd.read_csv(folder / "leaderboard.csv", keep_default_na=False)
    assert board[board.status == "ok"].protocol.str.contains('"steps":2,').all()


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`lengthbench list presets --json | head -2`: the reader is gone before
    the output is written (closed here while the command still starts up);
    no error line, exit 0."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, "-m", "lengthbench", "list", "presets", "--json"],
                            cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0 and "Broken pipe" not in err and "Traceback" not in err, err


def test_check_takes_the_name_of_a_registered_encoding_or_family(capsys):
    """The built-ins (here the 2025-26 ones) pass the contract users' files are held to."""
    assert main(["check", "stick-breaking"]) == 0
    assert "encoding 'stick-breaking' (built-in): PASS" in capsys.readouterr().out
    assert main(["check", "deltanet-negative"]) == 0
    assert "model family 'deltanet-negative' (built-in): PASS" in capsys.readouterr().out
    assert main(["check", "no-such-encoding"]) == 2  # neither a file nor a registered name
    assert "no-such-encoding" in capsys.readouterr().err


def test_version_is_printed(capsys):
    from lengthbench import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"lengthbench {__version__}\n"


@pytest.mark.slow
def test_the_overview_is_the_full_parsers_help_and_imports_no_torch():
    """`lengthbench --help` and `--version` answer from the commands' one lines, without the API or torch (3.5 s
    under load before); what they print is what the full parser would."""
    import subprocess
    import sys

    from lengthbench.arguments import build_overview_parser

    assert build_overview_parser().format_help() == build_parser().format_help()
    code = ("import sys; from lengthbench.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules, 'lengthbench.api' in sys.modules, file=sys.stderr)")
    for argv in (["--help"], ["--version"], []):
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
        assert out.stderr.strip().splitlines()[-1] == "False False", (argv, out.stderr)
    listed = subprocess.run([sys.executable, "-c", code, "leaderboard", "--help"], capture_output=True, text=True,
                            timeout=300)
    assert "--results" in listed.stdout  # a command builds the full parser (and imports what it needs)


@pytest.mark.slow
def test_list_answers_from_the_catalogue_without_torch_and_the_catalogue_is_the_registries():
    """Every `lengthbench list` of the built-ins is read from `catalog.json` (no torch: 0.04 s, 2-3 s before),
    and that file is what the registries print now, compared in a fresh interpreter (no test's plugin in it):
    a built-in registered or changed without `python -m lengthbench.generated --update` fails here."""
    import subprocess
    import sys

    from lengthbench.catalog import CATALOG, LISTED

    code = ("import sys; from lengthbench.cli import main\n"
            "code = main(sys.argv[1:])\n"
            "print(code, 'torch' in sys.modules, 'lengthbench.api' in sys.modules, file=sys.stderr)")
    stored = json.loads(CATALOG.read_text())
    assert set(stored) == {*LISTED, "presets --json"}
    for argv in ([[what] for what in LISTED] + [["presets", "--json"], ["--json", "presets"]]):
        out = subprocess.run([sys.executable, "-c", code, "list", *argv], capture_output=True, text=True,
                             timeout=120)
        assert out.stderr.strip().splitlines()[-1] == "0 False False", (argv, out.stderr)
        assert out.stdout == stored[" ".join(sorted(argv, key=lambda a: a.startswith("-")))] + "\n"
    check = subprocess.run([sys.executable, "-m", "lengthbench.generated"], capture_output=True, text=True,
                           timeout=300)
    assert check.returncode == 0 and not check.stdout, check.stdout + check.stderr


def test_the_generated_files_command_refuses_an_unknown_argument_by_name(capsys):
    from lengthbench.generated import main

    assert main(["--updat"]) == 2
    err = capsys.readouterr().err
    assert "unknown arguments '--updat'" in err and "--update (rewrite them)" in err
