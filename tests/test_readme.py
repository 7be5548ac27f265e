"""The README documents what exists: tasks, encodings, schema columns, commands."""

from pathlib import Path

from lengthbench.benchmark.presets import PRESETS
from lengthbench.cli import build_parser
from lengthbench.leaderboard.schema import COLUMN_NAMES, schema_table
from lengthbench.models.encodings import encoding_entry, encoding_names
from lengthbench.models.families import family_entry, family_names
from lengthbench.tasks.listing import tasks_table

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_task_table_is_current():
    assert tasks_table() in README


def test_schema_table_is_current():
    assert schema_table() in README


def test_every_encoding_preset_and_column_documented():
    for name in encoding_names():
        if encoding_entry(name).source == "built-in":  # plugin tests register more
            assert f"`{name}`" in README, name
    for name in PRESETS:
        assert f"`{name}`" in README, name
    for column in COLUMN_NAMES:
        assert f"`{column}`" in README, column
    for family in family_names():
        if family_entry(family).source == "built-in":  # plugin tests register more
            assert f"| `{family}` |" in README, family


def _commands() -> dict:
    return next(a for a in build_parser()._actions if a.dest == "command").choices


def test_every_subcommand_documented():
    for name in _commands():
        assert f"lengthbench {name}" in README, name


def test_the_command_table_names_every_option_of_every_command():
    """The README's row for a command lists each of its options (the table is
    checked against the parser, so a new flag cannot go undocumented)."""
    rows = {line.split("`")[1].split()[1]: line for line in README.splitlines() if line.startswith("| `lengthbench ")}
    missing = [f"{name} {option}" for name, command in _commands().items() for action in command._actions
               for option in action.option_strings[-1:] if option not in ("--help", "--verbose")
               and option not in rows.get(name, "")]
    assert missing == [], missing


def test_every_option_has_plain_text_help():
    """Help for every option and positional of every command, with no
    Markdown or reStructuredText markup (a terminal shows it raw)."""
    parser = build_parser()
    texts = [(None, parser.description)]
    for name, command in _commands().items():
        texts += [(name, command.description)] + [(f"{name} {a.dest}", a.help) for a in command._actions]
    assert all(text and "`" not in text and "**" not in text for _, text in texts), \
        [where for where, text in texts if not text or "`" in text or "**" in text]


def test_two_commands_first():
    head = README.split("## What you will see")[0]
    assert head.count("```bash") == 2
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    second = head.split("```bash")[2].split("```")[0].strip()
    assert second in ci


def test_front_door_order():
    """What it is, the two commands, what you will see, the three jobs, the guides,
    reference results, then the reference."""
    order = ["## Quick start", "## What you will see", "### 1. Run the full benchmark", "### 2. Submit a new encoding",
             "### 3. Compare leaderboard CSVs", "## From Python", "### Add a task", "### Add an encoding",
             "### Add a model family", "## Reference results", "## Reference: commands, files, schema"]
    positions = [README.index(heading) for heading in order]
    assert positions == sorted(positions)
    assert README.index("## Quick start") < README.index("\n\n", README.index("# lengthbench")) + 400


def test_the_python_example_runs_as_written(tmp_path, monkeypatch):
    """The README's notebook example, executed verbatim in an empty folder:
    its comparison is like with like, so it is not refused."""
    block = README.split("## From Python")[1].split("```python")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102  (our own documentation)
    assert {"board", "other", "runs"} <= set(namespace)


def test_the_three_jobs_say_what_is_true():
    """Running the full benchmark shows `full`; the check's shapes for quick
    are the ones `check` uses; the encoding guide shows its import line."""
    from lengthbench.api import check_shapes

    job = README.split("### 1. Run the full benchmark", 1)[1].split("###", 1)[0]
    commands = [line.split("#")[0].split() for line in job.splitlines() if line.startswith("lengthbench run")]
    assert commands[1] == ["lengthbench", "run", "--preset", "full"]  # after its --plan, before any part of it
    shapes = {(s.d_model, s.n_heads) for s in check_shapes([PRESETS["quick"]])}
    assert shapes == {(64, 4)} and "for `quick`, 64 with\n   4 heads" in README
    assert "from lengthbench.models.encodings import PositionEncoding,\n   register_encoding" in README
