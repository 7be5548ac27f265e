"""Position-encoding registry; importing this package registers the built-ins
(in leaderboard row order)."""

# isort: off
from lengthbench.models.encodings import nope, absolute, rope, alibi, t5, kerple, fire, xpos, cope  # noqa: F401
from lengthbench.models.encodings import randomized, coupled, abacus  # noqa: F401  (randomized wraps the bases)
# isort: on
from lengthbench.models.encodings.base import (
    PositionContext,
    PositionEncoding,
    PositionsOutOfRange,
    build_encoding,
    encoding_entry,
    encoding_kind,
    encoding_names,
    register_encoding,
    resolve_params,
)

__all__ = [
    "PositionContext", "PositionEncoding", "PositionsOutOfRange", "build_encoding",
    "encoding_entry", "encoding_kind", "encoding_names", "register_encoding", "resolve_params",
]
