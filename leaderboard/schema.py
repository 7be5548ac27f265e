"""The versioned ``leaderboard.csv`` schema: column names, types, valid
values, meaning, and the validating reader.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes
meaning; the reader migrates the versions it knows (``MIGRATIONS``) and
refuses the others. Version 3 keyed rows by *method* (``transformer/rope``,
``lstm``) instead of encoding; version 4 scores failed seeds as 0 and counts
harness errors apart (``n_errors``); version 5 adds the validation band, fit
(``n_fit``, ``fit_status``) and training steps, and its OOD columns mean the
test band; version 6 adds each cell's ``protocol`` (its settings), which
``compare`` checks; version 7 adds the horizon columns (chance level,
interquartile mean, area over log length, seeds reaching 2x and 4x);
version 8 adds each cell's data ``format`` (its task column the task label,
``addition+reversed``); version 9 adds each cell's parameter count
(``n_parameters``); version 10 the chance level of token accuracy
(``chance_token_accuracy``) beside that of exact match; version 11 makes both
chance levels the task distribution's (``leaderboard.chance``: the best
input-ignoring predictor's expected score), where earlier versions read them
off the test band's own examples (biased upward: S5's 2.6% for 0.83%). A
version 2 to 10 file is read as version 11 (``n_errors`` 0, fit ``unknown``,
no validation band, protocol unknown, horizon columns, parameter count and
token chance empty, the format its task label's: ``plain`` for a bare task
name; its chance levels as it wrote them). The reader checks
every cell's type and range, so an impossible value (a mean of ``inf`` or 7.5,
a negative std, 2.7 seeds) is refused with the file, row and column instead of
turning into a confident wrong verdict in ``compare``.
"""

from __future__ import annotations

import codecs
import csv
import json
import math
import os
from pathlib import Path

import pandas as pd

from lengthbench.benchmark.files import check_input_file, unguard_formula
from lengthbench.benchmark.records import METRICS
from lengthbench.core.errors import InputError
from lengthbench.core.registry import name_problem
from lengthbench.leaderboard.statistics import GENERALIZE_THRESHOLD, REACH_FACTORS
from lengthbench.tasks.base import LEVELS
from lengthbench.tasks.cells import method_name, split_label, transformer_method

SCHEMA_VERSION = 11
KEY = ("task", "method")
STATUSES = ("ok", "not_applicable", "failed")
FIT_STATUSES = ("fit", "partly_fit", "not_fit", "unknown", "")
LEVEL_NAMES = (*LEVELS, "unknown")
# A leaderboard of every task x every encoding is ~100 kB; these bound the work spent on a
# file that is not one (a 2 MB header of duplicate columns used to hang pandas for minutes).
MAX_HEADER_BYTES = 1 << 16
MAX_FILE_BYTES = 64 << 20

_T = f"{GENERALIZE_THRESHOLD:g}"
WHAT_IS_VALID = "give a leaderboard.csv written by `lengthbench run` or `lengthbench leaderboard`"
FRACTION, COUNT, POSITIVE, NONNEGATIVE = (0, 1), (0, math.inf), (1, math.inf), (0, math.inf)


def _metric_columns(m: str) -> list[tuple]:
    what = m.replace("_", " ")
    return [
        (f"ood_{m}_mean", "float", FRACTION,
         f"mean over seeds of OOD {what}: each seed's mean over the test band (lengths > validation_length; "
         "> L_train when there is no validation band)"),
        (f"ood_{m}_std", "float", FRACTION, "sample standard deviation over seeds (empty with one seed; of "
         "fractions, so at most 0.71)"),
        (f"ood_{m}_ci_low", "float", FRACTION,
         "95% Student-t interval of the mean over seeds, low end, clipped to [0, 1] (empty with one seed)"),
        (f"ood_{m}_ci_high", "float", FRACTION, "95% Student-t interval, high end"),
        (f"ood_{m}_max", "float", FRACTION, "MAX over seeds (the Deletang/Ruoss reporting convention; optimistic)"),
        (f"id_{m}_mean", "float", FRACTION, f"mean over seeds of in-distribution {what} (lengths <= L_train, on "
                                            "held-out examples)"),
        (f"val_{m}_mean", "float", FRACTION, f"mean over seeds of {what} in the validation band (where settings "
                                             "are chosen); empty without a band"),
        (f"frac_seeds_generalize_{m}", "float", FRACTION, f"share of seeds whose OOD {what} is >= {_T}"),
        (f"generalization_length_{m}", "int", COUNT,
         f"largest tested length up to which the seed-mean {what} stays >= {_T} at every tested length"),
        (f"extrapolation_ratio_{m}", "float", NONNEGATIVE, f"generalization_length_{m} / train_length"),
        (f"ood_{m}_iqm", "float", FRACTION, f"interquartile mean over seeds of OOD {what} (the middle half; "
                                            "empty with fewer than 4 seeds)"),
        (f"ood_{m}_area", "float", FRACTION,
         f"mean over seeds of the area under {what} against log length over the test band, over its log range "
         "(1: every test length solved; each doubling of length weighs the same)"),
        *((f"frac_seeds_reach_{k}x_{m}", "float", FRACTION,
           f"share of seeds whose own generalization length (every evaluated length up to it at {what} >= {_T}) "
           f"is at least {k} x train_length; empty when the test band stops short of it") for k in REACH_FACTORS),
    ]


# (name, type, valid values: (low, high) for numbers or the allowed strings, meaning)
COLUMNS: tuple[tuple, ...] = (
    ("schema_version", "int", (SCHEMA_VERSION, SCHEMA_VERSION), "version of this column layout"),
    ("task", "str", (), "the cell's task: its name, or its label in a data format (TASK+FORMAT, e.g. "
                        "addition+reversed; addition-index-hints is addition+index-hints)"),
    ("format", "str", (), "the data format the task is written in (plain, reversed, index-hints: `lengthbench list "
                          "formats`); a cell is task x format x method"),
    ("level", "str", LEVEL_NAMES, "Chomsky level (R, DCF, CS) or family (arithmetic, sequence, state: state tracking, recall: associative recall, recognition: language recognition)"),
    ("method", "str", (), "the row's method: transformer/<encoding>, or a model family that takes no encoding (lstm)"),
    ("model", "str", (), "model family (transformer, rnn, lstm, stack-rnn, tape-rnn)"),
    ("encoding", "text", (), "the transformer's position encoding; empty for a family without encodings"),
    ("status", "str", STATUSES,
     "ok | not_applicable (encoding needs structure the task lacks) | failed (no seed finished)"),
    ("n_seeds", "int", COUNT, "seeds the statistics count: the clean ones and the failed ones, which count as 0 "
                              "(>= 1 when status is ok, else 0)"),
    ("n_failed", "int", COUNT, "seeds on which the method failed (training diverged, or non-finite outputs at an "
                               "evaluated length): each counts as 0 in every statistic of the cell"),
    ("n_errors", "int", COUNT, "seeds whose run raised (a harness error, not the method's): not counted; the next "
                               "`run` retries them"),
    ("train_length", "int", POSITIVE, "largest training length L_train"),
    ("validation_length", "int", COUNT, "last length of the validation band L_train+1..validation_length "
                                        "(0: no band)"),
    ("test_length", "int", POSITIVE, "largest evaluated length L_test (the test band ends there)"),
    ("fit_threshold", "float", FRACTION, "a seed fits when its in-distribution exact match reaches this (with "
                                          "fit_from: at every trained length from fit_from up)"),
    ("chance_exact_match", "float", FRACTION,
     "chance level on the test band: the expected exact match of the best predictor that ignores its input (at "
     "each length the most probable answer; its probability, exact where the task gives it, else estimated from "
     "an independent sample 100x the band), averaged over the band's lengths as the scores are; before version "
     "11, the share of the band's own examples whose answer was their length's most frequent"),
    ("chance_token_accuracy", "float", FRACTION,
     "chance level of token accuracy on the test band: the same predictor writing, at each answer position, its "
     "most probable token (estimated as above; a one-symbol answer's is its exact match's); empty before "
     "version 10"),
    ("n_fit", "int", COUNT, "seeds that fit their training lengths (a failed seed does not)"),
    ("fit_status", "str", FIT_STATUSES, "fit (every seed) / partly_fit / not_fit / unknown (a board from before "
                                        "fit was recorded) / empty (no seed ran); a cell is judged on length "
                                        "generalization (ranked, averaged) only when at least half its seeds fit"),
    ("n_parameters", "count", COUNT, "parameters of the cell's model (the same for every seed; the baseline "
                                     "families are matched to the transformer's): each encoding's own count "
                                     "(learned tables, bias networks) shows; empty before version 9"),
    ("steps_mean", "float", NONNEGATIVE, "mean training steps over seeds (fewer than the preset's steps when a "
                                         "run stopped once it fit)"),
    ("selected", "text", (), "the setting chosen for this cell on the validation band (`run --select`), e.g. "
                             "lr=0.001; empty when nothing was chosen"),
    ("selection_evidence", "text", (), "each value tried with its mean validation-band exact match over the "
                                       "seeds it was chosen on"),
    ("protocol", "json", (), "the cell's settings as JSON: every run-config field but task, method and seed "
                             "(lengths, steps and the fit rule, model size, batch, optimizer, evaluation samples, "
                             "encoding parameters, code versions); `compare` refuses cells whose protocols differ; "
                             "empty in a board from before version 6"),
    *_metric_columns("exact_match"),
    *_metric_columns("token_accuracy"),
    ("rank", "float", POSITIVE,
     "rank of the method within its task by ood_exact_match_mean among the judged cells (1 = best; tied "
     "methods share the average of the ranks they span); empty for a cell that is not judged"),
)

COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
HORIZON_COLUMNS = tuple(name for name in COLUMN_NAMES
                        if name.endswith(("_iqm", "_area")) or "_reach_" in name or name.startswith("chance_"))


def valid_text(kind: str, valid) -> str:
    """Human-readable valid values of a column (the docs and error messages)."""
    if kind == "text":
        return "any text"
    if kind == "json":
        return "a JSON object, or empty"
    if kind == "str":
        return " / ".join(valid) if valid else "non-empty text"
    low, high = valid
    if low == high:
        return str(low)
    if high == math.inf:
        return {"int": f"integer >= {low}", "count": f"integer >= {low}, or empty"}.get(kind,
                                                                                     f"number >= {low}, or empty")
    return f"number in [{low}, {high}], or empty"


def schema_table() -> str:
    """The markdown table of the columns (docs/statistics.md shows exactly this)."""
    lines = ["| column | type | valid | meaning |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {valid_text(kind, valid)} | {doc.replace('|', '/')} |"
              for name, kind, valid, doc in COLUMNS]
    return "\n".join(lines)


class LeaderboardFormatError(InputError):
    """A leaderboard CSV that does not follow the schema."""


def _read_header(path: Path) -> list[str]:
    """The header row, read without letting a huge or binary file cost much."""
    size = os.stat(path).st_size
    if size > MAX_FILE_BYTES:
        raise LeaderboardFormatError(f"{path}: {size} bytes, more than any lengthbench leaderboard "
                                     f"({MAX_FILE_BYTES} at most); {WHAT_IS_VALID}")
    with open(path, "rb") as f:
        head = f.read(MAX_HEADER_BYTES + 1).removeprefix(codecs.BOM_UTF8)  # as a spreadsheet saves "CSV UTF-8"
    if not head.strip():
        raise LeaderboardFormatError(f"{path}: empty file (no header, no rows); {WHAT_IS_VALID}")
    line, newline, _ = head.partition(b"\n")
    if not newline and len(head) > MAX_HEADER_BYTES:
        raise LeaderboardFormatError(f"{path}: first line longer than {MAX_HEADER_BYTES} bytes; "
                                     f"not a lengthbench leaderboard (its header is about 1 kB); {WHAT_IS_VALID}")
    try:
        header = [name.strip() for name in next(csv.reader([line.decode("utf-8").rstrip("\r")]))]
    except UnicodeDecodeError as err:
        raise LeaderboardFormatError(f"{path}: not a text CSV (byte {err.object[err.start]:#04x} at "
                                     f"offset {err.start} is not UTF-8); {WHAT_IS_VALID}") from None
    seen = set()
    for name in header:
        if name in seen:
            raise LeaderboardFormatError(f"{path}: column {name!r} appears twice in the header; "
                                         f"{WHAT_IS_VALID}")
        seen.add(name)
    if "schema_version" not in seen:
        raise LeaderboardFormatError(f"{path}: missing column 'schema_version', so not a lengthbench "
                                     f"leaderboard; {WHAT_IS_VALID}")
    return header


def _check_column(frame: pd.DataFrame, where: str, name: str, kind: str, valid) -> None:
    if kind == "text":
        return
    values = frame[name].str.strip()
    if kind == "json":
        for i, value in enumerate(values):
            if value and not isinstance(_json_object(value), dict):
                raise LeaderboardFormatError(f"{where}: row {i + 2}, column {name!r}: {value[:80]!r} is not a JSON "
                                             f"object; valid: {valid_text(kind, valid)}")
        return

    def refuse(i: int, why: str):
        raise LeaderboardFormatError(f"{where}: row {i + 2}, column {name!r}: {frame[name].iloc[i]!r} {why}; "
                                     f"valid: {valid_text(kind, valid)}")

    if kind == "str":
        bad = ~values.isin(valid) if valid else values == ""
        if bad.any():
            refuse(int(bad.to_numpy().nonzero()[0][0]), "is not valid")
        return
    empty = values == ""
    numbers = pd.to_numeric(values.where(~empty), errors="coerce")
    if kind in ("int", "count"):  # a count may be empty (unknown), an int may not
        bad = ~values.str.fullmatch(r"[+-]?\d+") & ~(empty if kind == "count" else False)
        if bad.any():
            refuse(int(bad.to_numpy().nonzero()[0][0]), "is not an integer")
    not_number = numbers.isna() & ~empty
    if not_number.any():
        refuse(int(not_number.to_numpy().nonzero()[0][0]), "is not a number")
    low, high = valid
    outside = ~empty & ~((numbers >= low) & (numbers <= high) & numbers.abs().lt(math.inf))
    if outside.any():
        refuse(int(outside.to_numpy().nonzero()[0][0]), "is out of range")
    frame[name] = numbers.astype({"int": "int64", "count": "Int64"}.get(kind, float))


def _json_object(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _check_rows(frame: pd.DataFrame, where: str) -> None:
    """Cross-column rules: an ok cell has seeds and means; others have none."""
    for i, row in enumerate(frame.itertuples(index=False)):
        ok = row.status == "ok"
        if ok and row.n_seeds < 1:
            raise LeaderboardFormatError(f"{where}: row {i + 2}, column 'n_seeds': {row.n_seeds} with status ok; "
                                         "valid: an ok cell has at least 1 seed")
        if not ok and row.n_seeds != 0:
            raise LeaderboardFormatError(f"{where}: row {i + 2}, column 'n_seeds': {row.n_seeds} with status "
                                         f"{row.status}; valid: 0 (only ok cells have finished seeds)")
        for metric in METRICS:
            if ok and math.isnan(getattr(row, f"ood_{metric}_mean")):
                raise LeaderboardFormatError(f"{where}: row {i + 2}, column 'ood_{metric}_mean': empty with "
                                             "status ok; valid: a number in [0, 1]")


def _check_names(frame: pd.DataFrame, where: str) -> None:
    """Task, model, encoding and method names follow the registration rule
    (so no formula, markup or path comes back from a CSV as a name)."""
    for i, row in enumerate(frame.itertuples(index=False)):
        parts = [("task", row.task), ("model", row.model)] + ([("encoding", row.encoding)] if row.encoding else [])
        for column, name in parts:
            problem = name_problem(name)
            if problem is not None:
                raise LeaderboardFormatError(f"{where}: row {i + 2}, column {column!r}: {problem}")
        if row.format != split_label(row.task)[1]:
            raise LeaderboardFormatError(f"{where}: row {i + 2}, column 'format': {row.format[:80]!r} is not "
                                         f"{split_label(row.task)[1]!r}, the format of its task label {row.task!r}")
        expected = method_name(row.model, row.encoding)
        if row.method != expected:
            raise LeaderboardFormatError(f"{where}: row {i + 2}, column 'method': {row.method[:80]!r} is not "
                                         f"{expected!r}, the method of its model and encoding")


def _from_version_2(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 2 had only transformer rows, keyed by encoding."""
    frame = frame.copy()
    at = list(frame.columns).index("encoding") if "encoding" in frame.columns else len(frame.columns)
    encoding = frame["encoding"] if "encoding" in frame.columns else ""
    frame.insert(at, "model", "transformer")
    frame.insert(at, "method", [transformer_method(e) for e in encoding])
    return _from_version_3(frame)


def _from_version_3(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 3 had no ``n_errors`` (its ``n_failed`` counted errors too) and
    scored only the seeds that finished."""
    frame = frame.copy()
    at = list(frame.columns).index("n_failed") + 1 if "n_failed" in frame.columns else len(frame.columns)
    frame.insert(at, "n_errors", "0")
    return _from_version_4(frame)


def _from_version_4(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 4 had no validation band and did not record fit, steps or selections."""
    frame = frame.assign(validation_length="0", fit_threshold="", n_fit="0", fit_status="unknown", steps_mean="",
                         val_exact_match_mean="", val_token_accuracy_mean="", selected="", selection_evidence="")
    return _from_version_5(frame)


def _from_version_5(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 5 did not record each cell's protocol."""
    return _from_version_6(frame.assign(protocol=""))


def _from_version_6(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 6 had no horizon columns (interquartile mean, area over log length, seeds reaching 2x and 4x)."""
    return _from_version_7(frame.assign(**{name: "" for name in HORIZON_COLUMNS if name not in frame.columns}))


def _from_version_7(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 7 had no format column: a cell's format is its task label's (plain for a task name)."""
    frame = frame.copy()
    if "format" not in frame.columns:
        at = list(frame.columns).index("task") + 1 if "task" in frame.columns else len(frame.columns)
        frame.insert(at, "format", [split_label(task)[1] for task in frame.get("task", [])])
    return _from_version_8(frame)


def _from_version_8(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 8 did not record the cells' parameter counts."""
    return _from_version_9(frame.assign(n_parameters="") if "n_parameters" not in frame.columns else frame)


def _from_version_9(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 9 gave the chance level of exact match only."""
    return _from_version_10(frame.assign(chance_token_accuracy="") if "chance_token_accuracy" not in frame.columns
                            else frame)


def _from_version_10(frame: pd.DataFrame) -> pd.DataFrame:
    """Version 10 read its chance levels off the test band's examples: kept as written."""
    frame = frame.copy()
    frame["schema_version"] = str(SCHEMA_VERSION)
    return frame


MIGRATIONS = {"2": _from_version_2, "3": _from_version_3, "4": _from_version_4, "5": _from_version_5,
              "6": _from_version_6, "7": _from_version_7, "8": _from_version_8, "9": _from_version_9,
              "10": _from_version_10}


def read_leaderboard(path: str | Path) -> pd.DataFrame:
    """Read and validate a leaderboard CSV; errors name file, row and column."""
    path = check_input_file(path, "leaderboard CSV")
    where = str(path)
    header = _read_header(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise LeaderboardFormatError(f"{where}: not a text CSV (a byte at offset {err.start} of a "
                                     f"line is not UTF-8); {WHAT_IS_VALID}") from None
    except pd.errors.ParserError as err:
        raise LeaderboardFormatError(f"{where}: not a CSV ({str(err).splitlines()[0]}); {WHAT_IS_VALID}") from None
    if frame.empty:
        raise LeaderboardFormatError(f"{where}: header only, no rows; {WHAT_IS_VALID}")
    frame.columns = [str(name).strip() for name in frame.columns]
    frame = frame.apply(lambda column: column.str.strip().map(unguard_formula))  # spaces a spreadsheet left
    versions = set(frame["schema_version"].str.strip())
    if len(versions) == 1 and (old := versions.pop()) in MIGRATIONS:
        frame = MIGRATIONS[old](frame)
        header = list(frame.columns)
    for i, version in enumerate(frame["schema_version"], start=2):
        if version.strip() != str(SCHEMA_VERSION):
            raise LeaderboardFormatError(
                f"{where}: row {i}, column 'schema_version': version {version!r}, this lengthbench reads "
                f"versions {', '.join([*MIGRATIONS, str(SCHEMA_VERSION)])} (rebuild it with "
                "`lengthbench leaderboard`)")
    missing = [c for c in COLUMN_NAMES if c not in header]
    if missing:
        raise LeaderboardFormatError(f"{where}: missing column(s) {', '.join(missing)}; {WHAT_IS_VALID}")
    for name, kind, valid, _ in COLUMNS:
        _check_column(frame, where, name, kind, valid)
    _check_rows(frame, where)
    _check_names(frame, where)
    duplicated = frame.duplicated(list(KEY), keep="first")
    if duplicated.any():
        i = int(duplicated.to_numpy().nonzero()[0][0])
        raise LeaderboardFormatError(
            f"{where}: row {i + 2}: duplicate key task={frame['task'].iloc[i]!r}, "
            f"method={frame['method'].iloc[i]!r}")
    return frame[list(COLUMN_NAMES)]
