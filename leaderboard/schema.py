"""The versioned ``leaderboard.csv`` schema: column names, types, meaning,
and the validating reader.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes
meaning; the reader refuses files of another version.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from leaderboard.statistics import GENERALIZE_THRESHOLD

SCHEMA_VERSION = 2
METRICS = ("exact_match", "token_accuracy")
KEY = ("task", "encoding")

_T = f"{GENERALIZE_THRESHOLD:g}"


def _metric_columns(m: str) -> list[tuple[str, str, str]]:
    what = m.replace("_", " ")
    return [
        (f"ood_{m}_mean", "float", f"mean over seeds of OOD {what} (each seed: mean over lengths > L_train)"),
        (f"ood_{m}_std", "float", "sample standard deviation over seeds (empty with one seed)"),
        (f"ood_{m}_ci_low", "float", "95% percentile-bootstrap CI of the mean over seeds, low end"),
        (f"ood_{m}_ci_high", "float", "95% percentile-bootstrap CI, high end"),
        (f"ood_{m}_max", "float", "MAX over seeds (the Deletang/Ruoss reporting convention; optimistic)"),
        (f"id_{m}_mean", "float", f"mean over seeds of in-distribution {what} (lengths <= L_train)"),
        (f"frac_seeds_generalize_{m}", "float", f"share of seeds whose OOD {what} is >= {_T}"),
        (f"generalization_length_{m}", "int",
         f"largest tested length up to which the seed-mean {what} stays >= {_T} at every tested length"),
        (f"extrapolation_ratio_{m}", "float", f"generalization_length_{m} / train_length"),
    ]


COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("schema_version", "int", "version of this column layout"),
    ("task", "str", "task name"),
    ("level", "str", "Chomsky level (R, DCF, CS) or family (arithmetic, sequence)"),
    ("encoding", "str", "position encoding name"),
    ("status", "str", "ok | not_applicable (encoding needs structure the task lacks) | failed (no seed finished)"),
    ("n_seeds", "int", "seeds that finished training and evaluation"),
    ("n_failed", "int", "seeds that diverged or raised"),
    ("train_length", "int", "largest training length L_train"),
    ("test_length", "int", "largest evaluated length L_test"),
    *_metric_columns("exact_match"),
    *_metric_columns("token_accuracy"),
    ("rank", "float", "rank of the encoding within its task by ood_exact_match_mean (1 = best, ties share the lower rank)"),
)

COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
_KINDS = dict((c[0], c[1]) for c in COLUMNS)


class LeaderboardFormatError(ValueError):
    """A leaderboard CSV that does not follow the schema."""


def read_leaderboard(path: str | Path) -> pd.DataFrame:
    """Read and validate a leaderboard CSV; errors name file, row and column."""
    path = Path(path)
    where = str(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise LeaderboardFormatError(f"{where}: no such file") from None
    except pd.errors.EmptyDataError:
        raise LeaderboardFormatError(f"{where}: empty file (no header, no rows)") from None
    except pd.errors.ParserError as err:
        raise LeaderboardFormatError(f"{where}: not a CSV ({str(err).splitlines()[0]})") from None
    if "schema_version" not in frame.columns:
        raise LeaderboardFormatError(f"{where}: missing column 'schema_version'; not a lengthbench leaderboard")
    if frame.empty:
        raise LeaderboardFormatError(f"{where}: header only, no rows")
    for i, version in enumerate(frame["schema_version"], start=2):
        if version != str(SCHEMA_VERSION):
            raise LeaderboardFormatError(
                f"{where}: row {i}, column 'schema_version': version {version!r}, this lengthbench reads "
                f"version {SCHEMA_VERSION} (rebuild it with `lengthbench leaderboard`)")
    missing = [c for c in COLUMN_NAMES if c not in frame.columns]
    if missing:
        raise LeaderboardFormatError(f"{where}: missing column(s) {', '.join(missing)}")
    for column in COLUMN_NAMES:
        kind = _KINDS[column]
        if kind == "str":
            continue
        values = frame[column].str.strip()
        numbers = pd.to_numeric(values.where(values != ""), errors="coerce")
        bad = numbers.isna() & (values != "")
        if kind == "int":
            bad |= values == ""
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise LeaderboardFormatError(
                f"{where}: row {i + 2}, column {column!r}: {frame[column].iloc[i]!r} is not a number")
        frame[column] = numbers.astype("int64") if kind == "int" else numbers.astype(float)
    duplicated = frame.duplicated(list(KEY), keep="first")
    if duplicated.any():
        i = int(duplicated.to_numpy().nonzero()[0][0])
        raise LeaderboardFormatError(
            f"{where}: row {i + 2}: duplicate key task={frame['task'].iloc[i]!r}, "
            f"encoding={frame['encoding'].iloc[i]!r}")
    return frame[list(COLUMN_NAMES)]
