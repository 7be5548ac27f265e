"""Position-encoding registry; importing this package registers the built-ins
(each gives its row's place, ``rank=``, where it registers)."""

from lengthbench.models.encodings import (  # noqa: F401
    abacus,
    absolute,
    alibi,
    cope,
    coupled,
    fire,
    forget,
    kerple,
    nope,
    path,
    randomized,
    rnope,
    rope,
    ssmax,
    stick_breaking,
    t5,
    xpos,
)
from lengthbench.models.encodings.base import (
    ENCODINGS,
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
    "ENCODINGS", "PositionContext", "PositionEncoding", "PositionsOutOfRange", "build_encoding",
    "encoding_entry", "encoding_kind", "encoding_names", "register_encoding", "resolve_params",
]
