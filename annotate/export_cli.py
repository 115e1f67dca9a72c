"""``python -m exports``: write a study in any export format (``exports/__main__.py`` hands over
to this module: loading a study from the vote store is the store's job, so the command lives here).

    python -m exports STUDY --format F [--out PATH] [--db URL] [--history] [--condition C]
                      [--level L] [--tie T] [--rating R] [--lambdas 0.25,0.5,0.75,1]
                      [--grid START:STOP:NUM] [--bootstrap B] [--folds K] [--seed S] [--adjust A]
                      [--family reference|all]
    python -m exports --list

Single-file formats go to ``--out`` (a file) or, for text, to standard output; the
multi-file formats (``dstc-labels``, ``fga-text``) need ``--out`` as a folder.  Nothing is
written when the export fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from metrics.comparisons import ADJUSTMENTS, FAMILIES


def build_parser() -> argparse.ArgumentParser:
    from exports.formats import FORMATS
    from metrics.analysis import DEFAULTS

    parser = argparse.ArgumentParser(prog="python -m exports", description="export a study's votes, labels and reports")
    parser.add_argument("study", nargs="?", help="study name")
    parser.add_argument("--format", dest="fmt", choices=list(FORMATS), help="output format")
    parser.add_argument("--out", type=Path, help="file (one-file formats) or folder (dstc-labels, fga-text)")
    parser.add_argument("--db", help="database URL (default: DST_JUDGE_DB or the SQLite file in the per-user data folder)")
    parser.add_argument("--history", action="store_true", help="votes-*: every vote event, not only current votes")
    parser.add_argument("--condition", help="satisfaction studies: the system (condition) to analyse or export")
    parser.add_argument("--level", default=DEFAULTS.level, choices=("nominal", "ordinal", "interval", "ratio"))
    parser.add_argument("--tie", default=DEFAULTS.tie, help="majority tie policy: none, random, fixed:<label>")
    parser.add_argument("--rating", default=DEFAULTS.rating, choices=("mean", "majority", "pairs"))
    parser.add_argument("--lambdas", default=DEFAULTS.lambdas_text, help="FGA λ values for the correlation")
    parser.add_argument("--grid", default=DEFAULTS.grid_text, help="λ grid for the calibration, START:STOP:NUM")
    parser.add_argument("--bootstrap", type=int, default=DEFAULTS.resamples)
    parser.add_argument("--folds", type=int, default=DEFAULTS.folds)
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument(
        "--adjust", default=DEFAULTS.adjust, choices=ADJUSTMENTS, help="adjustment over the comparisons (p and intervals)"
    )
    parser.add_argument(
        "--family",
        default=DEFAULTS.family,
        choices=FAMILIES,
        help="metric comparisons: each against JGA with FGA at one λ (reference), or all pairs",
    )
    parser.add_argument(
        "--weights",
        default=DEFAULTS.weights,
        choices=("none", "linear", "quadratic"),
        help="agreement weights for Cohen's kappa and Gwet's AC2",
    )
    parser.add_argument(
        "--resample",
        default=DEFAULTS.resample,
        choices=("dialogues", "dialogues+annotators"),
        help="bootstrap unit for correlation and calibration",
    )
    parser.add_argument("--list", action="store_true", help="list the formats")
    return parser


def run(args) -> int:
    from annotate import service
    from annotate.store.db import database_url, make_engine, upgrade
    from exports.formats import FORMATS
    from metrics.analysis import AnalysisSettings
    from metrics.calibrate import parse_grid
    from metrics.corpus import parse_lambdas

    if args.list:
        for fmt in FORMATS.values():
            print(f"{fmt.name:<17} {fmt.file_name:<32} {', '.join(fmt.kinds):<24} {fmt.description}")
        return 0
    if not args.study or not args.fmt:
        raise ValueError("give a study name and --format (python -m exports --list shows the formats)")
    grid = parse_grid(args.grid)
    lambdas, _ = parse_lambdas(args.lambdas)
    settings = AnalysisSettings(
        args.level,
        args.tie,
        args.rating,
        lambdas,
        (float(grid[0]), float(grid[-1]), int(grid.size)),
        args.bootstrap,
        args.folds,
        args.seed,
        args.adjust,
        args.weights,
        args.resample,
        args.family,
    )
    engine = make_engine(database_url(args.db))
    upgrade(engine)
    try:  # the engine is this run's: its connections are closed when it ends
        export = service.export_files(
            engine, service.CLI, args.study, args.fmt, settings, history=args.history, condition=args.condition
        )
        files = export.files
        fmt = FORMATS[args.fmt]

        def written() -> int:  # a votes export, once written, counts for a later delete (annotate.studies)
            if args.fmt.startswith("votes-"):
                service.record_export(engine, service.CLI, export.study_id, args.fmt, export.through)
            return 0

        if fmt.multi_file:
            if args.out is None:
                raise ValueError(f"{args.fmt} writes one file per {fmt.unit}: give --out FOLDER")
            for relative, content in files:
                target = args.out / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            print(f"wrote {len(files)} file(s) under {args.out}", file=sys.stderr)
            return 0
        ((_, content),) = files
        if args.out is None:
            if args.fmt == "votes-parquet":
                raise ValueError("votes-parquet is binary: give --out FILE")
            sys.stdout.write(content.decode())
            return written()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(content)
        print(f"wrote {args.out}", file=sys.stderr)
        return written()
    finally:
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ValueError as err:  # bad settings, unknown study, wrong kind: one line, nothing written
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
