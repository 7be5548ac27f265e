"""The model families (transformer, recurrent, state-space and delta-rule baselines) and the
position-encoding registry."""

from lengthbench.models import (  # noqa: F401  (they register their families)
    delta_rule, huggingface, looped, recurrent, state_space, transformer,
)
from lengthbench.models.encodings import build_encoding, encoding_entry, encoding_names
from lengthbench.models.families import FAMILIES, ModelSize, RunModel, build_model, family_entry, family_names
from lengthbench.models.transformer import Transformer

__all__ = ["FAMILIES", "ModelSize", "RunModel", "Transformer", "build_encoding", "build_model", "encoding_entry",
           "encoding_names", "family_entry", "family_names"]
