"""The presets table shown by ``lengthbench list presets`` (``--json``: every setting)."""

from __future__ import annotations

import json

from lengthbench.benchmark.grid import grid_configs
from lengthbench.benchmark.presets import PRESETS


def presets_listing(as_json: bool = False) -> str:
    """Every preset as a table, one line each, or with ``as_json`` every setting as JSON."""
    if as_json:
        return "\n".join(json.dumps(p.describe(), indent=1, default=str) for p in PRESETS.values())
    rows = [("preset", "runs", "tasks", "methods", "seeds", "model", "lengths train/val/test", "steps", "about")]
    for preset in PRESETS.values():
        settings, model = preset.settings, preset.model
        steps = sorted(({s.get("steps", settings.get("steps")) for s in preset.task_settings.values()}
                        | {settings.get("steps")}) - {None}) or ["-"]
        rows.append((preset.name, str(len(grid_configs(preset))), str(len(preset.grid_tasks())),
                     str(len(preset.methods())), ",".join(map(str, preset.seeds)),
                     f"d{model.d_model}x{model.n_layers}",
                     f"{settings.get('train_length')}/{settings.get('validation_length') or '-'}/"
                     f"{settings.get('test_length')}",
                     "..".join(map(str, (steps[0], steps[-1]) if len(steps) > 1 else steps)), preset.description))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows)
