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

import pandas as pd

from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.benchmark.records import RunRecord, length_frame
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import judged, leaderboard_frame, method_order
from lengthbench.leaderboard.inference import ComparisonFamily, comparison_headers, family_report, family_rule
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    chance_of,
    chosen_on_validation,
    chosen_scores,
    horizon_text,
    paired_seeds,
    pct,
    setup_text,
    test_scores,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.zoo import DELTA_FAMILIES
from lengthbench.tasks.cells import TRANSFORMER, method_parts

ZOOLOGY = ("Arora, Eyuboglu et al. 2024, Zoology: Measuring and Improving Recall in Efficient Language Models "
           "(ICLR 2024), arXiv:2312.04927")
# Zoology, abstract and section 3: attention solves MQAR at every model width it tries, while gated convolutions
# and recurrent models with a fixed-size state need a width that grows with the number of key-value pairs.
RECALL_CLAIM = ("attention solves multi-query associative recall at d_model 64, while models with a fixed-size "
                "recurrent state degrade as the number of key-value pairs outgrows the state")
PROTOCOL = ("Zoology: MQAR, vocabulary 8,192, training sets of fixed (tokens, pairs) settings up to 256 tokens "
            "and 64 pairs, test to 4x pairs and tokens, the best run of a learning-rate sweep per model, no fit "
            "check, no fixed budget")

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

@family_report
def recall_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    records = [r for r in records if r.task == "mqar"]
    if not records:
        raise InputError("no record of mqar; run `lengthbench run --preset horizon-recall`")
    board = leaderboard_frame(records)
    cells = board.set_index("method")
    methods = method_order(board.method.unique())
    curves = length_frame(records)
    test = curves[curves.split == "ood"]
    lengths = sorted(test.length.unique())
    by_length = test.groupby(["method", "length"]).exact_match.mean()
    lines = ["# Recall: multi-query associative recall (Zoology)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             f"Score: exact match of the last query's value, mean over seeds, at each tested number of pairs and over "
             f"the test band (± std over seeds). {FIT_RULE} Published: {RECALL_CLAIM}. Source: {ZOOLOGY}.", ""]
    rows = []
    for method in methods:
        c = cells.loc[method]
        fit = judged(cells.loc[[method]]).iloc[0]
        band = pct(c.ood_exact_match_mean) + ("" if pd.isna(c.ood_exact_match_std) else
                                              f" ± {pct(c.ood_exact_match_std)}")
        rows.append([f"`{method}`", f"{int(c.n_seeds)}", "yes" if fit else "no",
                     *(pct(by_length.get((method, n))) for n in lengths), band])
    trained = pd.Series([r.config.train_length for r in records]).mode()[0]
    lines += ["## By number of pairs", "",
              f"Each method's test exact match at each number of key-value pairs it was tested at (trained on "
              f"1..{trained}), the test band's mean, and whether it fit its training pairs. Chance: "
              f"{chance_of(board, 'mqar')}% (one value in 64).", "",
              *markdown_table(["method", "seeds", "fit", *(f"{n} pairs" for n in lengths), "test band"], rows), ""]
    scores = test_scores(records)
    chosen = chosen_on_validation(board)
    rows = []
    if chosen:
        attention = chosen_scores(scores, chosen)
        for method in (m for m in methods if method_parts(m)[0] != TRANSFORMER and m in scores):
            a, b = paired_seeds(attention, scores[method])
            rows.append([f"`{method}`", *family.row(a, b, ("attention", method), tasks=1,
                                                    better=("attention better", f"{method} better"))])
    lines += ["## Attention against each fixed-size state", "",
              f"The transformer's encoding is chosen on the validation band (`{chosen.get('mqar', 'none fit')}`), "
              "never on the test band; each recurrent family that fit is compared with it on the test band, seeds "
              "the replicates. One task cannot carry a verdict under this benchmark's rule (three tasks at the "
              "least), so each comparison is described, not decided. " + family_rule(), "",
              *(markdown_table(["method", *comparison_headers("attention", "method")], rows) if rows else
                ["No transformer encoding fit mqar, or no recurrent family did: no comparison."]), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="recall",
    rank=130,
    about="multi-query associative recall (Zoology) at protocol v2: does attention recall past its training "
          "pairs where a fixed-size state cannot?",
    presets=("horizon-recall",),
    records="leaderboard/reference/horizon/records",
    sources=(ZOOLOGY,),
    protocol=PROTOCOL,
    report=recall_report,
))
