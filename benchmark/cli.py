"""The ``lengthbench`` command line (also ``python -m benchmark``)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from benchmark.presets import PRESETS, get_preset
from tasks.base import UnknownNameError


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _seeds(value: str) -> list[int]:
    try:
        return [int(v) for v in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be comma-separated integers, got {value!r}")


def _print_board(board, paths) -> None:
    from leaderboard.tables import to_markdown

    print(to_markdown(board))
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}")


def _write_provenance(out_dir: Path, argv: list[str], seconds: float, records: list[dict]) -> Path:
    """Beside a leaderboard: the exact command, code version, hardware, time."""
    from datetime import datetime, timezone

    from benchmark.device import hardware_description
    from benchmark.version import code_version

    info = {
        "command": "lengthbench " + " ".join(argv),
        "code_version": code_version(),
        "hardware": hardware_description(),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s_this_invocation": round(seconds, 1),
        "runs": len(records),
        "run_wall_time_s_total": round(sum(r.get("wall_time_s", 0) for r in records), 1),
        "run_code_versions": sorted({r.get("code_version", "?") for r in records}),
    }
    path = Path(out_dir) / "provenance.json"
    path.write_text(json.dumps(info, indent=1) + "\n")
    return path


def cmd_run(args) -> int:
    from benchmark.grid import auto_workers, run_grid
    from leaderboard.build import build_leaderboard
    from models.plugins import load_plugins

    load_plugins(args.plugin or ())
    preset = get_preset(args.preset).with_grid(args.tasks, args.encodings, args.seeds)
    results = Path(args.results or f"results/{preset.name}")
    start = time.perf_counter()
    records = run_grid(preset, results, force=args.force, workers=args.workers or auto_workers(),
                       plugin_paths=tuple(args.plugin or ()), progress=not args.no_progress)
    for r in records:
        if r["status"] == "error":
            print(f"error in {r['run_id']}: {r['error']}", file=sys.stderr)
    out = Path(args.out) if args.out else results
    board, paths = build_leaderboard(records, out)
    paths["provenance"] = _write_provenance(out, args.argv, time.perf_counter() - start, records)
    _print_board(board, paths)
    return 0


def cmd_list(args) -> int:
    if args.what == "tasks":
        from tasks.listing import tasks_table

        print(tasks_table())
    elif args.what == "encodings":
        from models.encodings import encoding_entry, encoding_names
        from models.plugins import load_entry_points

        load_entry_points()
        for name in encoding_names():
            entry = encoding_entry(name)
            source = "" if entry.source == "built-in" else f"  [{entry.source}]"
            print(f"{name:24s} {entry.description}  defaults={json.dumps(entry.defaults)}{source}")
    else:
        for preset in PRESETS.values():
            print(json.dumps(preset.describe(), indent=1, default=str))
    return 0


def cmd_leaderboard(args) -> int:
    from benchmark.records import load_records
    from leaderboard.build import build_leaderboard

    records = load_records(Path(args.results))
    if not records:
        raise ValueError(f"no run records (*.json) in {args.results!r}")
    board, paths = build_leaderboard(records, Path(args.out or args.results))
    _print_board(board, paths)
    return 0


def cmd_compare(args) -> int:
    from leaderboard.compare import compare_files, summary_counts, to_markdown

    diff, paths = compare_files(Path(args.a), Path(args.b), Path(args.out), args.metric)
    print(to_markdown(diff, args.a, args.b))
    print("summary:", ", ".join(f"{k} {v}" for k, v in summary_counts(diff).items()))
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}")
    return 0


def _load_submission(path: str, name: str | None) -> list[str]:
    """Import an encoding file; with ``name``, register its one encoding under it."""
    from models.encodings import encoding_entry, register_encoding
    from models.plugins import load_encoding_file

    names = load_encoding_file(path)
    if not names:
        raise ValueError(f"{path} registers no encoding; decorate a PositionEncoding subclass "
                         "with @register_encoding('your-name')")
    if name and name not in names:
        if len(names) != 1:
            raise ValueError(f"--name needs a file with one encoding; {path} registers {', '.join(names)}")
        entry = encoding_entry(names[0])
        register_encoding(name, defaults=entry.defaults, description=entry.description,
                          source=entry.source)(entry.factory)
        names = [name]
    return names


def cmd_check(args) -> int:
    from models.contract import check_encoding

    reports = [check_encoding(n) for n in _load_submission(args.path, None)]
    for report in reports:
        print(report.format())
    return 0 if all(r.passed for r in reports) else 1


def cmd_submit(args) -> int:
    from benchmark.grid import auto_workers, run_grid
    from leaderboard.build import build_leaderboard
    from leaderboard.submission import ranking_text, write_submission
    from models.contract import check_encoding
    from models.plugins import load_entry_points

    load_entry_points()
    names = _load_submission(args.path, args.name)
    reports = [check_encoding(n) for n in names]
    for report in reports:
        print(report.format())
    if not all(r.passed for r in reports):
        print("lengthbench: error: the contract check failed; nothing was run", file=sys.stderr)
        return 1
    preset = get_preset(args.preset)
    grid = preset.with_grid(encodings=[e for e in preset.encodings if e not in names] + names)
    results = Path(args.results or f"results/{preset.name}")
    start = time.perf_counter()
    records = run_grid(grid, results, workers=args.workers or auto_workers(),
                       plugin_paths=(args.path,), progress=not args.no_progress)
    out = Path(args.out) if args.out else results
    board, paths = build_leaderboard(records, out)
    paths["provenance"] = _write_provenance(out, args.argv, time.perf_counter() - start, records)
    _print_board(board, paths)
    print(ranking_text(board, names))
    for name in names:
        print(f"wrote submission: {write_submission(board, name, out)}")
    return 0


def cmd_bench_generation(args) -> int:
    from benchmark.bench_generation import main as bench_main
    from tasks import get_task

    for name in args.tasks or ():
        get_task(name)
    bench_main([int(n) for n in args.lengths], args.batch, args.tasks)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lengthbench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train and evaluate a preset's grid, then build the leaderboard")
    run.add_argument("--preset", default="quick", help=f"one of: {', '.join(PRESETS)} (default quick)")
    run.add_argument("--tasks", type=_csv, help="comma-separated subset of tasks")
    run.add_argument("--encodings", type=_csv, help="comma-separated subset of encodings")
    run.add_argument("--seeds", type=_seeds, help="comma-separated seeds (default: the preset's)")
    run.add_argument("--results", help="records folder (default results/<preset>)")
    run.add_argument("--out", help="leaderboard folder (default: the records folder)")
    run.add_argument("--force", action="store_true", help="rerun cells that have a finished record")
    run.add_argument("--workers", type=int, default=0,
                     help="parallel run processes; 0 = auto: one per CPU core (at most 8) on CPU, "
                          "1 on CUDA (default 0)")
    run.add_argument("--plugin", action="append", help="Python file registering extra encodings")
    run.add_argument("--no-progress", action="store_true", help="hide progress bars")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list tasks, encodings or presets")
    lst.add_argument("what", choices=("tasks", "encodings", "presets"))
    lst.set_defaults(func=cmd_list)

    board = sub.add_parser("leaderboard", help="build leaderboard files from run records")
    board.add_argument("--results", default="results/quick", help="records folder")
    board.add_argument("--out", help="output folder (default: the records folder)")
    board.set_defaults(func=cmd_leaderboard)
    chk = sub.add_parser("check", help="run the encodings a Python file registers through the contract")
    chk.add_argument("path", help="Python file that registers encodings with @register_encoding")
    chk.set_defaults(func=cmd_check)

    sbm = sub.add_parser("submit", help="check a new encoding, run it through a preset, rank it")
    sbm.add_argument("path", help="Python file that registers the encoding")
    sbm.add_argument("--preset", default="quick", help=f"one of: {', '.join(PRESETS)} (default quick)")
    sbm.add_argument("--name", help="leaderboard name for the file's (single) encoding")
    sbm.add_argument("--results", help="records folder (default results/<preset>, shared with `run`)")
    sbm.add_argument("--out", help="leaderboard folder (default: the records folder)")
    sbm.add_argument("--workers", type=int, default=0, help="parallel run processes (0 = auto)")
    sbm.add_argument("--no-progress", action="store_true", help="hide progress bars")
    sbm.set_defaults(func=cmd_submit)

    cmp = sub.add_parser("compare", help="per-cell differences between two leaderboard CSVs")
    cmp.add_argument("a", help="baseline leaderboard.csv (A)")
    cmp.add_argument("b", help="new leaderboard.csv (B)")
    cmp.add_argument("--out", default="compare", help="output folder (default ./compare)")
    cmp.add_argument("--metric", choices=("exact_match", "token_accuracy"), default="exact_match")
    cmp.set_defaults(func=cmd_compare)

    gen = sub.add_parser("bench-generation", help="time batch generation for every task")
    gen.add_argument("--lengths", type=_csv, default=["40", "500"], help="task lengths (default 40,500)")
    gen.add_argument("--batch", type=int, default=128, help="batch size (default 128)")
    gen.add_argument("--tasks", type=_csv, help="comma-separated subset of tasks")
    gen.set_defaults(func=cmd_bench_generation)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (UnknownNameError, ValueError, FileNotFoundError) as err:
        print(f"lengthbench: error: {err}", file=sys.stderr)
        return 2
