"""Run configurations and presets.

A ``Preset`` is plain data: which tasks, encodings and seeds form the grid,
the shared training/evaluation settings, and per-task or per-encoding
overrides. ``Preset.run_config`` resolves one grid cell into a fully
explicit ``RunConfig`` whose hash names the cell's result record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace

from benchmark.versions import code_versions
from models.encodings import encoding_entry, resolve_params
from models.transformer import ModelSize
from tasks import get_task
from tasks.base import InputError


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines one run's result (the record stores it whole)."""

    task: str
    encoding: str
    seed: int
    train_length: int  # train on task lengths uniform in 1..train_length
    test_length: int  # evaluate lengths 1..test_length
    eval_stride: int  # evaluate every eval_stride-th length (plus L_train, L_train+1, L_test)
    eval_samples: int  # examples per evaluated length
    eval_seed: int  # fixes evaluation data and eval-time random positions
    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup_steps: int
    grad_clip: float
    model: ModelSize
    encoding_params: dict = field(default_factory=dict)
    encoding_source: str = "built-in"  # plugin file + content hash for third-party encodings
    code_versions: dict = field(default_factory=dict)  # task/encoding/trainer versions other than 1

    def to_dict(self) -> dict:
        """Plain data; ``code_versions`` only when some version is not 1, so
        configs (and hashes, record names) of code never bumped stay as they were."""
        data = asdict(self)
        if not data["code_versions"]:
            del data["code_versions"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        data = dict(data)
        data["model"] = ModelSize(**data["model"])
        return cls(**data)

    def config_hash(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    @property
    def run_id(self) -> str:
        return f"{self.task}__{self.encoding}__seed{self.seed}__{self.config_hash()}"

    def eval_lengths(self) -> list[int]:
        """Evaluated task lengths: the stride grid from the task's minimum
        length, always including L_train, the first OOD length and L_test."""
        start = get_task(self.task).min_length
        lengths = set(range(start, self.test_length + 1, self.eval_stride))
        lengths |= {self.train_length, self.train_length + 1, self.test_length}
        return sorted(n for n in lengths if start <= n <= self.test_length)


RUN_FIELDS = {f.name for f in fields(RunConfig)} - {"task", "encoding", "seed", "model", "encoding_params",
                                                    "encoding_source", "code_versions"}


@dataclass(frozen=True)
class Preset:
    """A named grid: ``settings`` holds RunConfig fields shared by all cells,
    ``task_settings[task]`` overrides them per task (a ``"model"`` entry there
    overrides fields of ``model``) and ``encoding_params[encoding]`` sets
    encoding parameters."""

    name: str
    description: str
    tasks: tuple[str, ...]
    encodings: tuple[str, ...]
    seeds: tuple[int, ...]
    model: ModelSize
    settings: dict
    task_settings: dict = field(default_factory=dict)
    encoding_params: dict = field(default_factory=dict)

    def run_config(self, task: str, encoding: str, seed: int) -> RunConfig:
        get_task(task)
        source = encoding_entry(encoding).source
        values = {**self.settings, **self.task_settings.get(task, {})}
        model = replace(self.model, **values.pop("model", {}))
        unknown = set(values) - RUN_FIELDS
        if unknown:
            raise InputError(f"preset {self.name!r} sets unknown fields {sorted(unknown)}; valid: {sorted(RUN_FIELDS)}")
        params = resolve_params(encoding, self.encoding_params.get(encoding))
        return RunConfig(task=task, encoding=encoding, seed=seed, model=model,
                         encoding_params=params, encoding_source=source,
                         code_versions=code_versions(task, encoding), **values)

    def with_grid(self, tasks=None, encodings=None, seeds=None) -> "Preset":
        """The same preset on another grid; ``None`` keeps the preset's axis.
        An empty axis, a repeated entry or a negative seed is refused: a grid
        holds each (task, encoding, seed) once."""
        seeds = None if seeds is None else list(seeds)
        for seed in seeds or ():
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise InputError(f"seed {seed!r} is not valid; seeds are integers >= 0")
        return replace(
            self,
            tasks=_grid_axis("tasks", tasks, self.tasks),
            encodings=_grid_axis("encodings", encodings, self.encodings),
            seeds=_grid_axis("seeds", seeds, self.seeds),
        )

    def describe(self) -> dict:
        return asdict(self)


def _grid_axis(what: str, values, default: tuple) -> tuple:
    if values is None:
        return default
    values = tuple(values)
    if not values:
        raise InputError(f"{what}: the list is empty; give at least one, or leave the option out "
                         f"for the preset's {what} ({', '.join(map(str, default))})")
    repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if repeated is not None:
        raise InputError(f"{what}: {repeated!r} is listed twice in {','.join(map(str, values))}; "
                         "give each once (a grid holds every task, encoding and seed once)")
    return values
