"""``abacus``: Abacus embeddings (McLeish et al. 2024).

Each digit gets its 1-based index inside its number, counted from the least
significant digit (McLeish et al. reverse their numbers, so their index
from the left is exactly this); a learned table of ``max_positions`` rows
is added to the token embeddings. During training a random offset
``k in [0, max_offset)`` (the paper: 100), one per batch as in the paper,
is added to every digit's index, so rows beyond the training lengths are
trained too; at test the offset is 0. Non-digit tokens (BOS, operators,
SEP) get index 0 and no offset.

The indices are the task's coupled position ids, which for the numeric
tasks (``Task.coupled_ids_are_significance``: addition, multiplication and
their binary versions) are exactly significance + 1 with 0 for non-digits
(the end token continues the answer's count). Other tasks make the cell
"n/a". Difference from ``coupled``: the offset (per batch, fixed range,
never on non-digits) and the name; on these tasks the two differ in little
else, which the leaderboard shows.
"""

import torch

from lengthbench.models.encodings.base import register_encoding
from lengthbench.models.encodings.coupled import Coupled


@register_encoding("abacus", rank=210, defaults={"max_positions": 256, "max_offset": 100},
                   description="digit index within its number + random training offset, learned table (McLeish et al.)")
class Abacus(Coupled):
    """``coupled``'s learned table and ``embed``, with abacus ids and offsets."""

    table_name = "the abacus position table"

    def __init__(self, d_model, n_heads, max_positions, max_offset):
        super().__init__(d_model, n_heads, max_positions)
        self.params["max_offset"] = max_offset

    def not_applicable(self, task) -> str | None:
        if not getattr(task, "coupled_ids_are_significance", False):
            return f"needs digit significance ids; {task.name} has none (abacus is for numeric tasks)"
        return None

    def positions(self, pos, ctx):
        if not ctx.train:
            return pos
        offset = torch.randint(0, self.params["max_offset"], (1,), generator=ctx.generator, device=pos.device)
        return torch.where(pos > 0, pos + offset, pos)
