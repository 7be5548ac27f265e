"""The model families (transformer, recurrent baselines) and the
position-encoding registry."""

from lengthbench.models import stacked  # noqa: F401,I001  (registers the transformer family first)
from lengthbench.models import recurrent  # noqa: F401,I001  (then the recurrent baselines)
from lengthbench.models.encodings import build_encoding, encoding_entry, encoding_names
from lengthbench.models.families import family_entry, family_names, method_name
from lengthbench.models.transformer import ModelSize, Transformer

__all__ = ["ModelSize", "Transformer", "build_encoding", "encoding_entry", "encoding_names", "family_entry",
           "family_names", "method_name"]
