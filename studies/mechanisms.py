"""``mechanisms``: the data-dependent position mechanisms (forget gates,
stick-breaking, PaTH, scalable softmax, the NoPE/RoPE hybrid) against the
static encodings on horizon's tasks, where both fit: no paper claims this
comparison, so the report states the board's finding.
"""

from __future__ import annotations

from lengthbench.benchmark.presets import (
    DATA_DEPENDENT_KINDS,
    STATIC_ENCODINGS,
    SUITE_TASKS,
    ZOO_ENCODINGS,
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
    horizon_text,
    judged_seeds,
    pooled_by_task,
    setup_text,
)
from lengthbench.models.encodings import ENCODINGS, encoding_kind
from lengthbench.models.families import TRANSFORMER
from lengthbench.studies.base import Study, register_study
from lengthbench.studies.zoo import part_of_zoo
from lengthbench.tasks import get_task
from lengthbench.tasks.cells import transformer_method
from lengthbench.tasks.formats import task_order_key


ZOO_CLAIM = ("No published claim compares these mechanisms with static encodings on these algorithmic tasks "
             "(their papers measure language modelling, retrieval and state tracking): this is the board's finding")


register_preset(part_of_zoo("horizon-mechanisms", "the data-dependent mechanisms against the static encodings on "
                            "horizon's tasks x 3 seeds", SUITE_TASKS, (*STATIC_ENCODINGS, *ZOO_ENCODINGS),
                            ("transformer",)))


@family_report
def mechanisms_report(records: list[RunRecord], family: ComparisonFamily) -> str:
    """The data-dependent position mechanisms against the static encodings
    on the tasks where both fit, the task the unit: each mechanism against
    ``rope`` and ``nope``, and every mechanism against every static encoding
    (seeds together per task)."""
    zoo = [e for e in ENCODINGS.names() if encoding_kind(e) in DATA_DEPENDENT_KINDS]
    ran = {r.encoding for r in records if r.config.family == TRANSFORMER}
    mechanisms = [e for e in zoo if e in ran]
    if not mechanisms:
        raise InputError("these records hold no run of a data-dependent mechanism (forget, stick-breaking, path, ssmax, "
                         "ssmax-rope, rnope); run `lengthbench run --preset horizon-mechanisms` (into the records of "
                         "`horizon`)")
    records = [r for r in records if r.config.family == TRANSFORMER and r.status != "not_applicable"
               and get_task(r.config.cell.task).level != "state"]
    static = sorted(ran - set(zoo), key=ENCODINGS.names().index)
    board = leaderboard_frame(records)
    seeds = judged_seeds(records)
    lines = ["# Data-dependent positions against static encodings", "", setup_text(records), "", horizon_text(records), "",
             f"Score: test-band exact match, mean ± std over seeds. {FIT_RULE} {ZOO_CLAIM}.", "",
             "## Per task", "", *cells_table(board, sorted(set(board.task), key=task_order_key),
                                              [transformer_method(e) for e in mechanisms]), ""]
    rows = []
    for mechanism in mechanisms:
        for baseline in ("rope", "nope"):
            if baseline in static:
                rows.append([f"`{mechanism}`", f"`{baseline}`",
                             *family.row(by_task(seeds, transformer_method(mechanism)),
                                         by_task(seeds, transformer_method(baseline)), (mechanism, baseline))])
    pooled = [pooled_by_task(seeds, names) for names in (mechanisms, static)]
    rows.append(["every mechanism", "every static encoding", *family.row(*pooled, ("data-dependent", "static"))])
    lines += ["## Against the static encodings", "",
              "Each mechanism minus a static encoding in test exact match (points) where both fit, and the "
              "probability that a seed of the mechanism beats one of the encoding; the last row pools every "
              "mechanism's and every static encoding's fit seeds per task. Every encoding was trained for the same "
              f"budget at the same size; nothing was chosen on the test band. {FAMILY_RULE}", "",
              *markdown_table(["mechanism", "against", *comparison_headers("mechanism", "encoding")], rows), ""]
    return "\n".join(lines) + "\n"


register_study(Study(
    name="mechanisms",
    rank=110,
    about="do the data-dependent position mechanisms generalize further than the static encodings (the board's "
          "finding: no published claim)",
    presets=("horizon-mechanisms",),
    records="leaderboard/reference/horizon/records",
    report=mechanisms_report,
))
