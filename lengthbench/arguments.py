"""The command line's arguments: every command, its options and their types,
and the two parsers (``build_overview_parser``: the commands and their one
lines, answered without the API or torch; ``build_parser``: every command's
own arguments, whose choices come from the API's registries). A bad value is
refused here as one line naming it (exit 2), before any command runs;
``lengthbench.cli`` runs the command the parse names."""

from __future__ import annotations

import argparse

import lengthbench


class _API:
    """``lengthbench.api``, imported on first use: the overview (``--help``,
    ``--version``) needs none of it, nor torch, so it answers at once."""

    def __getattr__(self, name):
        from lengthbench import api as module  # the one layer the command line calls

        return getattr(module, name)


api = _API()

EXIT_REFUSED = 2  # bad input, refused with nothing changed (the command line's exit codes: lengthbench.cli.main)

DESCRIPTION = ("Train transformers (and recurrent baselines) on short inputs, test them on longer ones, and rank "
               "the position encodings: run a preset's grid, submit a new encoding, compare leaderboards.")


# Each command and its one line: the overview (`lengthbench --help`) and the full parser both read it.
COMMANDS = {
    "run": "train and evaluate a preset's grid, then build the leaderboard",
    "list": "list tasks, data formats, encodings, model families, presets or studies",
    "reproduce": "published-vs-ours report of a study from run records",
    "leaderboard": "build leaderboard files from run records",
    "check": "run the encodings and model families a Python file registers through their contracts",
    "submit": "check a new encoding or model family, run it through a preset, rank it",
    "compare": "per-cell differences between two leaderboard CSVs",
    "generate": "write a task's test instances as JSON Lines, for any model",
    "export": "write a preset's test instances as a Hugging Face dataset (Parquet, card, Croissant), with "
              "lm-eval and Inspect tasks on request",
    "score": "score predictions for generated instances (exact match, token accuracy)",
    "evaluate": "score a saved Hugging Face model (a save_pretrained folder) on a task's test instances",
    "bench-generation": "time batch generation for every task",
    "perf": "measure training and evaluation speed on this machine",
}


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (naming the bad value) and exit 2."""

    def error(self, message):
        self.exit(EXIT_REFUSED, f"lengthbench: error: {message} (see `{self.prog} --help`)\n")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _seeds(value: str) -> list[int]:
    try:
        return [int(v) for v in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: seeds are comma-separated integers >= 0, e.g. 0,1,2")


def _setting(value: str) -> tuple[str, int | float]:
    try:
        return api.parse_setting(value)
    except api.InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--set {value!r}: ")) from None


def _count(minimum: int, what: str):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < minimum:
            raise argparse.ArgumentTypeError(f"{value!r}: {what}")
        return number
    return parse


def _positive_list(what: str, example: str):
    """Flag type: comma-separated integers >= 1 (e.g. task lengths)."""
    def parse(value: str) -> list[int]:
        numbers = [_count(1, f"{what} are comma-separated integers >= 1, e.g. {example}")(v) for v in _csv(value)]
        if not numbers:
            raise argparse.ArgumentTypeError(f"{value!r}: empty; give {what} >= 1, e.g. {example}")
        return numbers
    return parse


_lengths = _positive_list("task lengths", "40,500")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of seconds > 0, e.g. 300")
    return seconds


def _grid_parser() -> argparse.ArgumentParser:
    """The options ``run`` and ``submit`` share: where records go and where runs train."""
    grid = argparse.ArgumentParser(add_help=False)
    workers = _count(0, "--workers is 0 (auto) or a positive number of processes")
    grid.add_argument("--results", help="records folder (default results/<preset>)")
    grid.add_argument("--out", help="leaderboard folder (default: the records folder)")
    grid.add_argument("--workers", type=workers, default=0,
                      help="parallel run processes; 0 = auto: one per CPU core (at most 8) on CPU, "
                           "1 on CUDA; more than the CPU cores is capped (default 0)")
    grid.add_argument("--executor", choices=tuple(api.EXECUTORS), default="local",
                      help="where runs train: this machine (processes, --workers) or a Ray cluster (default local)")
    grid.add_argument("--address", help="with --executor ray: the cluster (auto, or HOST:PORT); "
                                        "default: start a local one")
    grid.add_argument("--checkpoint-every", type=_seconds, default=api.CHECKPOINT_EVERY_S, metavar="SECONDS",
                      help="save training state this often, so a killed run resumes "
                           f"(default {api.CHECKPOINT_EVERY_S:.0f})")
    grid.add_argument("--save-predictions", action="store_true",
                      help="keep each trained run's predictions at every evaluated length, compressed, in "
                           "<results>/predictions/<run>.npz (lengthbench score TASK FILE.npz rescores one)")
    grid.add_argument("--log", choices=api.LOG_KINDS,
                      help="write each run's loss, learning rate and fit checks as it trains, to "
                           "<results>/logs/<run> (tensorboard: watch with tensorboard --logdir <results>/logs; "
                           "wandb: an offline run, uploaded when you run wandb sync; each needs its package)")
    grid.add_argument("--no-progress", action="store_true", help="hide progress bars")
    grid.add_argument("--formats", type=_csv,
                      help="comma-separated data formats to write each task in, e.g. plain,reversed (default: the "
                           "preset's, plain; lengthbench list formats names them): a cell is task x format x "
                           "method, a format that does not apply to a task an n/a cell")
    return grid


def _add_run(sub, grid) -> None:
    run = sub.add_parser("run", parents=[grid], help=COMMANDS["run"])
    run.add_argument("--preset", default="quick", help=f"one of: {', '.join(api.PRESETS)} (default quick)")
    run.add_argument("--tasks", type=_csv, help="comma-separated subset of tasks")
    run.add_argument("--encodings", type=_csv, help="comma-separated subset of encodings (of the transformer)")
    run.add_argument("--models", type=_csv,
                     help="comma-separated model families, e.g. transformer,lstm (default: the preset's; "
                          "lengthbench list models names them)")
    run.add_argument("--seeds", type=_seeds, help="comma-separated seeds >= 0 (default: the preset's)")
    run.add_argument("--force", action="store_true", help="rerun cells that have a finished record")
    run.add_argument("--plugin", action="append",
                     help="Python file registering extra encodings or model families (contract-checked before any run; "
                          "repeat for several files)")
    run.add_argument("--select", metavar="FIELD=V1,V2,...",
                     help="train the grid once per value of a setting (lr, weight_decay, grad_clip, steps, "
                          "batch_size, warmup_steps) and keep, per task and method, the value with the best "
                          "validation-band exact match; the others stay in <results>/selection")
    run.add_argument("--set", action="append", type=_setting, metavar="KEY=VALUE",
                     help="override one of the preset's run settings for every cell, e.g. steps=500 or lr=3e-4 "
                          "(repeat for several; recorded in each run's config; records go to "
                          "results/<preset>-<settings> unless --results)")
    run.add_argument("--save-models", action="store_true",
                     help="save each trained hf-* model (a transformers class) with a tokenizer of its task's symbols "
                          "in <results>/models/<run>/, for evaluate --hf, lm_eval and Inspect (docs/huggingface.md)")
    run.add_argument("--plan", action="store_true",
                     help="print the grid, its useful FLOPs and its estimated wall time here; train nothing")


def _add_submit(sub, grid) -> None:
    sbm = sub.add_parser("submit", parents=[grid], help=COMMANDS["submit"])
    sbm.add_argument("path", help="Python file that registers the encoding or model family")
    sbm.add_argument("--preset", default="quick", help=f"one of: {', '.join(api.PRESETS)} (default quick)")
    sbm.add_argument("--name", help="leaderboard name for the file's single encoding (a model family keeps its own name)")
    sbm.add_argument("--tasks", type=_csv, help="comma-separated subset of the preset's tasks (default: all)")
    sbm.add_argument("--seeds", type=_seeds,
                     help="comma-separated seeds >= 0 (default: the preset's, the seeds of its shipped reference, so "
                          "the ranks compare like cells)")


def _add_records_commands(sub) -> None:
    """``list``, ``reproduce``, ``leaderboard``, ``check``: read the registry or records, train nothing."""
    lst = sub.add_parser("list", help=COMMANDS["list"])
    lst.add_argument("what", choices=("tasks", "formats", "encodings", "models", "presets", "studies"),
                     help="what to list: tasks, formats (the data formats), encodings, models (the model families), "
                          "presets or studies (each with its presets, sources, report and reference records)")
    lst.add_argument("--json", action="store_true", help="with presets: every setting of every preset, as JSON; with "
                                                          "studies: every study's fields, as JSON")

    rep = sub.add_parser("reproduce", help=COMMANDS["reproduce"])
    rep.add_argument("study", choices=api.study_names(), metavar="STUDY",
                     help="a study with a report (lengthbench list studies)")
    rep.add_argument("--results", required=True, help="records folder (e.g. of run --preset chomsky, or of full)")
    rep.add_argument("--out", help="folder for reproduction.md (default: the records folder)")
    rep.add_argument("--preset", help="only the records of this preset's grid (e.g. chomsky's cells from full's "
                                      "records)")

    board = sub.add_parser("leaderboard", help=COMMANDS["leaderboard"])
    board.add_argument("--results", default="results/quick", help="records folder")
    board.add_argument("--out", help="output folder (default: the records folder)")
    board.add_argument("--preset", help="only the records of this preset's grid (e.g. suite's cells from full's "
                                        "records)")
    board.add_argument("--reference", action="store_true",
                       help="refuse records made from uncommitted code (how the shipped references are built)")
    board.add_argument("--external", action="append", default=[], metavar="LEADERBOARD.csv",
                       help="add the rows lengthbench score --method wrote (a model lengthbench did not train), "
                            "ranked beside the records' methods in every table and on the page; repeatable")

    chk = sub.add_parser("check", help=COMMANDS["check"])
    chk.add_argument("path", help="Python file that registers encodings (@register_encoding) or model families "
                                  "(@register_family), or the name of a registered one (forget, deltanet)")
    chk.add_argument("--preset", default="quick",
                     help=f"check at this preset's shapes and lengths: one of {', '.join(api.PRESETS)} (default quick)")
    chk.add_argument("--all-presets", action="store_true",
                     help="check at the shapes and lengths of every built-in preset")


def _add_instances_options(parser, preset_help: str) -> None:
    """A task and which of its test instances: the options ``generate`` and ``evaluate`` share."""
    parser.add_argument("task", help="the task (lengthbench list tasks names them)")
    parser.add_argument("--lengths", type=_lengths, help="task lengths (default: those the preset evaluates)")
    parser.add_argument("--samples", type=_count(1, "--samples is a positive number of instances per length"),
                        help="instances per length (default: the preset's evaluation samples)")
    parser.add_argument("--seed", type=_count(0, "--seed is an integer >= 0"),
                        help="evaluation seed (default: the preset's, that of every run)")
    parser.add_argument("--preset", default="quick",
                        help=f"{preset_help}: one of " + ", ".join(api.PRESETS) + " (default quick)")


def _add_score_outputs(parser) -> None:
    """Where a score goes: the options ``score`` and ``evaluate`` share."""
    parser.add_argument("--out", help="folder for score.csv (default: print only)")
    parser.add_argument("--method", help="also write leaderboard.csv to --out: one row for this method name (model "
                                         "external), which compare reads and leaderboard --external puts on a board")


def _add_any_model(sub) -> None:
    """``generate``, ``export``, ``score`` and ``evaluate``: the test instances for a model lengthbench does not
    train, and its answers scored."""
    gen = sub.add_parser("generate", help=COMMANDS["generate"])
    _add_instances_options(gen, "whose evaluation the defaults are")
    gen.add_argument("--out", required=True, help="the JSON Lines file to write")

    exp = sub.add_parser("export", help=COMMANDS["export"])
    exp.add_argument("--preset", default="quick", help="whose test instances: one of " + ", ".join(api.PRESETS)
                     + " (default quick)")
    exp.add_argument("--tasks", type=_csv, help="comma-separated subset of the preset's task labels (default all)")
    exp.add_argument("--out", required=True, help="the folder to write (created if missing)")
    exp.add_argument("--lm-eval", action="store_true",
                     help="also write an lm-evaluation-harness task pack in OUT/lm_eval (a task YAML per task, exact "
                          "match per length, a group YAML lengthbench_<preset>): lm_eval --include_path OUT/lm_eval")
    exp.add_argument("--inspect", action="store_true",
                     help="also write Inspect tasks, OUT/inspect_tasks.py (an @task per task: inspect eval "
                          "OUT/inspect_tasks.py@TASK) and OUT/eval.yaml (what the Hub's community evaluations read)")

    scr = sub.add_parser("score", help=COMMANDS["score"])
    scr.add_argument("task", help="the task the instances are of")
    scr.add_argument("predictions", help="the generated JSON Lines, each line with a prediction (the answer as "
                                         "text) or prediction_ids (token ids) added; or lines keyed by an exported "
                                         "instance's id; or an exported split (.parquet) with a prediction column")
    _add_score_outputs(scr)
    scr.add_argument("--preset", default="quick",
                     help="whose length bands and fit rule the row is judged by (default quick, as generate's)")

    evl = sub.add_parser("evaluate", help=COMMANDS["evaluate"])
    _add_instances_options(evl, "whose instances, length bands and fit rule")
    evl.add_argument("--hf", required=True, help="the folder a transformers causal LM's save_pretrained wrote (local "
                                                 "files only); it reads the task's token ids as its own ids "
                                                 "(docs/any-model.md)")
    _add_score_outputs(evl)


def _add_compare(sub) -> None:
    cmp = sub.add_parser("compare", help=COMMANDS["compare"])
    cmp.add_argument("a", help="baseline leaderboard.csv (A)")
    cmp.add_argument("b", help="new leaderboard.csv (B)")
    cmp.add_argument("--out", default="compare", help="output folder (default ./compare)")
    cmp.add_argument("--metric", choices=api.METRICS, default="exact_match",
                     help="the OOD metric compared: " + ", ".join(api.METRICS) + " (default exact_match)")
    cmp.add_argument("--correction", choices=tuple(api.CORRECTIONS), default=api.DEFAULT_CORRECTION,
                     help="multiple-comparison correction of the cells' p-values: "
                          + "; ".join(f"{k}: {v}" for k, v in api.CORRECTIONS.items())
                          + f" (default {api.DEFAULT_CORRECTION})")
    cmp.add_argument("--allow-mismatch", action="store_true",
                     help="compare even cells whose protocols (lengths, steps, model size, ...) differ; every "
                          "output then states the mismatch (default: refuse, naming the differing settings)")


def _add_benchmarks(sub) -> None:
    """``bench-generation`` and ``perf``: how fast this machine makes batches and trains."""
    gen = sub.add_parser("bench-generation", help=COMMANDS["bench-generation"])
    gen.add_argument("--lengths", type=_lengths, default=[40, 500], help="task lengths (default 40,500)")
    gen.add_argument("--batch", type=_count(1, "--batch is a positive number of examples"), default=128,
                     help="batch size (default 128)")
    gen.add_argument("--tasks", type=_csv, help="comma-separated subset of tasks")

    prf = sub.add_parser("perf", help=COMMANDS["perf"])
    prf.add_argument("--configs", type=_csv, default=["reference", "quick"],
                     help="model configurations to time (default reference,quick)")
    prf.add_argument("--steps", type=_count(1, "--steps is a positive number of training steps"),
                     default=10, help="timed training steps per measurement (default 10)")
    prf.add_argument("--eval-lengths", type=_lengths, default=[100, 500],
                     help="task lengths to time evaluation at (default 100,500)")
    prf.add_argument("--bf16", action="store_true",
                     help="also time the trainer under bfloat16 autocast and compare smoke's metrics to fp32")
    prf.add_argument("--methods", type=_csv, default=[],
                     help="methods to time at quick's shapes against transformer/rope (transformer/forget,deltanet,...)")
    prf.add_argument("--out", default="results/perf.json", help="JSON report (default results/perf.json)")


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The global options and the commands' slot, shared by the overview and the full parser."""
    parser = OneLineParser(prog="lengthbench", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument("--version", action="version", version=f"lengthbench {lengthbench.__version__}",
                        help="print the version and exit")
    return parser, parser.add_subparsers(dest="command", required=True)


def build_overview_parser() -> argparse.ArgumentParser:
    """The commands and their one lines, no command's own arguments: what
    ``lengthbench --help`` prints, built without the API (no torch import)."""
    parser, sub = _top_parser()
    for name, summary in COMMANDS.items():
        sub.add_parser(name, help=summary)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser, sub = _top_parser()
    grid = _grid_parser()
    _add_run(sub, grid)
    _add_records_commands(sub)
    _add_submit(sub, grid)
    _add_compare(sub)
    _add_any_model(sub)
    _add_benchmarks(sub)
    for action in sub._choices_actions:  # each command's --help opens with its one-line summary
        command = sub.choices[action.dest]
        command.description = command.description or action.help
        command.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                             help="log progress details (also accepted before the command)")
    return parser
