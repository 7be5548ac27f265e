"""``coupled``: position coupling (Cho et al. 2024).

Consumes the task's structured position ids (digits of equal significance,
or an input symbol and the output symbol copied from it, share an id) and
looks them up in a learned absolute table of ``max_positions`` rows. During
training each example's ids get a random offset drawn uniformly so that its
largest id stays below ``max_positions`` (so every row is trained); at test
the offset is 0. Tasks without structured ids make this cell "n/a".
"""

import torch
from torch import nn

from lengthbench.models.encodings.base import EMBEDDING_STD, PositionEncoding, check_table_range, register_encoding


@register_encoding("coupled", rank=200, defaults={"max_positions": 128},
                   description="task-coupled position ids + random training offset, learned table")
class Coupled(PositionEncoding):
    uses_task_positions = True
    table_name = "the coupled position table"

    def __init__(self, d_model, n_heads, max_positions):
        super().__init__(d_model, n_heads, max_positions=max_positions)
        self.table = nn.Embedding(max_positions, d_model)
        nn.init.normal_(self.table.weight, std=EMBEDDING_STD)

    def positions(self, pos, ctx):
        if not ctx.train:
            return pos
        room = (self.table.num_embeddings - pos.amax(dim=1)).clamp(min=1)  # offsets 0..room-1
        u = torch.rand(pos.shape[0], generator=ctx.generator, device=pos.device)
        return pos + (u * room).long()[:, None]

    def embed(self, h, pos):
        check_table_range(pos, self.table.num_embeddings, self.table_name)
        return h + self.table(pos)
