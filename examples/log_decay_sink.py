"""An example third-party position encoding: ``log-decay-sink``.

The idea (a small, new combination, for the tutorial): every head gets
(1) a learned logarithmic recency bias, ``-a_h * log(1 + d)``, which decays
much more slowly than ALiBi's linear penalty so that far tokens stay
reachable at long lengths, and (2) a learned "sink" bonus ``s_h`` on the
first token of the sequence (BOS), which gives a head a length-independent
place to park attention when nothing else is relevant.

How to use it:

    lengthbench check examples/log_decay_sink.py
    lengthbench submit examples/log_decay_sink.py --preset quick --tasks parity_check,reverse_string
    lengthbench submit examples/log_decay_sink.py --preset quick

The first submit is the cheap path that ranks: two tasks on which every
built-in encoding of ``quick`` fits its training lengths, so the new
encoding gets a rank wherever it fits too; with ``results/quick/`` from the
README's first command it trains only the new encoding's two runs. (``smoke``
ranks nothing: at its 30 steps no cell fits.) The second ranks it on all of
``quick``'s tasks.

The contract (see ``models/encodings/base.py``): subclass
``PositionEncoding``, override any of its hooks, register a factory
under a new name. The constructor receives ``d_model``, ``n_heads`` and the
``defaults`` you register (users can override them per preset).
"""

import torch
from torch import nn

from lengthbench.models.encodings import PositionEncoding, register_encoding


@register_encoding(
    "log-decay-sink",
    defaults={"decay_init": 0.5, "sink_init": 0.0},
    description="learned log-distance decay + first-token sink bias (example plugin)",
)
class LogDecaySink(PositionEncoding):
    # Not shift-invariant: the sink term looks at absolute key position 0.
    shift_invariant = False

    def __init__(self, d_model, n_heads, decay_init, sink_init):
        super().__init__(d_model, n_heads, decay_init=decay_init, sink_init=sink_init)
        # one decay rate and one sink bonus per head, both learned
        self.decay = nn.Parameter(torch.full((n_heads,), float(decay_init)))
        self.sink = nn.Parameter(torch.full((n_heads,), float(sink_init)))

    def bias(self, q_pos, k_pos):
        # q_pos, k_pos: (B or 1, T) positions. Return (B or 1, H, Tq, Tk) logit biases.
        # Only entries with key <= query matter: the model adds the causal mask itself.
        distance = (q_pos[:, :, None] - k_pos[:, None, :]).clamp(min=0).float()
        decay = -self.decay.abs()[None, :, None, None] * torch.log1p(distance)[:, None]
        is_first = (k_pos == k_pos[:, :1]).float()[:, None, None, :]  # the sequence's first key
        return decay + self.sink[None, :, None, None] * is_first
