"""The ``lengthbench`` command line (also ``python -m lengthbench``): parses
arguments, calls the Python API (``lengthbench.api``, nothing else) and
prints what it returns."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from lengthbench import catalog
from lengthbench.arguments import COMMANDS, EXIT_REFUSED, api, build_overview_parser, build_parser
from lengthbench.core.errors import InputError

EXIT_OK, EXIT_RUNS_FAILED, EXIT_INTERRUPTED = 0, 1, 130


def _print_written(paths) -> None:
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}")


def _report_run(board) -> int:
    """Print a finished grid's leaderboard, its files and its failed cells."""
    print(api.leaderboard_text(board))
    if "ranking" in board.attrs:
        print(board.attrs["ranking"])
    _print_written(board.attrs["written"])
    failed = board.attrs["failed"]
    for r in failed:
        print(f"lengthbench: run {api.cell_name(r['task'], r['method'])} seed {r['seed']} failed: {r['error']}",
              file=sys.stderr)
    if failed:
        print(f"lengthbench: error: {len(failed)} of {board.attrs['runs']} runs ended in error (listed above; "
              "their records keep the traceback); rerun the same command to retry them", file=sys.stderr)
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _grid_options(args) -> dict:
    return dict(results=args.results, out=args.out, workers=args.workers,
                executor=args.executor, address=args.address, checkpoint_every=args.checkpoint_every,
                save_predictions=args.save_predictions, progress=not args.no_progress, live_log=args.log,
                command="lengthbench " + " ".join(args.argv))


def _settings(pairs) -> dict | None:
    """``--set`` pairs as a dict; a key given twice is refused with both values (never the last one silently)."""
    settings = {}
    for key, value in pairs or ():
        if key in settings:
            raise InputError(f"--set {key} is given twice ({key}={settings[key]:g} and {key}={value:g}); give it once")
        settings[key] = value
    return settings or None


def cmd_run(args) -> int:
    axes = dict(tasks=args.tasks, formats=args.formats, encodings=args.encodings, models=args.models,
                seeds=args.seeds, plugins=args.plugin or (), settings=_settings(args.set))
    if args.plan:
        print(api.plan(args.preset, **axes, results=args.results, workers=args.workers, force=args.force,
                       select=args.select, save_models=args.save_models))
        return EXIT_OK
    try:
        board = api.run(args.preset, **axes, force=args.force, select=args.select, save_models=args.save_models,
                        **_grid_options(args))
    except api.RunsFailed as err:
        board = err.board
    return _report_run(board)


def cmd_list(args) -> int:
    if args.json and args.what not in ("presets", "studies"):
        raise InputError(f"--json lists presets or studies, not {args.what}; leave it out for the {args.what} table")
    if args.what in ("presets", "studies"):
        print((api.presets_text if args.what == "presets" else api.studies_text)(as_json=args.json))
        return EXIT_OK
    print({"tasks": api.tasks_table, "formats": api.formats_table, "encodings": api.encodings_text,
           "models": api.models_text, "studies": api.studies_text}[args.what]())
    return EXIT_OK


def cmd_leaderboard(args) -> int:
    board = api.write_leaderboard(args.results, args.out or args.results, reference=args.reference,
                                  preset=args.preset, external=args.external)
    print(api.leaderboard_text(board))
    _print_written(board.attrs["written"])
    return EXIT_OK


def cmd_reproduce(args) -> int:
    print(api.reproduce(args.study, args.results, args.out, preset=args.preset))
    return EXIT_OK


def cmd_compare(args) -> int:
    diff = api.compare(args.a, args.b, metric=args.metric, correction=args.correction, out=args.out,
                       allow_mismatch=args.allow_mismatch)
    print(api.compare_text(diff))
    _print_written(diff.attrs["written"])
    return EXIT_OK


def cmd_generate(args) -> int:
    instances = api.generate(args.task, args.lengths, samples=args.samples, seed=args.seed, preset=args.preset,
                             out=args.out)
    lengths = sorted({i["length"] for i in instances})
    print(f"wrote {len(instances)} instances of {args.task} ({len(instances) // len(lengths)} at each of lengths "
          f"{', '.join(map(str, lengths))}; evaluation seed {instances[0]['eval_seed']}) to {args.out}")
    return EXIT_OK


def _method_needs_out(args) -> None:
    if args.method is not None and args.out is None:
        raise InputError("--method writes a leaderboard row: give --out DIR too")


def _print_scores(table) -> int:
    print(table.to_string(index=False))
    _print_written(table.attrs.get("written", {}))
    return EXIT_OK


def cmd_evaluate(args) -> int:
    _method_needs_out(args)
    return _print_scores(api.evaluate(args.hf, args.task, args.lengths, samples=args.samples, seed=args.seed,
                                      preset=args.preset, out=args.out, method=args.method))


def cmd_export(args) -> int:
    written = api.export(args.preset, args.out, tasks=args.tasks, lm_eval=args.lm_eval, inspect=args.inspect)
    configs = written["configs"]
    rows = sum(s["rows"] for c in configs.values() for s in c["splits"].values())
    tasks = f"{len(configs)} task{'s' * (len(configs) != 1)}"
    print(f"wrote {rows} instances of {tasks} of {args.preset} ({', '.join(configs)}) to {args.out}: Parquet per task "
          "and split, README.md (the dataset card), croissant.json")
    for label, why in written["skipped"].items():
        print(f"  {label}: no instances ({why})")
    print(f"load: datasets.load_dataset({str(args.out)!r}, {next(iter(configs), 'TASK')!r}, split='test')")
    for kind, path in written["harnesses"].items():
        print(f"{HARNESS_USE[kind]}: {path}")
    for label, why in written["harness_skipped"].items():
        print(f"  {label}: not in the harness tasks ({why})")
    return EXIT_OK


HARNESS_USE = {"lm_eval": "lm-eval pack (lm_eval --include_path it --tasks lengthbench_PRESET)",
               "inspect": "Inspect tasks (inspect eval it@TASK -M do_sample=false)",
               "hub": "the Hub's eval.yaml (the dataset's community evaluation)"}


def cmd_score(args) -> int:
    _method_needs_out(args)
    return _print_scores(api.score(args.task, args.predictions, out=args.out, method=args.method,
                                   preset=args.preset))


def cmd_check(args) -> int:
    reports = api.check(args.path, args.preset, all_presets=args.all_presets)
    for report in reports:
        print(report.format())
    failed = [r.failure() for r in reports if not r.passed]
    if not failed:
        return EXIT_OK
    print(f"lengthbench: error: {args.path}: {'; '.join(failed)} fails the contract check (the FAIL "
          "lines above say why)", file=sys.stderr)
    return EXIT_RUNS_FAILED


def cmd_submit(args) -> int:
    board = api.submit(args.path, args.preset, name=args.name, tasks=args.tasks, seeds=args.seeds,
                       formats=args.formats, **_grid_options(args))
    for report in board.attrs["reports"]:
        print(report.format())
    return _report_run(board)


def cmd_bench_generation(args) -> int:
    for line in api.bench_generation(args.lengths, args.batch, args.tasks):
        print(line, flush=True)
    return EXIT_OK


def cmd_perf(args) -> int:
    print(api.perf(args.configs, steps=args.steps, eval_lengths=args.eval_lengths,
                   bf16=args.bf16, out=args.out, methods=args.methods))
    return EXIT_OK


# Each command's handler, by the name the parse gives it (``args.command``).
HANDLERS = {"run": cmd_run, "list": cmd_list, "reproduce": cmd_reproduce, "leaderboard": cmd_leaderboard,
            "check": cmd_check, "submit": cmd_submit, "compare": cmd_compare, "generate": cmd_generate,
            "export": cmd_export, "score": cmd_score, "evaluate": cmd_evaluate,
            "bench-generation": cmd_bench_generation, "perf": cmd_perf}


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _reader_gone() -> int:
    """The reader of our output stopped early (`lengthbench list tasks | head`): not an error."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush does not fail again
    return EXIT_OK


def _print_listing(text: str) -> int:
    try:
        print(text)
    except BrokenPipeError:
        return _reader_gone()
    return EXIT_OK


def main(argv=None) -> int:
    """Exit codes: 0 done; 1 done, but some runs ended in error (or ``check``
    found a contract failure); 2 refused: bad input or a file that cannot be
    read or written, with nothing lost; 130 interrupted (Ctrl-C, SIGTERM)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not set(argv) & set(COMMANDS):  # no command: the overview answers (help, version, a missing command)
        build_overview_parser().parse_args(argv)
    stored = catalog.listing(argv[1:]) if argv[:1] == ["list"] else None
    if stored is not None:  # a built-in listing, answered without importing torch
        return _print_listing(stored)
    verbose = bool({"-v", "--verbose"} & set(argv))  # before the parser, whose choices load the plugins
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="lengthbench: %(levelname)s: %(message)s")
    args = build_parser().parse_args(argv)
    args.argv = argv
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:  # SIGTERM (a scheduler, `kill`) stops as cleanly as Ctrl-C
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return HANDLERS[args.command](args)
    except api.GridInterrupted as err:
        print(f"lengthbench: {err}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("lengthbench: interrupted; files are written whole or not at all, so nothing is "
              "half-written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()
    except (InputError, OSError) as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
