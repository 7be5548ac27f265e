"""``recognition``: FLaRe's question under ``horizon``'s protocol.

Butoi et al. (ICLR 2025, "Training Neural Networks as Recognizers of Formal
Languages") train an RNN, an LSTM and a causally-masked transformer as
recognizers (accept or reject a string, negatives made by editing members)
and find that the RNN and LSTM often outperform the transformer, and that
little beyond the regular languages and majority is recognized at their
64k-parameter budget. Here the recognition tasks (``tasks/recognition.py``)
train on lengths 1..16 with horizon's one budget and 3 seeds, families
matched in parameters per task, and are tested at 21..64.
"""

from __future__ import annotations

from dataclasses import replace

from lengthbench.benchmark.presets import PRESETS, register_preset
from lengthbench.benchmark.records import RunRecord
from lengthbench.core.errors import InputError
from lengthbench.leaderboard.aggregate import leaderboard_frame, method_order
from lengthbench.leaderboard.inference import FAMILY_RULE, ComparisonFamily, comparison_headers, family_report
from lengthbench.leaderboard.tables import FIT_RULE, markdown_table
from lengthbench.leaderboard.verdicts import (
    cells_table,
    chosen_on_validation,
    chosen_scores,
    horizon_text,
    judged_runs,
    paired_seeds,
    pct,
    setup_text,
    test_scores,
)
from lengthbench.studies.base import Study, register_study
from lengthbench.tasks import TASKS
from lengthbench.tasks.cells import TRANSFORMER, method_parts
from lengthbench.tasks.formats import task_order_key
from lengthbench.tasks.recognition import FAR, MEMBER, UNMEASURED

FLARE = ("Butoi, Khalighinejad, Svete, Valvoda, Cotterell, DuSell 2025 (ICLR), Training Neural Networks as "
         "Recognizers of Formal Languages")
# The abstract: "We find that the RNN and LSTM often outperform the transformer".
RECOGNITION_CLAIM = "the RNN and LSTM often outperform the transformer as recognizers of formal languages"
PROTOCOL = ("FLaRe: trained on strings of length 0..40, tested on 0..500, about 64k parameters per model, the best "
            "of 10 runs by validation cross-entropy, negatives made by editing members")
# FLaRe's hierarchy from each side: regular (parity, even pairs, cycle navigation, bounded Dyck), a counter
# (majority) and deterministic context-free (marked reversal, stack manipulation); first and repeat-01 (one
# state to check, one member per length) are cut to keep the reference within its hours.
RECOGNITION_TASKS = ("recognize_parity", "recognize_even_pairs", "recognize_cycle_navigation", "recognize_majority",
                     "recognize_dyck_2_3", "recognize_marked_reversal", "recognize_stack_manipulation")
SLICE_LABELS = (MEMBER, "distance 1", "distance 2", FAR, UNMEASURED)
RECOGNITION_ENCODINGS = ("nope", "rope", "alibi")
RECOGNITION_FAMILIES = ("transformer", "rnn", "lstm", "deltanet", "deltanet-negative")

register_preset(replace(
    PRESETS["horizon-zoo"],
    name="horizon-recognition",
    description="language recognition (FLaRe's framing) at protocol v2: 7 languages x the transformer with nope, "
                "rope, alibi, FLaRe's RNN and LSTM and the delta rule x 3 seeds, trained on 1..16, tested at 21..64",
    tasks=RECOGNITION_TASKS,
    encodings=RECOGNITION_ENCODINGS,
    families=RECOGNITION_FAMILIES,
    cell_settings={},
    cuts=(),
))


def distance_table(records: list[RunRecord], methods) -> list[str]:
    """Per method, test-band exact match by a string's distance to its language (``Task.example_slices``),
    pooled over the examples of every seed and test length of the languages it fit, with their count."""
    keep = judged_runs(records)
    pooled: dict[str, dict[str, list[int]]] = {}
    for record in records:
        if record.status != "ok" or (record.task, record.method) not in keep:
            continue
        for row in record.length_rows():
            for label, part in (row.get("slices") or {}).items() if row["split"] == "ood" else ():
                right, n = pooled.setdefault(record.method, {}).setdefault(label, [0, 0])
                pooled[record.method][label] = [right + round(part["exact_match"] * part["n"]), n + part["n"]]
    labels = [label for label in SLICE_LABELS if any(label in counts for counts in pooled.values())]
    rows = [[f"`{method}`", *(f"{pct(right / n)} ({n})" if n else "" for right, n in
                              (pooled[method].get(label, (0, 0)) for label in labels))]
            for method in methods if method in pooled]
    if not rows:
        return ["No method fit a language: no accuracy by distance."]
    return markdown_table(["method", *labels], rows)


@family_report
def recognition_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    records = [r for r in records if r.config.cell.task in TASKS and TASKS[r.config.cell.task].level == "recognition"]
    if not records:
        raise InputError("no record of a recognition task; run `lengthbench run --preset horizon-recognition`")
    board = leaderboard_frame(records)
    tasks = sorted(set(board.task), key=task_order_key)
    methods = method_order(board.method.unique())
    scores = test_scores(records)
    chosen = chosen_on_validation(board)
    attention = chosen_scores(scores, chosen)
    lines = ["# Recognition: FLaRe's languages (Butoi et al. 2025)", "", setup_text(records), "",
             horizon_text(records, PROTOCOL), "",
             "Score: accuracy of the accept/reject answer over the test band (chance 50%: labels are a fair coin), "
             f"mean ± std over seeds; generalization length as in the leaderboard. {FIT_RULE} Source: {FLARE}. "
             f"Published: {RECOGNITION_CLAIM}.", "", "## Per language", "", *cells_table(board, tasks, methods), ""]
    rows = []
    for method in (m for m in methods if method_parts(m)[0] != TRANSFORMER and m in scores):
        a, b = paired_seeds(scores[method], attention)
        rows.append([f"`{method}`", *family.row(a, b, (method, "transformer"),
                                                better=(f"{method} better", "transformer better"))])
    lines += ["## By distance to the language", "",
              "Test exact match (%) by how far a string is from its language: the fewest symbols to replace to make "
              "it a member of its length (FLaRe plots its models against the edit distance; ours edit by "
              "replacement only), pooled over every seed, test length and language the method fit, with the "
              "number of strings. A model that rejects only strings far from the language scores high at "
              "`distance 3+` and low at `distance 1`.", "", *distance_table(records, methods), ""]
    lines += ["## Each recurrence against the transformer", "",
              "The transformer's encoding is chosen per language on the validation band, never on the test band; each "
              "family minus it in test accuracy (points) over the languages where both fit, and the probability that "
              f"a seed of the family beats a seed of the transformer. {FAMILY_RULE}", "",
              *(markdown_table(["family", *comparison_headers("family", "transformer")], rows) if rows else
                ["No transformer encoding and recurrent family both fit a language: no comparison."]), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="recognition",
    rank=140,
    about="language recognition (FLaRe) at protocol v2: do the RNN and LSTM recognize past their training lengths "
          "where the transformer does not?",
    presets=("horizon-recognition",),
    records="leaderboard/reference/horizon/records",
    sources=(FLARE,),
    protocol=PROTOCOL,
    report=recognition_report,
))
