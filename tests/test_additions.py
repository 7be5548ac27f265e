"""One place per addition, measured: a throwaway task, encoding, model family and study are added to a copy of
the repository the way docs/extend.md says, each touching exactly the number of files the table there gives,
and the copy's own checks of those additions (the generic task, encoding and family tests, the documentation
and count tests, the generated files, the study listing) then pass. A count that is too low fails the checks;
one that is too high fails the count."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADDITIONS_NAMED = r"^\| (a task|an encoding|a model family|a study) \| (\d+)\b"

pytestmark = pytest.mark.slow


def documented_counts(page: str) -> dict[str, int]:
    """The files each addition touches, as the table of ``page`` (docs/extend.md, ARCHITECTURE.md) gives them."""
    rows = re.findall(ADDITIONS_NAMED, (ROOT / page).read_text(), re.M)
    return {what: int(count) for what, count in rows}


def copy_tracked(destination: Path) -> None:
    """The repository's tracked files (links kept as links), as a fresh clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source, target = ROOT / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links excluded, not followed) and a digest of its bytes."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache", ".hypothesis")]
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                found[str(path.relative_to(root))] = hashlib.sha1(path.read_bytes()).hexdigest()
    return found


def changed(before: dict, after: dict) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def in_copy(root: Path, code: str) -> str:
    """Run Python ``code`` in the copy (its own package first on the path); its standard output."""
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + textwrap.dedent(text))


def count_up(root: Path, which: int) -> None:
    """The front page's "N exact tasks × M encodings and K other model families", group ``which`` plus one."""
    for page in ("README.md", "docs/index.md"):
        path = root / page
        pattern = r"(\d+) exact tasks ×(\s+)(\d+) encodings and (\d+) other model families"
        found = re.search(pattern, path.read_text())
        numbers = [int(found.group(1)), int(found.group(3)), int(found.group(4))]
        numbers[which] += 1
        edit(path, found.group(0), f"{numbers[0]} exact tasks ×{found.group(2)}{numbers[1]} encodings and "
                                   f"{numbers[2]} other model families")


def regenerate(root: Path) -> None:
    in_copy(root, "from lengthbench.generated import main; main(['--update'])")


def add_task(root: Path) -> None:
    append(root / "tasks" / "regular.py", '''

        @register_task
        class ThrowawayLast(Task):
            """The last input symbol (a throwaway task of the test that counts an addition's files)."""

            name = "throwaway_last"
            rank = 900
            level = "R"
            symbols = ("a", "b")
            description = "the last input symbol (throwaway)"
            output_rule = "1"
            uniform_alphabet = 2

            def sample(self, rng, length, batch_size):
                return self.examples(rng.integers(0, 2, size=(batch_size, length)))

            def examples(self, x):
                return Sample(x, x[:, -1:])

            def answer_chance(self, length):
                return 0.5

            def solve(self, inputs):
                return [inputs[-1]]
        ''')
    append(root / "tests" / "test_tasks.py", '''


        def test_throwaway_last_example():
            assert get_task("throwaway_last").solve([0, 1, 1, 0]) == [0]
        ''')
    table = root / "docs" / "tasks.md"
    listed = in_copy(root, "from lengthbench.tasks.listing import tasks_table; print(tasks_table())")
    row = next(line for line in listed.splitlines() if "`throwaway_last`" in line)  # `lengthbench list tasks`
    last_regular = [line for line in table.read_text().splitlines() if re.match(r"\| `\w+` \| R \|", line)][-1]
    edit(table, last_regular + "\n", last_regular + "\n" + row + "\n")
    count_up(root, 0)
    regenerate(root)


def add_encoding(root: Path) -> None:
    (root / "models" / "encodings" / "throwaway.py").write_text(textwrap.dedent('''
        """A throwaway encoding: a learned bias per head on the first key (a test counts an addition's files)."""

        import torch
        from torch import nn

        from lengthbench.models.encodings.base import PositionEncoding, register_encoding


        @register_encoding("throwaway-sink", rank=900, defaults={}, description="a learned first-key bias (throwaway)")
        class ThrowawaySink(PositionEncoding):
            shift_invariant = False

            def __init__(self, d_model, n_heads):
                super().__init__(d_model, n_heads)
                self.sink = nn.Parameter(torch.zeros(n_heads))

            def bias(self, q_pos, k_pos):
                first = (k_pos == k_pos[:, :1]).float()[:, None, None, :]
                return self.sink[None, :, None, None] * first.expand(-1, -1, q_pos.shape[1], -1)
        '''))
    edit(root / "models" / "encodings" / "__init__.py", "    t5,\n", "    t5,\n    throwaway,\n")
    append(root / "tests" / "test_encodings.py", '''


        def test_throwaway_sink_biases_only_the_first_key():
            from lengthbench.models.encodings import build_encoding

            encoding = build_encoding("throwaway-sink", 8, 2)
            with torch.no_grad():
                encoding.sink.fill_(3.0)
            pos = torch.arange(4)[None]
            bias = encoding.bias(pos, pos)
            assert bias.shape == (1, 2, 4, 4) and (bias[..., 0] == 3).all() and (bias[..., 1:] == 0).all()
        ''')
    edit(root / "docs" / "encodings.md", "| `nope` |", "| `throwaway-sink` | a learned first-key bias per head "
                                                     "(throwaway) | {} |\n| `nope` |")
    count_up(root, 1)
    regenerate(root)


def add_family(root: Path) -> None:
    source = (ROOT / "examples" / "gru_family.py").read_text()
    source = source.replace('@register_family("gru",', '@register_family("throwaway-gru", rank=900,')
    (root / "models" / "throwaway_gru.py").write_text(source)
    edit(root / "models" / "__init__.py", "recurrent, state_space, transformer,",
         "recurrent, state_space, throwaway_gru, transformer,")
    append(root / "tests" / "test_families.py", '''


        def test_throwaway_gru_gives_next_token_logits():
            from lengthbench.models import ModelSize, build_model

            model = build_model("throwaway-gru", 5, ModelSize(d_model=8, n_layers=1, n_heads=1, d_ff=8), 0)
            assert model(torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 5)
        ''')
    edit(root / "docs" / "models.md", "| `lstm` |", "| `throwaway-gru` | one-layer GRU (throwaway) |\n| `lstm` |")
    count_up(root, 2)
    regenerate(root)


def add_study(root: Path) -> None:
    (root / "studies" / "scratch.py").write_text(textwrap.dedent('''
        """A scratch study: does NoPE copy past its training lengths? (a test counts an addition's files)"""

        from dataclasses import replace

        from lengthbench.benchmark.presets import PRESETS, register_preset
        from lengthbench.leaderboard.aggregate import leaderboard_frame
        from lengthbench.leaderboard.verdicts import pct
        from lengthbench.studies.base import Study, register_study

        register_preset(replace(PRESETS["smoke"], name="scratch-grid", tasks=("copy",), encodings=("nope",),
                                description="the scratch study's grid"))


        def scratch_report(records):
            row = leaderboard_frame(records).iloc[0]
            return f"# Scratch\\n\\nOurs: {pct(row.ood_exact_match_mean)}% test exact match.\\n"


        register_study(Study(name="scratch", about="does NoPE copy far", presets=("scratch-grid",), rank=900,
                             records="leaderboard/reference/scratch/records", sources=("Nobody 2026",),
                             protocol="theirs", report=scratch_report))
        '''))
    edit(root / "studies" / "__init__.py", "from lengthbench.studies import fit  # noqa: F401\n",
         "from lengthbench.studies import fit  # noqa: F401\nfrom lengthbench.studies import scratch  # noqa: F401\n")
    edit(root / "docs" / "presets.md", "| `quick` |",
         "| `scratch-grid` | `copy` × `nope` × 1 seed | as `smoke` | as `smoke` | the scratch study's grid |\n"
         "| `quick` |")
    edit(root / "README.md", " (`lengthbench list studies`)", ", `scratch` (`scratch-grid`) (`lengthbench list studies`)")
    append(root / "tests" / "test_reproduction.py", '''


        def test_scratch_report_says_the_exact_match():
            from lengthbench.studies.scratch import scratch_report

            rows = [record("copy", "transformer/nope", s, [1.0, 1.0, 0.5, 0.5]) for s in range(3)]
            assert "Ours: " in scratch_report(rows)
        ''')
    regenerate(root)


ADDITIONS = {"a task": add_task, "an encoding": add_encoding, "a model family": add_family, "a study": add_study}
# The copy's own tests of what was added: the generic tests over every task, encoding and family, the docs'
# tables and the front page's counts, the registries' order, the studies' listing, the source digests.
CHECKS = ("tests/test_readme.py", "tests/test_architecture.py", "tests/test_studies.py", "tests/test_paper_presets.py",
          "tests/test_chance.py", "tests/test_tasks.py", "tests/test_encodings.py", "tests/test_families.py",
          "tests/test_reproduction.py", "tests/test_versions.py")
CHECKED = ("throwaway or scratch or table_is_current or documented or counts_the_front_page or short_front_door "
           "or registry_type or every_study or list_studies or paper_preset_holds or shipped_grids or closed_forms "
           "or every_source_change")
# Every preset's run ids (but `standard`'s, which takes every registered task and encoding), as one line each.
GRIDS = ("import hashlib; from lengthbench.benchmark.grid import grid_configs; from lengthbench.benchmark.presets "
         "import PRESETS\nfor name, preset in PRESETS.items():\n    if name != 'standard':\n        print(name, "
         "hashlib.sha1(' '.join(sorted(c.run_id for c in grid_configs(preset))).encode()).hexdigest())")


def test_each_addition_touches_the_files_the_docs_count(tmp_path):
    counts = documented_counts("docs/extend.md")
    assert set(counts) == set(ADDITIONS) and documented_counts("ARCHITECTURE.md") == counts, counts
    root = tmp_path / "repository"
    copy_tracked(root)
    grids = set(in_copy(root, GRIDS).splitlines())
    touched = {}
    for what, add in ADDITIONS.items():
        before = snapshot(root)
        add(root)
        touched[what] = changed(before, snapshot(root))
    assert {what: len(files) for what, files in touched.items()} == counts, touched
    # ... and those files are all it takes: the generated files are current, the copy's own checks pass
    assert in_copy(root, "from lengthbench.generated import stale; print(stale())") == "[]\n"
    checks = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-v", "-p", "no:cacheprovider",
                             "-k", CHECKED, *CHECKS], cwd=root, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert checks.returncode == 0, checks.stdout[-4000:] + checks.stderr[-2000:]
    for ran in ("test_targets_equal_oracle[throwaway_last]", "test_throwaway_last_example",
                "test_every_built_in_encoding_passes_the_contract[throwaway-sink]",
                "test_every_built_in_family_passes_the_family_contract[throwaway-gru]",
                "test_scratch_report_says_the_exact_match", "test_the_counts_the_front_page_states_are_the_registrys"):
        assert f"{ran} PASSED" in checks.stdout, ran
    # ... and no shipped grid took in the new task or encoding: only the new study's own preset is new
    now = set(in_copy(root, GRIDS).splitlines())
    assert {line.split()[0] for line in now - grids} == {"scratch-grid"} and grids <= now
