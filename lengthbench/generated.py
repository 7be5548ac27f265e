"""The committed files generated from the code, rebuilt by one command.

``python -m lengthbench.generated --update`` writes both after a built-in is
added or changed: ``benchmark/code_digests.json`` (each task's, format's,
encoding's, family's and the trainer's version and source digest: a changed
source with no version bump is refused before a run can reuse old records)
and ``lengthbench/catalog.json`` (what ``lengthbench list`` prints without
importing torch). Without ``--update`` it names each file that is stale and
exits 1; the tests compare both with the code the same way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lengthbench.benchmark import versions
from lengthbench.catalog import CATALOG, live


def generated() -> dict[Path, str]:
    """Each generated file and the text the code gives it now (imports the whole API)."""
    return {versions.TABLE: json.dumps(versions.components(), indent=1, sort_keys=True) + "\n",
            CATALOG: json.dumps(live(), indent=1, sort_keys=True) + "\n"}


def stale() -> list[Path]:
    """The generated files whose committed text differs from what the code gives now."""
    return [path for path, text in generated().items() if not path.is_file() or path.read_text() != text]


def main(argv: list[str]) -> int:
    if argv not in ([], ["--update"]):
        print(f"python -m lengthbench.generated: unknown arguments {' '.join(argv)!r}; valid: none (check "
              "code_digests.json and catalog.json) or --update (rewrite them)", file=sys.stderr)
        return 2
    if argv == ["--update"]:
        for path, text in generated().items():
            path.write_text(text)
            print(f"wrote {path}")
        return 0
    behind = stale()
    for path in behind:
        print(f"{path.name} is stale: run `python -m lengthbench.generated --update`")
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
