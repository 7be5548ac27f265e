"""Run configurations and presets.

A ``Preset`` is plain data: which tasks, encodings and seeds form the grid,
the shared training/evaluation settings, and per-task or per-encoding
overrides. ``Preset.run_config`` resolves one grid cell into a fully
explicit ``RunConfig`` whose hash names the cell's result record.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from lengthbench.benchmark.seeding import init_seed
from lengthbench.benchmark.versions import code_versions
from lengthbench.core.errors import InputError
from lengthbench.models.encodings import ENCODINGS, PositionEncoding, build_encoding, encoding_entry, resolve_params
from lengthbench.models.families import TRANSFORMER, ModelSize, RunModel, build_model, family_entry
from lengthbench.tasks import get_task
from lengthbench.tasks.base import task_source
from lengthbench.tasks.cells import PLAIN, Cell, method_parts, split_label, task_label
from lengthbench.tasks.formats import get_format, label_versions

EVAL_SEED = 1234  # every preset's: evaluation data and eval-time positions, independent of the run seed
DEFAULT_FIT_THRESHOLD = 0.9


def dotted(values: dict, prefix: str = "") -> dict:
    """Nested config dicts as dotted keys (``{"model": {"d_model": 64}}`` as
    ``{"model.d_model": 64}``; an empty dict adds no key)."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out |= dotted(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines one run's result (the record stores it whole). ``cell``: the task, format,
    family and encoding it fills, held apart; written as text only where the config leaves (``to_dict``: the
    task label, ``encoding`` and ``family`` as records have always held them, so hashes and run ids stay)."""

    cell: Cell
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
    code_versions: dict = field(default_factory=dict)  # task/encoding/family/trainer versions other than 1
    task_source: str = "built-in"  # an installed package's task or format: its release and module digest
    # Lengths train_length < n <= validation_length are the validation band (settings are chosen there);
    # the reported test band is validation_length < n <= test_length. 0: no validation band.
    validation_length: int = 0
    fit_threshold: float = DEFAULT_FIT_THRESHOLD  # a run fits when its held-out ID exact match reaches this
    # Budget until fit: every fit_check_every steps the run's ID exact match on held-out samples is
    # checked; after fit_patience checks in a row at or above fit_threshold it stops (steps is the
    # maximum). 0: train for exactly ``steps``.
    fit_check_every: int = 0
    fit_patience: int = 0  # 0 with fit_check_every > 0: the checks are logged, the run never stops at fit
    family_source: str = "built-in"  # plugin file + content hash for a third-party model family
    # The test band evaluated at this many lengths spaced evenly in log length (0: every eval_stride-th).
    test_points: int = 0
    # Fit judged on the trained lengths from fit_from up, every one of them at or above fit_threshold
    # (0: the mean over every trained length, the first protocol's rule).
    fit_from: int = 0
    # The lengths the fit is judged on scored on inputs the run never trained on (its training stream
    # replayed), or where training drew nearly every input, on the whole input space (``benchmark.unseen``).
    fit_unseen: bool = False

    def as_fields(self) -> dict:
        """Every setting as plain data, the cell as the text records hold: ``task`` (its label), ``encoding``
        ("" for a family that takes none) and ``family``."""
        data = asdict(self)
        del data["cell"]
        return {"task": self.task, "encoding": self.encoding, **data, "family": self.family}

    def to_dict(self) -> dict:
        """Plain data as records store it; a field added after records existed is left out while
        it holds its default (``LATER_FIELDS``), so configs (and hashes, record
        names) made before it stay as they were."""
        data = self.as_fields()
        for name, default in LATER_FIELDS.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        """A config from a record's text: the one place a stored cell is parsed."""
        data = dict(data)
        task, fmt = split_label(data.pop("task"))
        cell = Cell(task, fmt, data.pop("family", TRANSFORMER), data.pop("encoding"))
        return cls(cell=cell, model=ModelSize(**data.pop("model")), **data)

    def config_hash(self) -> str:
        """The first 10 hex digits of the config's SHA-256, computed once per
        config (it is frozen; a board of a thousand records asks for it thousands of times)."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:10]
            object.__setattr__(self, "_hash", cached)
        return cached

    def cell_key(self) -> str:
        """The grid cell this run fills, whatever code version made it: its
        config without ``code_versions`` and without the encoding parameters
        its encoding no longer takes (a record of an earlier trainer, or of
        KERPLE before its initialization lost its parameters, still belongs
        to its cell of a preset, which ``config_hash`` tells apart)."""
        data = self.to_dict()
        data.pop("code_versions", None)
        if self.encoding in ENCODINGS:
            taken = ENCODINGS[self.encoding].defaults
            data["encoding_params"] = {k: v for k, v in self.encoding_params.items() if k in taken}
        return json.dumps(data, sort_keys=True)

    def version_rank(self) -> int:
        """How far past version 1 the code that made this run is, summed over
        its components (task, format, encoding, family, trainer): of two runs
        of one cell, the later code's is the higher."""
        return sum(v - 1 for v in self.code_versions.values())

    @property
    def task(self) -> str:
        """The task label (``addition+reversed``): the cell's, as text."""
        return self.cell.label

    @property
    def encoding(self) -> str:
        return self.cell.encoding

    @property
    def family(self) -> str:
        return self.cell.family

    @property
    def method(self) -> str:
        """The leaderboard row key: ``transformer/rope``, ``lstm``."""
        return self.cell.method

    @property
    def file_method(self) -> str:
        """The method's part of record file names: the encoding, or the family without one (``label`` is the
        task's, ``Cell.label``: one meaning per name)."""
        return self.encoding or self.family

    @property
    def run_id(self) -> str:
        return f"{self.task}__{self.file_method}__seed{self.seed}__{self.config_hash()}"

    def split(self, length: int) -> str:
        """``id`` for a task length the run trained on (<= ``train_length``),
        ``val`` in the validation band, else ``ood`` (the reported test band):
        the one rule every summary, table and frame uses."""
        if length <= self.train_length:
            return "id"
        return "val" if length <= self.validation_length else "ood"

    @property
    def test_start(self) -> int:
        """The first length of the reported test band."""
        return max(self.train_length, self.validation_length) + 1

    def make_encoding(self) -> PositionEncoding | None:
        """The run's position encoding, freshly built (None for a family without one)."""
        if not self.encoding:
            return None
        return build_encoding(self.encoding, self.model.d_model, self.model.n_heads, self.encoding_params)

    def build_model(self, vocab_size: int) -> RunModel:
        """The run's freshly initialised model (its init seed, then its encoding, then its layers)."""
        return build_model(self.family, vocab_size, self.model, init_seed(self.seed), self.make_encoding)

    def eval_lengths(self) -> list[int]:
        """Evaluated task lengths: the stride grid from the task's minimum
        length, always including L_train, both ends of the validation band,
        the first test length and L_test; with ``test_points``, the test band
        holds only its ``test_points`` lengths evenly spaced in log length."""
        start = get_task(self.cell.task).min_length  # a format keeps its task's lengths
        end = self.test_start - 1 if self.test_points else self.test_length
        lengths = set(range(start, end + 1, self.eval_stride)) | set(self.log_spaced_test_lengths())
        lengths |= {self.train_length, self.train_length + 1, self.test_start, self.test_length}
        if self.validation_length:
            lengths.add(self.validation_length)
        return sorted(n for n in lengths if start <= n <= self.test_length)


    def log_spaced_test_lengths(self) -> list[int]:
        """``test_points`` lengths from the first test length to ``test_length``,
        evenly spaced in log length (rounded; where rounding makes two equal,
        the next free length up); empty without ``test_points``."""
        if not self.test_points:
            return []
        lo, hi = self.test_start, self.test_length
        if self.test_points >= hi - lo + 1:
            return list(range(lo, hi + 1))
        ratios = np.linspace(0.0, 1.0, self.test_points)
        lengths: list[int] = []
        for n in np.rint(lo * (hi / lo) ** ratios).astype(int).tolist():
            lengths.append(max(n, lengths[-1] + 1) if lengths else n)
        return lengths

    def fit_lengths(self) -> list[int]:
        """The trained lengths the fit is judged on (``fit_from`` up, else all)."""
        return [n for n in self.eval_lengths() if self.split(n) == "id" and n >= self.fit_from]


LATER_FIELDS = {"code_versions": {}, "family": TRANSFORMER, "validation_length": 0,
                "fit_threshold": DEFAULT_FIT_THRESHOLD, "fit_check_every": 0, "fit_patience": 0,
                "family_source": "built-in", "test_points": 0, "fit_from": 0, "fit_unseen": False,
                "task_source": "built-in"}
RUN_FIELDS = {f.name for f in fields(RunConfig)} - {"cell", "seed", "model", "encoding_params",
                                                    "encoding_source", "code_versions", "family_source",
                                                    "task_source"}


# Settings that may be zero (the others must be positive): no warmup, no validation band, no fit
# checks, every test length, every trained length judged, evaluation seed 0, no weight decay.
ZERO_ALLOWED = {"warmup_steps", "validation_length", "fit_check_every", "fit_patience", "test_points", "fit_from",
                "eval_seed", "weight_decay"}


def settable_fields() -> dict[str, type]:
    """The run settings ``run --set`` may override, with their types."""
    kinds = {"int": int, "float": float}
    return {f.name: kinds[f.type] for f in fields(RunConfig) if f.name in RUN_FIELDS and f.type in kinds}


def parse_setting(text: str) -> tuple[str, int | float]:
    """``"steps=500"`` as ``("steps", 500)``: one run setting (``settable_fields``)
    and a value of its type, in range; refused by name otherwise. Whether the
    settings agree with each other (bands, fit rule) is checked with the preset's."""
    name, eq, raw = str(text).partition("=")
    name, raw = name.strip(), raw.strip()
    settable = settable_fields()
    if not eq or name not in settable:
        raise InputError(f"--set {text!r}: give KEY=VALUE with KEY one of {', '.join(sorted(settable))}")
    kind = settable[name]
    try:
        value = kind(raw)
    except ValueError:
        raise InputError(f"--set {text!r}: {raw!r} is not {'an integer' if kind is int else 'a number'} "
                         f"(the type of {name})") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and name not in ZERO_ALLOWED):
        floor = ">= 0" if name in ZERO_ALLOWED else "> 0"
        raise InputError(f"--set {text!r}: {name} must be a finite number {floor}")
    return name, value


@dataclass(frozen=True)
class Cut:
    """Cells a preset leaves out of its grid, and why (a reference too costly
    to run whole keeps its protocol and drops breadth, saying what it dropped).
    ``methods`` are leaderboard keys (``transformer/rope``, ``lstm``) or a family
    for all its encodings (``looped``); ``tasks`` empty means every task. With
    ``only``, the cut is the complement on those tasks: every method but
    ``methods`` is left out there."""

    reason: str
    methods: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    only: bool = False

    def covers(self, task: str, method: str) -> bool:
        """Whether the cut leaves out (task, method); a cut of a task cuts it in every format."""
        if self.tasks and task not in self.tasks and split_label(task)[0] not in self.tasks:
            return False
        named = method in self.methods or method_parts(method)[0] in self.methods
        return named != self.only

    def describe(self) -> str:
        where = f"on {', '.join(self.tasks)}" if self.tasks else "on every task"
        kept = f" but {', '.join(self.methods)}" if self.methods else ""
        what = f"every method{kept}" if self.only else ", ".join(self.methods)
        return f"{what} {where}: {self.reason}"


@dataclass(frozen=True)
class Preset:
    """A named grid: ``settings`` holds RunConfig fields shared by all cells,
    ``task_settings[task]`` overrides them per task (a ``"model"`` entry there
    overrides fields of ``model``) and ``encoding_params[encoding]`` sets
    encoding parameters. ``families`` are the model families: the
    transformer runs once per encoding, a family without encodings once;
    ``family_settings[family]`` overrides settings (and ``model`` fields)
    for one family, after the task's; ``overrides`` sets run fields for
    every cell, last (``run --select`` trains one grid per value this way).
    ``formats`` are the data formats every task is written in
    (``tasks.formats``): a cell is task x format x method, its task the
    label ``grid_tasks`` gives; a task's settings hold in every format
    (``task_settings`` may also name a label)."""

    name: str
    description: str
    tasks: tuple[str, ...]
    encodings: tuple[str, ...]
    seeds: tuple[int, ...]
    model: ModelSize
    settings: dict
    task_settings: dict = field(default_factory=dict)
    encoding_params: dict = field(default_factory=dict)
    families: tuple[str, ...] = (TRANSFORMER,)
    family_settings: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)  # set last, over every task's and family's settings
    # cell_settings[task][family]: settings (and model fields) for one family on one task, after the
    # family's (parameter-matched widths per task: ``benchmark.matching``)
    cell_settings: dict = field(default_factory=dict)
    select: str = ""  # a `run --select` the preset makes by default ("lr=5e-4,1e-3,2e-3"), chosen on validation
    cuts: tuple[Cut, ...] = ()  # cells left out of the grid, each with its reason
    formats: tuple[str, ...] = (PLAIN,)

    def grid_tasks(self) -> list[str]:
        """The grid's task labels: each task in each format (``addition+reversed``),
        task-major; a task given as a label (an alias, ``copy+reversed``) stands
        as it is, once."""
        for fmt in self.formats:
            get_format(fmt)
        labels = []
        for task in self.tasks:
            base, own = split_label(task)
            for fmt in ((own,) if own != PLAIN else self.formats):
                label = task_label(base, fmt)  # the one name of the cell
                if label not in labels:
                    labels.append(label)
        return labels

    def cut_reason(self, task: str, method: str) -> str | None:
        """Why the cell (task, method) is left out of this grid, or None when it is in it."""
        return next((cut.reason for cut in self.cuts if cut.covers(task, method)), None)

    def check_cuts(self) -> None:
        """Every task and method a cut names exists (a misspelt one would cut nothing, silently)."""
        for cut in self.cuts:
            for task in cut.tasks:
                label_versions(task)  # the task and format exist
            for method in cut.methods:
                family, encoding = method_parts(method)
                family_entry(family)
                if encoding:
                    encoding_entry(encoding)

    def methods(self) -> list[tuple[str, str]]:
        """(family, encoding) of every method of the grid, in grid order."""
        return [(f, e) for f in self.families
                for e in (self.encodings if family_entry(f).takes_encoding else ("",))]

    def run_config(self, task: str, encoding: str, seed: int, family: str = TRANSFORMER) -> RunConfig:
        """The cell (task, method, seed); ``encoding`` is ignored (and stored
        as "") for a family that takes none; ``task`` is a task label (the
        task's settings hold in its every format unless the label has its own)."""
        label_versions(task)  # the task and format exist
        base, fmt = split_label(task)
        task = task_label(base, fmt)  # addition+index-hints is addition-index-hints: one cell, one name
        by_task = self.task_settings.get(task, self.task_settings.get(base, {}))
        by_family = self.family_settings.get(family, {})
        by_cell = self.cell_settings.get(task, self.cell_settings.get(base, {})).get(family, {})
        values = {"eval_seed": EVAL_SEED, **self.settings, **by_task, **by_family, **by_cell, **self.overrides}
        values.pop("model", None)
        model = replace(self.model, **{**by_task.get("model", {}), **by_family.get("model", {}),
                                       **by_cell.get("model", {})})
        unknown = set(values) - RUN_FIELDS
        if unknown:
            raise InputError(f"preset {self.name!r} sets unknown fields {sorted(unknown)}; valid: {sorted(RUN_FIELDS)}")
        _check_protocol(self.name, values)
        _check_task_lengths(self.name, base, values)
        _check_model_size(self.name, model)
        if family_entry(family).takes_encoding:
            params = resolve_params(encoding, self.encoding_params.get(encoding))
            source = encoding_entry(encoding).source
        else:
            encoding, params, source = "", {}, "built-in"
        return RunConfig(cell=Cell(base, fmt, family, encoding), seed=seed, model=model,
                         encoding_params=params, encoding_source=source,
                         code_versions=code_versions(task, encoding or None, family),
                         family_source=family_entry(family).source, task_source=task_source(task), **values)

    def evaluation_config(self, task: str) -> RunConfig:
        """A cell of ``task`` whose evaluation settings (lengths, bands, samples,
        seed) are every run's of that task in this preset, whatever its method."""
        return self.run_config(task, self.encodings[0] if self.encodings else "", self.seeds[0])

    def with_grid(self, tasks=None, encodings=None, seeds=None, families=None, formats=None) -> "Preset":
        """The same preset on another grid; ``None`` keeps the preset's axis.
        An empty axis, a repeated entry or a negative seed is refused: a grid
        holds each (task, method, seed) once."""
        seeds = None if seeds is None else _grid_axis("seeds", seeds, self.seeds)
        for seed in seeds or ():
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
                kind = "" if isinstance(seed, numbers.Real) else f" (a {type(seed).__name__})"
                raise InputError(f"seed {seed!r}{kind} is not valid; seeds are integers >= 0")
        seeds = None if seeds is None else [int(seed) for seed in seeds]  # numpy integers become plain ones
        return replace(
            self,
            tasks=_grid_axis("tasks", tasks, self.tasks),
            encodings=_grid_axis("encodings", encodings, self.encodings),
            seeds=_grid_axis("seeds", seeds, self.seeds),
            families=_grid_axis("models", families, self.families),
            formats=_grid_axis("formats", formats, self.formats),
        )

    def describe(self) -> dict:
        return asdict(self)


def _check_protocol(preset: str, values: dict) -> None:
    """Train, validation and test bands must be disjoint and each non-empty;
    a budget until fit needs a check interval and a patience."""
    train, val, test = values.get("train_length"), values.get("validation_length", 0), values.get("test_length")
    if val and not (isinstance(train, int) and isinstance(test, int) and train < val < test):
        raise InputError(f"preset {preset!r}: validation_length {val!r} must lie strictly between train_length "
                         f"{train!r} and test_length {test!r} (or be 0: no validation band)")
    every, patience = values.get("fit_check_every", 0), values.get("fit_patience", 0)
    if (patience and not every) or every < 0 or patience < 0:
        raise InputError(f"preset {preset!r}: fit_check_every {every!r} and fit_patience {patience!r} must both be "
                         "positive (train until fit), fit_check_every positive and fit_patience 0 (log the checks, "
                         "train for exactly `steps`) or both 0 (train for exactly `steps`)")
    if isinstance(train, int) and isinstance(test, int) and test <= max(train, val or 0):
        raise InputError(f"preset {preset!r}: test_length {test} leaves no test band: it must exceed "
                         f"validation_length {val or 0} and train_length {train}")
    points, fit_from = values.get("test_points", 0), values.get("fit_from", 0)
    if not isinstance(points, int) or points < 0 or points == 1:
        raise InputError(f"preset {preset!r}: test_points {points!r} must be 0 (every eval_stride-th test length) "
                         "or at least 2 (both ends of the test band)")
    if not isinstance(fit_from, int) or not (fit_from == 0 or 1 <= fit_from <= (train or 0)):
        raise InputError(f"preset {preset!r}: fit_from {fit_from!r} must be 0 (every trained length) or a trained "
                         f"length, 1..{train}")
    unseen = values.get("fit_unseen", False)
    if not isinstance(unseen, bool):
        raise InputError(f"preset {preset!r}: fit_unseen {unseen!r} must be true or false")
    threshold = values.get("fit_threshold", DEFAULT_FIT_THRESHOLD)
    if not 0 < threshold <= 1:
        raise InputError(f"preset {preset!r}: fit_threshold {threshold!r} must be a fraction in (0, 1]")


def _check_task_lengths(preset: str, task: str, values: dict) -> None:
    """The lengths a run trains and tests on must be lengths its task has."""
    definition = get_task(task)
    shortest, longest = definition.min_length, definition.max_length
    if values["train_length"] < shortest:
        raise InputError(f"preset {preset!r}: train_length {values['train_length']} is below task {task!r}'s shortest "
                         f"length, {shortest}; set train_length to at least {shortest}")
    if longest is not None and values["test_length"] > longest:
        raise InputError(f"preset {preset!r}: test_length {values['test_length']} is above task {task!r}'s longest "
                         f"length, {longest} (its vocabulary's limit); set test_length to at most {longest}")


def _check_model_size(preset: str, model: ModelSize) -> None:
    for name in ("d_model", "n_layers", "n_heads", "d_ff"):
        value = getattr(model, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"preset {preset!r}: model {name} {value!r} must be a positive integer")


def _grid_axis(what: str, values, default: tuple) -> tuple:
    """The axis ``values`` as a tuple: ``None`` keeps ``default``; a string is
    a comma-separated list, as on the command line (never its characters)."""
    if values is None:
        return default
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",") if v.strip()]
    values = tuple(values)
    if not values:
        raise InputError(f"{what}: the list is empty; give at least one, or leave the option out "
                         f"for the preset's {what} ({', '.join(map(str, default))})")
    repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if repeated is not None:
        raise InputError(f"{what}: {repeated!r} is listed twice in {','.join(map(str, values))}; "
                         "give each once (a grid holds every task, encoding and seed once)")
    return values
