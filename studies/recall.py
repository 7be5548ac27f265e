"""``recall``: multi-query associative recall (``mqar``) under ``horizon``'s protocol.

Zoology (Arora, Eyuboglu et al. 2024) finds that attention solves MQAR at
d_model 64 while recurrent models with a fixed-size state degrade as the
number of pairs outgrows the state. Its protocol keeps the best run of a
learning-rate sweep, checks no fit and fixes no budget; here every method
trains on 1..16 pairs with horizon's one budget (4000 steps of 64, 3 seeds,
families matched in parameters on the task) and is tested at 21..64 pairs
(4x, as Zoology's test extrapolates 4x in pairs and tokens).
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.zoo import DELTA_FAMILIES

# A representative set: positions absent, rotary, a distance bias and its randomized variant, and two
# data-dependent mechanisms (the forget gate, stick-breaking); beside them the recurrent families Zoology's
# claim is about: the LSTM, the state-space model and the delta rule (gated and not).
RECALL_ENCODINGS = ("nope", "rope", "alibi", "randomized-rope", "forget", "stick-breaking")
RECALL_FAMILIES = ("transformer", "lstm", "ssm", DELTA_FAMILIES[0], DELTA_FAMILIES[2])
# Widths matching the transformer's parameters on mqar within 10% (`python -m
# lengthbench.benchmark.tools.matching --preset horizon-recall`); its 132-token vocabulary weighs in every
# family's input and output layers.
RECALL_SIZES = {"lstm": 104, "ssm": 88, "deltanet": 64, "gated-deltanet": 56}

register_preset(replace(
    PRESETS["horizon-zoo"],
    name="horizon-recall",
    description="multi-query associative recall (mqar) at protocol v2: 6 transformer encodings and mechanisms, the "
                "LSTM, the state-space model and the delta rule x 3 seeds, trained on 1..16 pairs, tested at 21..64",
    tasks=("mqar",),
    encodings=RECALL_ENCODINGS,
    families=RECALL_FAMILIES,
    family_settings={f: {"model": {"d_model": size}} for f, size in RECALL_SIZES.items()},
    cell_settings={},
    cuts=(),
))

register_study(Study(
    name="recall",
    rank=130,
    about="multi-query associative recall (Zoology) at protocol v2: does attention recall past its training "
          "pairs where a fixed-size state cannot?",
    presets=("horizon-recall",),
    records="leaderboard/reference/horizon/records",
    sources=("Arora, Eyuboglu et al. 2024, Zoology: Measuring and Improving Recall in Efficient Language Models "
             "(ICLR 2024), arXiv:2312.04927",),
    protocol="Zoology: MQAR, vocabulary 8,192, train and test sets of fixed (tokens, pairs) settings, test to 4x "
             "pairs and tokens, the best run of a learning-rate sweep per model, no fit check, no fixed budget",
))
