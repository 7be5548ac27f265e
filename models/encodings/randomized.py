"""``randomized-<base>``: randomized positional encodings (Ruoss et al. 2023).

A wrapper, not a copy: it overrides only ``positions``. For each example of
real length n it draws n distinct positions uniformly from ``[0, max_len)``,
sorts them and hands them to the base encoding, at training *and* test time
(as in the original method). Sampling is per example (the reference code
draws once per batch, a known defect). ``max_len`` defaults to 2048, the
original example value; it must exceed the longest test sequence.

Where ours differs for relative bases (ALiBi, T5, KERPLE, FIRE): the bias
reads the differences of the sampled positions, so a distance varies along
a diagonal; Ruoss et al.'s code samples sorted distances instead (one per
diagonal, constant along it) and only for bidirectional attention (noisy
ALiBi and Transformer-XL). We keep one sampler, the positions their paper
describes, whose distances add up as a causal decoder's do.
"""

import torch

from lengthbench.models.encodings import absolute, alibi, fire, kerple, rope, t5  # noqa: F401  (the bases, registered first)
from lengthbench.models.encodings.base import PositionsOutOfRange, encoding_entry, register_encoding

RANDOMIZED_BASES = ("learned", "sinusoidal", "rope", "alibi", "t5", "kerple-log", "kerple-power", "fire")


def random_sorted_positions(seq_lens: torch.Tensor, seq_len: int, max_len: int,
                            generator: torch.Generator | None) -> torch.Tensor:
    """Per row b, ``seq_lens[b]`` sorted distinct positions in ``[0, max_len)``
    in the first slots; padding slots get ``max_len - 1``."""
    if seq_len > max_len:
        raise PositionsOutOfRange(f"randomized max_len {max_len} < sequence length {seq_len}")
    batch = seq_lens.shape[0]
    keys = torch.rand(batch, max_len, generator=generator, device=seq_lens.device)
    picks = keys.topk(seq_len, dim=1).indices  # a uniform random subset, in random order
    slot = torch.arange(seq_len, device=seq_lens.device)
    valid = slot < seq_lens[:, None]
    picks = torch.where(valid, picks, max_len + slot).sort(dim=1).values
    return picks.clamp(max=max_len - 1)


class RandomizedPositions:
    """Mixin placed before a base encoding class in the MRO."""

    def positions(self, pos, ctx):
        seq_lens = ctx.seq_lens
        if seq_lens is None:
            seq_lens = torch.full((ctx.batch_size,), ctx.seq_len, device=pos.device)
        return random_sorted_positions(seq_lens, ctx.seq_len, self.params["max_len"], ctx.generator)

    def reachable_parameters(self, longest):
        """Every parameter: training draws positions from the whole range, whatever the length."""
        return sum(p.numel() for p in self.parameters())


def _register_randomized(base_name: str, rank: float) -> None:
    base = encoding_entry(base_name)
    cls = type(f"Randomized_{base.factory.__name__}", (RandomizedPositions, base.factory), {})
    defaults = {**base.defaults, "max_len": 2048}
    if "max_positions" in defaults:  # a learned table must cover every sampled position
        defaults.pop("max_positions")

    def factory(d_model, n_heads, max_len, **params):
        if "max_positions" in base.defaults:
            params["max_positions"] = max_len
        enc = cls(d_model, n_heads, **params)
        enc.params["max_len"] = max_len
        return enc

    factory.__name__ = cls.__name__
    register_encoding(
        f"randomized-{base_name}", defaults=defaults,
        description=f"{base_name} on sorted random positions from [0, max_len) (Ruoss et al.)", base=base_name,
        version=base.version, rank=rank,  # its results change whenever its base's do
    )(factory)


# their rows after the static encodings', in RANDOMIZED_BASES' order
for _place, _base in enumerate(RANDOMIZED_BASES):
    _register_randomized(_base, rank=120 + 10 * _place)
