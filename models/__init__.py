"""The transformer and the position-encoding registry."""

from models.encodings import build_encoding, encoding_entry, encoding_names
from models.transformer import ModelSize, Transformer

__all__ = ["ModelSize", "Transformer", "build_encoding", "encoding_entry", "encoding_names"]
