"""The architecture as a contract: the layers of setup.cfg's [importlinter]
section hold (``lint-imports``), a back-edge breaks them, and the layout's
one rule holds (each lower layer is a top-level folder that lengthbench/ links)."""

import ast
import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lengthbench
from lengthbench.core.errors import InputError, UnknownNameError
from lengthbench.core.registry import Registry
from lengthbench.models import FAMILIES
from lengthbench.models.encodings import ENCODINGS
from lengthbench.tasks import TASKS

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("studies", "leaderboard", "benchmark", "models", "tasks", "core")
LINT = [str(Path(sys.executable).with_name("lint-imports")), "--config", str(ROOT / "setup.cfg"), "--no-cache"]


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(LINT, cwd=package_parent, env=env, capture_output=True, text=True, timeout=300)


def test_the_layers_hold():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 kept, 0 broken" in out.stdout
    modules = sum(1 for folder, _, files in os.walk(ROOT / "lengthbench", followlinks=True)
                  for name in files if name.endswith(".py"))
    assert f"Analyzed {modules} files" in out.stdout  # every layer, through the package's links


@pytest.mark.parametrize("module, statement, broken", [
    ("tasks/base.py", "from lengthbench.leaderboard import tables", "lengthbench.leaderboard.tables"),
    ("tasks/base.py", "from lengthbench.tasks import formats", "lengthbench.tasks.formats"),
    ("core/registry.py", "from lengthbench.tasks import base", "lengthbench.tasks.base"),
    ("leaderboard/verdicts.py", "from lengthbench.studies import chomsky", "lengthbench.studies.chomsky"),
    ("benchmark/grid.py", "from lengthbench.benchmark.tools import perf", "lengthbench.benchmark.tools.perf")])
@pytest.mark.slow
def test_a_back_edge_breaks_the_layers(tmp_path, module, statement, broken):
    """tasks importing the leaderboard (inside a function, where it once hid), the task contract
    importing the formats built on it (the cycle there once was), the foundations importing a layer,
    or the run path importing a tool: each fails the check."""
    shutil.copytree(ROOT / "lengthbench", tmp_path / "lengthbench", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "lengthbench" / module
    source.write_text(source.read_text() + f"\n\ndef _back_edge():\n    {statement}  # noqa: F401\n")
    out = _lint(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    name = "lengthbench." + module.removesuffix(".py").replace("/", ".")
    assert f"{name} -> {broken}" in out.stdout


FRONT_DOOR = ("__main__", "cli", "arguments", "generated", "catalog", "api")


def names_above(source: str, layer: str) -> list[str]:
    """Every string of ``source`` (docstrings aside: they may say where a thing lives; and a command a message
    tells a person to run, ``python -m lengthbench...``) that names a module of a layer above ``layer``: a name a
    lookup could import by, which import-linter, reading imports, cannot see."""
    above = FRONT_DOOR + LAYERS[:LAYERS.index(layer)]
    pattern = re.compile(rf"(?<!python -m )\blengthbench\.({'|'.join(above)})\b")
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and pattern.search(node.value)]


def test_no_module_names_a_layer_above_its_own():
    """The layers hold for names too: no lower module imports an upper one by a string (the preset registry once
    found the studies so, ``discover=("lengthbench.studies",)``); the studies register through an entry point."""
    assert names_above('PRESETS = Registry("preset", discover=("lengthbench.studies",))', "benchmark") == \
        ["lengthbench.studies"]
    assert names_above('"""Found through ``lengthbench.studies``."""', "benchmark") == []
    assert names_above('message = "run `python -m lengthbench.generated --update`"', "benchmark") == []
    found = {str(path.relative_to(ROOT)): names
             for layer in LAYERS for path in sorted((ROOT / layer).rglob("*.py"))
             if (names := names_above(path.read_text(), layer))}
    assert not found, found


def test_the_tools_contract_names_every_module_of_the_run_path():
    """A module added to benchmark/ is on the run path, so the contract must
    name it (else it could import a tool unchecked)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["importlinter:contract:tools-apart"]["source_modules"].split())
    run_path = {f"lengthbench.benchmark.{p.stem}" for p in (ROOT / "benchmark").glob("*.py") if p.stem != "__init__"}
    assert listed == run_path


def test_every_lower_layer_is_a_top_level_folder_the_package_links():
    for layer in LAYERS:
        link = ROOT / "lengthbench" / layer
        assert link.is_symlink() and link.resolve() == ROOT / layer, layer
    assert Path(lengthbench.__file__).resolve().parent == ROOT / "lengthbench"


FRONT_DOOR_MOST_LINES = 400


def test_the_front_door_stays_thin():
    """Each module of the front door calls into the layer that does the work; none grows past 400 lines (api.py
    once held the grid's orchestration, the reference's files and a study's checks in 807)."""
    sizes = {path.name: len(path.read_text().splitlines()) for path in (ROOT / "lengthbench").glob("*.py")}
    assert {"api.py", "cli.py", "arguments.py"} <= set(sizes)
    assert max(sizes.values()) <= FRONT_DOOR_MOST_LINES, sizes


def test_one_registry_type_whose_order_each_built_in_declares():
    """No central order tuple: every built-in declares its own place (a rank, a task its level and a rank), no two
    the same, and the built-ins come first, in rank order."""
    from lengthbench.benchmark.grid import EXECUTORS
    from lengthbench.studies import STUDIES
    from lengthbench.tasks.base import LEVELS
    from lengthbench.tasks.formats import FORMATS

    places = {TASKS: {name: (LEVELS.index(cls.level), cls.rank) for name, cls in TASKS.items()},
              FAMILIES: {name: e.rank for name, e in FAMILIES.items() if e.source == "built-in"},
              ENCODINGS: {name: e.rank for name, e in ENCODINGS.items() if e.source == "built-in"},
              STUDIES: {name: s.rank for name, s in STUDIES.items()},
              FORMATS: {name: f.rank for name, f in FORMATS.items()},
              EXECUTORS: {name: e.rank for name, e in EXECUTORS.items()}}
    for registry, ranks in places.items():
        assert isinstance(registry, Registry)
        assert None not in ranks.values() and None not in [r for pair in ranks.values() if isinstance(pair, tuple)
                                                          for r in pair], (registry.kind, ranks)
        assert len(set(ranks.values())) == len(ranks), registry.kind
        assert registry.names()[: len(ranks)] == sorted(ranks, key=ranks.__getitem__), registry.kind
    assert not [line for path in ROOT.glob("*/*.py") for line in path.read_text().splitlines()
                if re.match(r"[A-Z_]*_ORDER = \(", line)]
    assert type(lengthbench.leaderboard).__name__ == "module" and not callable(lengthbench.leaderboard)


def test_importing_lengthbench_leaves_matplotlib_alone():
    """A notebook's backend and pyplot state are its own: nothing is chosen at import."""
    code = "import lengthbench, sys, matplotlib; print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "MPLBACKEND": "svg"}, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["svg", "False"], out.stderr


def test_a_registry_orders_explicitly_refuses_twice_and_suggests():
    registry = Registry("colour", rank=lambda entry: {"R": 1, "B": 3}.get(entry[0]))  # violet: no rank
    for name in ("violet", "blue", "red"):  # registration order differs from the ranks
        registry.add(name, name.upper())
    assert registry.names() == ["red", "blue", "violet"] and list(registry) == registry.names()
    with pytest.raises(InputError, match="colour name 'red' is already registered; choose another name"):
        registry.add("red", "again")
    with pytest.raises(UnknownNameError, match=r"unknown colour 'rde' \(did you mean 'red'\?\); valid choices: "
                                               r"blue, red, violet"):
        registry["rde"]
    registry.replace("red", "RED!")
    registry.remove("violet")
    assert registry.items() == [("red", "RED!"), ("blue", "BLUE")] and "violet" not in registry


def test_one_module_knows_where_a_results_folder_keeps_records_and_claims():
    """store.ResultsFolder is the one owner of a results folder's layout: no
    other module builds a record's or a claim's file name, or scans for them."""
    layout = ('{run_id}.json"', "CLAIM_SUFFIX}", '"*__seed*__*.json"', "__seed{config.seed}__*")
    owners = {}
    for folder in ("benchmark", "leaderboard", "models", "tasks", "lengthbench"):
        for path in (ROOT / folder).glob("*.py"):
            text = path.read_text()
            for needle in layout:
                if needle in text:
                    owners.setdefault(needle, set()).add(path.relative_to(ROOT).as_posix())
    assert owners and all(found == {"benchmark/store.py"} for found in owners.values()), owners


# How a task label (TASK+FORMAT) or a method (FAMILY/ENCODING) is built or split by hand: partition or split on
# the separators, an f-string joining two names with them, a method written out ("transformer/rope") or tested by
# its prefix. Only the parsing module (tasks/cells.py) may.
HAND_MADE_NAME = re.compile(
    r"""(?:r?partition|split)\(["'][/+]["']\)"""
    r"""|\{[\w.'"\[\]]*(?:task|method|family|encoding|fmt|format|model|label|base|variant)[\w'"\]]*\}[/+]\{"""
    r"""|["']transformer/|startswith\(f?["'][\w{}]*/["']\)|["'][/+]["']\s*\+|\+\s*["'][/+]["']""")


def test_names_are_built_and_split_by_the_parsing_module_only():
    offending = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module.split("/")[0] in ("tests", "examples", "build", ".venv") or module == "tasks/cells.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if HAND_MADE_NAME.search(line):
                offending.append(f"{module}:{number}: {line.strip()}")
    assert not offending, "\n".join(offending)


@pytest.mark.parametrize("line", ['family, _, encoding = method.partition("/")', 'label = f"{task}+{fmt}"',
                                  'expected = f"{row.model}/{row.encoding}"', 'PERF_BASELINE = "transformer/rope"',
                                  'if not m.startswith("transformer/")', 'frame["method"] = "transformer/" + encoding'])
def test_the_grep_finds_each_way_a_name_was_made_by_hand(line):
    assert HAND_MADE_NAME.search(line)
