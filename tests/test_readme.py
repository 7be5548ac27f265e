"""The README and the docs site document what exists: tasks, encodings, schema columns,
commands; the README stays a short front door and the site builds without a broken link."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lengthbench.benchmark.presets import PRESETS
from lengthbench.studies import STUDIES
from lengthbench.arguments import build_parser
from lengthbench.leaderboard.schema import COLUMN_NAMES, schema_table
from lengthbench.models.encodings import encoding_entry, encoding_names
from lengthbench.models.families import family_entry, family_names
from lengthbench.tasks.listing import formats_table, tasks_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PAGES = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
EVERYTHING = "\n".join([README, *PAGES.values()])


def test_task_table_is_current():
    assert tasks_table() in PAGES["tasks.md"]


def test_format_table_is_current():
    assert formats_table() in PAGES["tasks.md"]


def test_schema_table_is_current():
    assert schema_table() in PAGES["statistics.md"]


def test_every_encoding_preset_and_column_documented():
    for name in encoding_names():
        if encoding_entry(name).source == "built-in":  # plugin tests register more
            assert f"| `{name}` |" in PAGES["encodings.md"], name
    for name in PRESETS:
        assert f"| `{name}` |" in PAGES["presets.md"], name
        assert f"`{name}`" in README, name
    for name in STUDIES:
        assert f"`{name}`" in README, name
    for column in COLUMN_NAMES:
        assert f"| `{column}` |" in PAGES["statistics.md"], column
    for family in family_names():
        if family_entry(family).source == "built-in":  # plugin tests register more
            assert f"| `{family}` |" in PAGES["models.md"], family


def _commands() -> dict:
    return next(a for a in build_parser()._actions if a.dest == "command").choices


def test_every_subcommand_documented():
    for name in _commands():
        assert f"| `lengthbench {name}" in PAGES["cli.md"], name


def test_the_command_table_names_every_option_of_every_command():
    """The docs' row for a command lists each of its options (the table is
    checked against the parser, so a new flag cannot go undocumented)."""
    rows = {line.split("`")[1].split()[1]: line for line in PAGES["cli.md"].splitlines()
            if line.startswith("| `lengthbench ")}
    missing = [f"{name} {option}" for name, command in _commands().items() for action in command._actions
               for option in action.option_strings[-1:] if option not in ("--help", "--verbose")
               and option not in rows.get(name, "")]
    assert missing == [], missing


def _shown_commands():
    """(file, line) for every command line in a bash block of the README or the docs."""
    for name, text in [("README.md", README), *PAGES.items()]:
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.splitlines():
                for part in line.split("&&"):
                    part = part.split("#")[0].strip()
                    if part.startswith(("lengthbench ", "python -m lengthbench")):
                        yield name, part


def test_every_command_shown_is_one_the_tools_accept():
    """Each `lengthbench ...` line in a bash block parses with the command line's own parser
    (a renamed flag or command breaks this test, not a reader's copy and paste); each
    `python -m lengthbench.X` names a module that exists. Inline mentions of modules too."""
    shown = list(_shown_commands())
    assert len(shown) >= 15
    for name, line in shown:
        words = shlex.split(line)
        if words[0] == "lengthbench":
            try:
                build_parser().parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"{name}: {line!r} is refused by the parser")
    modules = set(re.findall(r"python -m (lengthbench\.[\w.]+)", EVERYTHING))
    assert modules, "no module command found"
    for module in modules:
        assert importlib.util.find_spec(module) is not None, module


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
    ci = (ROOT / ".ci" / "run").read_text()
    first, second = (block.split("```")[0].strip() for block in head.split("```bash")[1:3])
    assert second in ci
    site = [block.split("```")[0].strip() for block in PAGES["index.md"].split("```bash")[1:]]
    assert site == [first, second]  # the docs' front page shows the same two commands


def test_a_short_front_door():
    """README ≤ 250 lines, in this order: what it is, the two commands, what you will see,
    the three jobs, any model, presets in brief, results, then the way into the docs."""
    assert len(README.splitlines()) <= 250
    order = ["## Quick start", "## What you will see", "### 1. Run the full benchmark", "### 2. Submit a new encoding",
             "### 3. Compare leaderboard CSVs", "## From Python", "## Evaluate any model", "## Presets",
             "## Reference results", "## Documentation"]
    positions = [README.index(heading) for heading in order]
    assert positions == sorted(positions)
    assert README.index("## Quick start") < README.index("\n\n", README.index("# lengthbench")) + 400
    for page in PAGES:
        assert f"docs/{page}" in README or page == "index.md", f"the README never links docs/{page}"


def test_the_docs_site_builds_strictly(tmp_path):
    """`mkdocs build --strict` with link and anchor validation at warning level (mkdocs.yml):
    a link to a missing page or heading, or a page left out of the navigation, fails."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is missing: pip install -e '.[dev]' installs it"
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "any-model" / "index.html").exists()


@pytest.mark.slow
def test_the_python_examples_run_as_written(tmp_path, monkeypatch):
    """The README's and the docs' notebook examples, executed verbatim in an empty folder:
    the docs' comparison is like with like, so it is not refused."""
    monkeypatch.chdir(tmp_path)
    front = {}
    exec(compile(README.split("## From Python")[1].split("```python")[1].split("```")[0], "README.md", "exec"), front)  # noqa: S102
    assert {"board", "runs"} <= set(front) and len(front["board"]) == 4
    block = PAGES["python.md"].split("```python")[1].split("```")[0]
    namespace = {}
    exec(compile(block, "docs/python.md", "exec"), namespace)  # noqa: S102  (our own documentation)
    assert {"board", "other", "runs"} <= set(namespace)


def test_the_three_jobs_say_what_is_true():
    """Running the full benchmark shows `full`; the check's shapes for quick
    are the ones `check` uses; the encoding guide shows its import line."""
    from lengthbench.benchmark.sitting import check_shapes

    job = README.split("### 1. Run the full benchmark", 1)[1].split("###", 1)[0]
    commands = [line.split("#")[0].split() for line in job.splitlines() if line.startswith("lengthbench run")]
    assert commands[1] == ["lengthbench", "run", "--preset", "full"]  # after its --plan, before any part of it
    shapes = {(s.d_model, s.n_heads) for s in check_shapes([PRESETS["quick"]])}
    assert shapes == {(64, 4)} and "for `quick`, 64 with\n   4 heads" in PAGES["submit.md"]
    assert "from lengthbench.models.encodings import PositionEncoding, register_encoding" in README


def test_the_counts_the_front_page_states_are_the_registrys():
    """"N exact tasks x M encodings and K other model families" on the README and the docs' index."""
    from lengthbench.tasks import task_names

    for text in (README, PAGES["index.md"]):
        found = re.search(r"(\d+) exact tasks ×\s+(\d+) encodings and (\d+) other model families", text)
        assert found, "the front page's counts are missing"
        built_in = ([n for n in encoding_names() if encoding_entry(n).source == "built-in"],  # plugin tests add more
                    [n for n in family_names() if family_entry(n).source == "built-in"])
        assert tuple(map(int, found.groups())) == (len(task_names()), len(built_in[0]), len(built_in[1]) - 1)
