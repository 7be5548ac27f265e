"""``negative``: Grazzi et al. 2025 (ICLR): does extending the delta rule's
eigenvalues to [-1, 1] (beta in (0, 2)) let it track state, parity and
modular counting among it? Each negative variant against its (0, 1) twin.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.presets import (
    PRESETS,
    STATE_TASKS,
    register_preset,
)
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import leaderboard_frame
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    by_task,
    cells_table,
    fit_shift_between,
    horizon_text,
    judged_seeds,
    seed_fits,
    setup_text,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.zoo import DELTA_FAMILIES, part_of_zoo
from lengthbench.tasks.formats import task_order_key

# The published claims, each with its source (the papers' numbers, never ours).
GRAZZI = "Grazzi et al. 2025 (ICLR), Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"
# The abstract and Figure 1's caption; the per-task table could not be sourced here.
NEGATIVE_CLAIM = ("extending the eigenvalue range of the state transition from [0, 1] to [-1, 1] lets DeltaNet and "
                  "Mamba solve parity (from random guessing to a perfect score) and \"consistently improves their "
                  "performance on state-tracking tasks\" such as modular counting")
PROTOCOL = ("Grazzi et al.: trained on lengths up to 40, tested on 40..256 (6.4x), 3 seeds (Figure 1's caption); "
            "their budget could not be sourced here")
SIEMS = ("Siems, Carstensen, Zela, Hutter, Pontil, Grazzi 2025 (arXiv 2502.10297), DeltaProduct: Improving "
         "State-Tracking in Linear RNNs via Householder Products")
PRODUCT_CLAIM = ("more Householder steps per token (n_h) let the delta rule track the word problems of S3, S4, A5 and "
                 "S5, and extrapolate in length better than DeltaNet (n_h = 1) as n_h grows")
PRODUCT_TASKS = ("word_problem_s3", "word_problem_s5")  # the claim's groups that the suite has


register_preset(part_of_zoo("horizon-negative", "Grazzi et al.'s claim: the delta rule with beta in (0, 1) and "
                            "(0, 2) on parity, modular counting and arithmetic, and the state-tracking tasks x 3 seeds",
                            ("parity_check", "cycle_navigation", "modular_arithmetic", *STATE_TASKS), (),
                            DELTA_FAMILIES))


# DeltaProduct (Siems et al. 2025) at protocol v2: 2 and 3 delta-rule steps per token, beta in (0, 1) and (0, 2),
# on parity, modular arithmetic and the word problems of S3 and S5, its claims' tasks; with the delta rule's cells
# of `horizon-zoo` on them (n_h = 1: the same settings, so the same runs, trained once). Widths match the
# transformer's parameters within 10% per task (`python -m lengthbench.benchmark.tools.matching --preset
# horizon-product`).
PRODUCT_FAMILIES = ("deltaproduct-2", "deltaproduct-2-negative", "deltaproduct-3", "deltaproduct-3-negative")
PRODUCT_SIZES = {"deltaproduct-2": 56, "deltaproduct-2-negative": 56, "deltaproduct-3": 48, "deltaproduct-3-negative": 48}
register_preset(replace(
    PRESETS["horizon-zoo"],
    name="horizon-product",
    description="DeltaProduct (2 and 3 steps per token, beta in (0, 1) and (0, 2)) at protocol v2 on parity, modular "
                "arithmetic and the word problems of S3 and S5 x 3 seeds, with the delta rule's horizon-zoo cells",
    tasks=("parity_check", "modular_arithmetic", "word_problem_s3", "word_problem_s5"),
    encodings=(),
    families=("deltanet", "deltanet-negative", *PRODUCT_FAMILIES),
    family_settings={**PRESETS["horizon-zoo"].family_settings,
                     **{f: {"model": {"d_model": size}} for f, size in PRODUCT_SIZES.items()}},
    cell_settings={"word_problem_s5": {f: {"model": {"d_model": 52}} for f in PRODUCT_FAMILIES[2:]}},  # 48: -11%, 56: +10%
    cuts=(),
))


NEGATIVE_TASKS = ("parity_check", "cycle_navigation", "modular_arithmetic")  # parity, modular counting, arithmetic


NEGATIVE_PAIRS = (("deltanet-negative", "deltanet"), ("gated-deltanet-negative", "gated-deltanet"),
                  *((f"{product}-negative", product) for product in PRODUCT_FAMILIES[::2]))
PRODUCT_PAIRS = tuple((f"{product}{sign}", f"deltanet{sign}") for sign in ("", "-negative")
                      for product in PRODUCT_FAMILIES[::2])  # n_h = 2, 3 against 1, the same eigenvalue range


@family_report
def negative_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """Grazzi et al.: the delta rule with beta in (0, 2) (negative
    eigenvalues) against beta in (0, 1), the same family otherwise, on the
    regular tasks of their claim (the task the unit), with the shift in
    seeds that fit (a variant that cannot learn a task does not fit it)."""
    families = {r.config.family for r in records}
    pairs = [(a, b) for a, b in NEGATIVE_PAIRS if a in families and b in families]
    products = [(a, b) for a, b in PRODUCT_PAIRS if a in families and b in families]
    if not pairs and not products:
        raise InputError("these records hold no pair of delta-rule runs with beta in (0, 1) and (0, 2) and none of "
                         "DeltaProduct and DeltaNet; run `lengthbench run --preset horizon-negative` (into the records "
                         "of `horizon`)")
    methods = list(dict.fromkeys(m for pair in (*pairs, *products) for m in pair))
    records = [r for r in records if r.method in methods]
    board = leaderboard_frame(records)
    tasks = sorted({r.task for r in records}, key=task_order_key)
    claim_tasks = [t for t in NEGATIVE_TASKS if t in tasks]
    # the comparison reads the claim's tasks only; the others (the state-tracking tasks) are in the table
    seeds = {cell: v for cell, v in judged_seeds(records).items() if cell[0] in claim_tasks}
    fits = seed_fits(records)
    lines = ["# Negative eigenvalues in the delta rule (Grazzi et al. 2025)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             "Score: test-band exact match, mean ± std over seeds; generalization length as in the leaderboard. "
             f"{FIT_RULE} Source: {GRAZZI}. Published: {NEGATIVE_CLAIM}.", "",
             "## Per task", "", *cells_table(board, tasks, methods), ""]
    rows = []
    for negative, positive in pairs:
        shift = fit_shift_between(board, fits, claim_tasks, positive, negative, family)
        rows.append([f"`{negative}` against `{positive}`", shift,
                     *family.row(by_task(seeds, negative), by_task(seeds, positive), ("(0, 2)", "(0, 1)"))])
    lines += ["## Beta in (0, 2) against (0, 1)", "",
              f"On the tasks of the claim ({', '.join(claim_tasks) or 'none here'}): the seeds that fit their training "
              "lengths with beta in (0, 1) and in (0, 2), with the stratified permutation p of that shift (the task "
              "the stratum), raw → Holm over the report's fit shifts; then, where both fit, (0, 2) minus (0, 1) in "
              "test exact match (points), and the probability that a (0, 2) seed beats a (0, 1) seed. "
              f"{FAMILY_RULE}", "",
              *markdown_table(["variants", "seeds fit: (0, 1) → (0, 2); p → Holm",
                               *comparison_headers("(0, 2)", "(0, 1)")], rows), ""]
    if products:
        lines += product_section(records, board, fits, products, [t for t in PRODUCT_TASKS if t in tasks], family)
    return "\n".join(lines) + "\n"


def product_section(records: list[RunRecord], board, fits: dict, pairs, tasks, family: ComparisonFamily) -> list[str]:
    """Siems et al.: DeltaProduct (n_h delta-rule steps per token) against DeltaNet (one) with the same eigenvalue
    range, on the word problems of their claim: the shift in seeds that fit, then the test band where both fit."""
    seeds = {cell: v for cell, v in judged_seeds(records).items() if cell[0] in tasks}
    rows = [[f"`{product}` against `{delta}`", fit_shift_between(board, fits, tasks, delta, product, family),
             *family.row(by_task(seeds, product), by_task(seeds, delta), ("DeltaProduct", "DeltaNet"))]
            for product, delta in pairs]
    return ["## More Householder steps per token (DeltaProduct, Siems et al. 2025)", "",
            f"Source: {SIEMS}. Published: {PRODUCT_CLAIM}. On the word problems here ({', '.join(tasks) or 'none'}): "
            "the seeds that fit with one step per token and with n_h, with the stratified permutation p of that "
            "shift, raw → Holm over the report's fit shifts; then, where both fit, DeltaProduct minus DeltaNet in "
            f"test exact match (points). {FAMILY_RULE}", "",
            *markdown_table(["variants", "seeds fit: DeltaNet → DeltaProduct; p → Holm",
                             *comparison_headers("DeltaProduct", "DeltaNet")], rows), ""]


register_study(Study(
    name="negative",
    rank=90,
    about="do negative eigenvalues let the delta rule track state (Grazzi et al. 2025)",
    presets=("horizon-negative", "horizon-product"),
    records="leaderboard/reference/horizon/records",
    sources=(GRAZZI, SIEMS),
    protocol=PROTOCOL,
    report=negative_report,
))
