"""The versioned ``leaderboard.csv`` schema: column names, types and meaning.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes
meaning; readers refuse files of another version.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

# (name, kind, description); kind is "str", "int" or "float" (floats may be empty)
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
    ("ood_exact_match_mean", "float", "mean over seeds of OOD exact match (lengths > L_train)"),
    ("ood_exact_match_std", "float", "sample std over seeds (empty for one seed)"),
    ("ood_token_accuracy_mean", "float", "mean over seeds of OOD per-token accuracy"),
    ("ood_token_accuracy_std", "float", "sample std over seeds (empty for one seed)"),
    ("id_exact_match_mean", "float", "mean over seeds of in-distribution exact match (lengths <= L_train)"),
    ("id_token_accuracy_mean", "float", "mean over seeds of in-distribution per-token accuracy"),
)

COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
