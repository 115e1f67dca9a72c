"""``python -m metrics``: score DST predictions and analyse human judgements.

    python -m metrics score PATH... [--format F] [--lambdas 0.25,0.5,0.75,1 | START:STOP:NUM]
                                    [--slots N] [--rsa macro|macro-skip|micro] [--normalise]
                                    [--per-dialogue] [--by-domain] [--json]
    python -m metrics agreement VOTES.csv [--question Q] [--level nominal|ordinal|interval|ratio]
                                    [--weights none|linear|quadratic] [--categories A,B,... | --scale 1-5]
                                    [--gold GOLD.csv] [--bootstrap B] [--seed S] [--json]
    python -m metrics correlate --ratings RATINGS.csv [--lambdas ...] [--rating mean|majority|pairs]
                                    [--family reference|all] [--reference jga] [--fga-lambda 0.5]
                                    [--adjust holm|bonferroni|bh|none] [--bootstrap B] [--seed S] [--json] PREDICTIONS...
    python -m metrics systems --ratings RATINGS.csv --system NAME=PATH --system NAME=PATH ... [--bootstrap B] [--seed S]
                              [--statistic pearson|spearman|kendall|accuracy] [--json]
    python -m metrics judge HUMAN.csv --judges JUDGES.csv [--question Q] [--bootstrap B] [--json]
    python -m metrics plan --r-a A --r-b B --r-ab C [--alpha 0.05] [--power 0.8] [--comparisons M]
                                    [--adjust holm|bonferroni|bh|none] [--budget N --icc R] [--json]
    python -m metrics plan --pilot RATINGS.csv [--metric-a fga_0.5 --metric-b jga] [--budget N] PREDICTIONS...
    python -m metrics design (--scores SCORES.csv | PREDICTIONS...) (--budget N | --target-width W) --icc R
                                    [--question comparison|lambda|agreement] [--r-a A --r-b B] [--json]
    python -m metrics calibrate --ratings RATINGS.csv [--grid START:STOP:NUM] [--bootstrap B]
                                    [--folds K] [--seed S] [--plot r_lambda.png] [--json] PREDICTIONS...

The JSON contracts are in docs/reference/formats.md.  Imports stay lean (numpy and the readers only) for
``score``, so that a whole-process run is fast; the analysis commands import scipy lazily.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from metrics.comparisons import ADJUSTMENTS, DEFAULT_FAMILY_SIZE, FAMILIES
from metrics.registry import FGA, JGA, METRICS, RSA, SCORE_TABLE, split_key

if TYPE_CHECKING:
    from formats.dialogue import Dialogue
    from formats.tidy import Vote


def _add_score(subparsers: Any) -> None:
    listed = ", ".join(m.display("λ") if m.takes_lambda else m.display() for m in METRICS)
    score = subparsers.add_parser("score", help=f"score predictions: {listed}")
    score.add_argument("paths", nargs="+", metavar="PATH", help="prediction files or folders (pooled into one corpus)")
    score.add_argument("--format", dest="fmt", help="input format (default: detected per file)")
    score.add_argument("--lambdas", default="0.25,0.5,0.75,1", help="list 0.25,0.5 or range START:STOP:NUM")
    score.add_argument("--slots", type=int, default=30, help="|S| for slot accuracy (default 30, MultiWOZ)")
    score.add_argument("--rsa", default=RSA.aggregations[0], choices=RSA.aggregations, help="RSA aggregation over turns")
    score.add_argument("--normalise", "--normalize", action="store_true", help="lower-case values and fold white space")
    score.add_argument("--per-dialogue", action="store_true", help="also score each dialogue")
    score.add_argument("--by-domain", action="store_true", help="also score each domain")
    score.add_argument("--json", action="store_true", help="print the JSON contract instead of tables")


def _add_prediction_options(parser: argparse.ArgumentParser, *, lambdas: bool) -> None:
    parser.add_argument("paths", nargs="+", metavar="PREDICTIONS", help="prediction files or folders")
    parser.add_argument("--format", dest="fmt", help="input format (default: detected per file)")
    if lambdas:
        parser.add_argument("--lambdas", default="0.25,0.5,0.75,1", help="FGA λ values: list or START:STOP:NUM")
    parser.add_argument("--slots", type=int, default=30, help="|S| for slot accuracy (default 30)")
    parser.add_argument("--rsa", default=RSA.aggregations[0], choices=RSA.aggregations)
    parser.add_argument("--normalise", "--normalize", action="store_true")


def _add_rating_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ratings", required=True, help="CSV with item (dialogue id), annotator, value")
    parser.add_argument("--question", help="which question's votes (default: the only one, or 'satisfied')")
    parser.add_argument("--condition", help="only votes of this condition (system)")
    parser.add_argument("--rating", default="mean", choices=("mean", "majority", "pairs"), help="human rating per dialogue")
    parser.add_argument("--tie", default="none", help="majority tie policy: none, random, fixed:<label>")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples over dialogues (0: none)")
    parser.add_argument(
        "--resample",
        default="dialogues",
        choices=("dialogues", "dialogues+annotators"),
        help="bootstrap unit: dialogues, or dialogues and annotators (two-way)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")


def _add_analysis(subparsers: Any) -> None:
    agreement = subparsers.add_parser("agreement", help="inter-annotator agreement of a tidy votes CSV")
    agreement.add_argument("votes", metavar="VOTES.csv")
    agreement.add_argument("--question", help="only this question (default: every question)")
    agreement.add_argument("--level", default="nominal", choices=("nominal", "ordinal", "interval", "ratio"))
    agreement.add_argument(
        "--weights",
        default="none",
        choices=("none", "linear", "quadratic"),
        help="weights for pairwise Cohen's kappa and Gwet's AC2 (--level governs alpha only)",
    )
    declared = agreement.add_mutually_exclusive_group()
    declared.add_argument("--categories", help="the question's answers, e.g. 0,1 (default: the answers voted)")
    declared.add_argument("--scale", help="the question's answers as a whole-number scale START-END, e.g. 1-5")
    agreement.add_argument("--gold", help="gold answers CSV (item, question, value[, condition]) for attention checks")
    agreement.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples over items (0: none)")
    agreement.add_argument("--seed", type=int, default=0)
    agreement.add_argument("--json", action="store_true")
    correlate = subparsers.add_parser("correlate", help="correlation of every metric with human ratings per dialogue")
    _add_rating_options(correlate)
    correlate.add_argument(
        "--adjust",
        default="holm",
        choices=ADJUSTMENTS,
        help="adjustment of the p-values and intervals over the declared comparisons (default holm)",
    )
    correlate.add_argument(
        "--family",
        default="reference",
        choices=FAMILIES,
        help="the comparisons: each metric against --reference with FGA at --fga-lambda (default), or all pairs",
    )
    correlate.add_argument("--reference", default=JGA.key(), help=f"the reference metric (default {JGA.key()})")
    correlate.add_argument("--fga-lambda", type=float, default=0.5, help="the FGA λ in the reference family (default 0.5)")
    _add_prediction_options(correlate, lambdas=True)
    calibrate = subparsers.add_parser("calibrate", help="the λ that makes FGA agree most with human ratings")
    _add_rating_options(calibrate)
    _add_prediction_options(calibrate, lambdas=False)
    calibrate.add_argument("--grid", default="0:10:1001", help="START:STOP:NUM like numpy.linspace (default 0:10:1001)")
    calibrate.add_argument("--folds", type=int, default=5, help="k for k-fold cross-validation")
    calibrate.add_argument("--plot", help="write the r(λ) plot (PNG, SVG or HTML by extension)")
    systems = subparsers.add_parser(
        "systems", help="system-level meta-evaluation: each system's corpus metric vs its mean rating"
    )
    systems.add_argument("--ratings", required=True, help="votes CSV whose condition column names the system")
    systems.add_argument(
        "--system",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="a system's predictions (repeat for each system; NAME as in the condition column)",
    )
    systems.add_argument("--question", help="which question's votes (default: the only one, or 'satisfied')")
    systems.add_argument("--lambdas", default="0.25,0.5,0.75,1", help="FGA λ values")
    systems.add_argument("--format", dest="fmt", help="input format of the predictions")
    systems.add_argument(
        "--bootstrap", type=int, default=1000, help="draws of systems and dialogues together for the intervals (0: none)"
    )
    systems.add_argument("--seed", type=int, default=0)
    systems.add_argument(
        "--statistic",
        choices=("pearson", "spearman", "kendall", "accuracy"),
        default="pearson",
        help="the statistic the metrics are tested and clustered on",
    )
    systems.add_argument("--json", action="store_true")
    judge = subparsers.add_parser("judge", help="automatic judges against the human majority per item")
    judge.add_argument("human", metavar="HUMAN.csv", help="the human votes (tidy CSV)")
    judge.add_argument("--judges", required=True, metavar="JUDGES.csv", help="the judges' labels (annotator = judge)")
    judge.add_argument("--question", help="which question (default: the only one, or 'satisfied')")
    judge.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples over items for kappa's CI")
    judge.add_argument("--seed", type=int, default=0)
    judge.add_argument("--json", action="store_true")
    plan = subparsers.add_parser(
        "plan", help="dialogues needed to tell two metrics apart (power of the analysis's difference test)"
    )
    plan.add_argument("paths", nargs="*", metavar="PREDICTIONS", help="with --pilot: the pilot's prediction files")
    plan.add_argument("--r-a", type=float, help="r(human, metric A)")
    plan.add_argument("--r-b", type=float, help="r(human, metric B)")
    plan.add_argument("--r-ab", type=float, help="r(metric A, metric B)")
    plan.add_argument("--pilot", metavar="RATINGS.csv", help="estimate the three correlations from a pilot's votes")
    plan.add_argument("--metric-a", default=FGA.key("0.5"), help=f"with --pilot: metric A (default {FGA.key('0.5')})")
    plan.add_argument("--metric-b", default=JGA.key(), help=f"with --pilot: metric B (default {JGA.key()})")
    plan.add_argument("--question", help="with --pilot: which question's votes")
    plan.add_argument("--condition", help="with --pilot: only votes of this condition")
    plan.add_argument("--format", dest="fmt", help="with --pilot: input format of the predictions")
    plan.add_argument("--budget", type=int, help="judgements to spend: power of k annotators x budget/k dialogues")
    plan.add_argument("--max-k", type=int, default=11, help="with --budget: the most annotators per dialogue tried")
    plan.add_argument("--icc", type=float, help="with --budget and no pilot: a single rating's reliability ICC(1,1)")
    plan.add_argument("--k-now", type=float, default=1.0, help="with --icc: ratings per dialogue behind --r-a/--r-b")
    plan.add_argument("--alpha", type=float, default=0.05, help="the family-wise level (default 0.05)")
    plan.add_argument(
        "--comparisons",
        type=int,
        default=DEFAULT_FAMILY_SIZE,
        help=f"comparisons in the study's declared family (default {DEFAULT_FAMILY_SIZE}: each other metric against "
        "JGA, FGA at one λ); one is planned at alpha / comparisons",
    )
    plan.add_argument("--adjust", default="holm", choices=ADJUSTMENTS, help="the family's adjustment (none: plan at alpha)")
    plan.add_argument("--power", type=float, default=0.8)
    plan.add_argument("--json", action="store_true")


def _add_design(subparsers: Any) -> None:
    design = subparsers.add_parser(
        "design", help="the design (dialogues, votes per dialogue) with the narrowest predicted interval for a budget"
    )
    design.add_argument("paths", nargs="*", metavar="PREDICTIONS", help="the pool's prediction files (or --scores)")
    design.add_argument("--scores", metavar="SCORES.csv", help="the pool's per-dialogue metric scores: a column per metric")
    spend = design.add_mutually_exclusive_group(required=True)
    spend.add_argument("--budget", type=int, help="judgements to spend: the design with the narrowest predicted interval")
    spend.add_argument("--target-width", type=float, help="the 95%% interval width wanted: the design with the fewest judgements")
    design.add_argument("--icc", type=float, required=True, help="a single rating's reliability ICC(1,1): pilot or prior")
    design.add_argument(
        "--question",
        default="comparison",
        choices=("comparison", "lambda", "agreement"),
        help="comparison (r(A) - r(B)), lambda (λ*: FGA columns fga_<λ> on the analysis grid 0:10:1001 and 0.05..2, "
        "or the predictions scored there), or agreement (ICC)",
    )
    design.add_argument(
        "--metric-a", default=FGA.key("0.5"), help=f"metric A (default {FGA.key('0.5')}); lambda: the prior best λ's FGA"
    )
    design.add_argument("--metric-b", default=JGA.key(), help=f"metric B (default {JGA.key()})")
    design.add_argument("--r-a", type=float, default=0.4, help="prior corrected r(A, expected rating) (default 0.4)")
    design.add_argument("--r-b", type=float, default=0.3, help="prior corrected r(B, expected rating) (default 0.3)")
    design.add_argument(
        "--grid",
        default="0:10:1001",
        help="lambda: the grid the Analysis page estimates λ* on (its settings' grid), START:STOP:NUM like "
        "numpy.linspace (default 0:10:1001); the predictions are scored there and on 0.05..2",
    )
    design.add_argument("--format", dest="fmt", help="input format of the predictions")
    design.add_argument("--slots", type=int, default=30, help="|S| for slot accuracy (default 30)")
    design.add_argument("--json", action="store_true")


def _emit(
    args: argparse.Namespace,
    result: dict[str, Any],
    tables: Callable[[ModuleType], Iterable[Any]],
    summary: Callable[[ModuleType], Any] | None = None,
) -> int:
    """Print a command's result: its JSON contract with --json, else its ``metrics.present`` tables
    (``tables(present)``, imported only then) as text.  ``summary(summary_module)`` (``metrics.summary``)
    gives the answers in words: they come first in the text, and under ``"summary"`` in the JSON."""
    said = summary(_summary_module()) if summary is not None else None
    if args.json:
        print(json.dumps(result if said is None else {**result, "summary": said.strings()}, indent=1))
        return 0
    from metrics import present

    blocks = [] if said is None else ["Summary\n" + said.text("\n")]
    print("\n\n".join([*blocks, *(table.to_text() for table in tables(present))]))
    return 0


def _summary_module() -> ModuleType:
    from metrics import summary

    return summary


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_table(result: dict[str, Any], *, max_fga_columns: int = 8) -> str:
    """The FGA paper's Table 1 columns plus RSA and F1 (``metrics.registry.SCORE_TABLE``), one row per
    corpus / dialogue / domain; with more than ``max_fga_columns`` λ values, FGA is listed below instead."""
    labels = list(result["corpus"][FGA.name])
    wide = len(labels) <= max_fga_columns
    counts = [m.count for m in METRICS if m.count is not None]
    shown = [(m, lab) for m in SCORE_TABLE for lab in ((labels if wide else []) if m.takes_lambda else [None])]
    header = ["", "#Turns", *(column for _, column in counts), *(m.column(lab) for m, lab in shown)]
    rows = [("corpus", result["corpus"])]
    rows += [(d["id"], d) for d in result["dialogues"]]
    rows += [(f"domain:{name}", d) for name, d in result["domains"].items()]
    body = []
    for name, row in rows:
        cells = [name, str(row["turns"]), *(str(row[key]) for key, _ in counts)]
        cells += [_percent(row[m.name] if lab is None else row[m.name][lab]) for m, lab in shown]
        body.append(cells)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in [header, *body]]
    if not wide:
        lines += ["", f"λ         {FGA.label} (corpus)"]
        lines += [f"{lab:<9} {_percent(result['corpus'][FGA.name][lab])}" for lab in labels]
    lines += ["", f"signature: {result['signature']}"]
    return "\n".join(lines)


def run_score(args: argparse.Namespace) -> int:
    from formats import load_dialogues
    from metrics.corpus import ScoreSettings, parse_lambdas, score_dialogues

    lambdas, labels = parse_lambdas(args.lambdas)
    settings = ScoreSettings(lambdas, labels, args.slots, args.rsa, args.normalise)
    dialogues = load_dialogues(args.paths, args.fmt)
    result = score_dialogues(dialogues, settings, per_dialogue=args.per_dialogue, by_domain=args.by_domain)
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


def _read_gold(path: str) -> dict[tuple[tuple[str, str], str], str]:
    """Gold answers in the study gold-file format: {((item, condition), question): value}."""
    from formats.gold import read_gold

    return {((row["item"], row.get("condition", "") or ""), row["question"]): row["value"] for row in read_gold(path)}


def run_agreement(args: argparse.Namespace) -> int:
    from formats.tidy import read_votes
    from metrics.agreement import scale_answers
    from metrics.analysis import agreement_all
    from metrics.results import Agreement

    table = read_votes(args.votes)
    gold = _read_gold(args.gold) if args.gold else None
    declared = scale_answers(args.scale) if args.scale else args.categories.split(",") if args.categories else None
    result = agreement_all(
        table,
        question=args.question,
        level=args.level,
        resamples=args.bootstrap,
        seed=args.seed,
        gold=gold,
        weights=args.weights,
        categories=declared,
    )
    view = Agreement.from_dict(result)
    return _emit(
        args,
        result,
        lambda present: (present.agreement_table(view), present.annotator_table(view), present.cohen_table(view)),
        lambda summary: summary.summarise_agreement(view),
    )


def _load_for_rating(args: argparse.Namespace) -> tuple[list[Dialogue], list[Vote], int]:
    """The dialogues, the votes that rate (one question and condition) and how many "unsure" votes on them
    were left out as missing (``formats.tidy.UNSURE``)."""
    from formats import load_dialogues
    from formats.tidy import is_unsure, read_votes
    from metrics.analysis import choose_question, select_votes

    table = read_votes(args.ratings, default_question="rating")
    votes = select_votes(table, args.question, args.condition)
    question = choose_question(table, args.question)
    left_out = sum(
        v.question == question and is_unsure(v.value) and (args.condition is None or v.condition == args.condition)
        for v in table.votes
    )
    return load_dialogues(args.paths, args.fmt), votes, left_out


def _note_unsure(result: dict[str, Any], left_out: int) -> None:
    if left_out:
        result.setdefault("notes", []).append(f"{left_out} 'unsure' vote(s) left out as missing")


def run_correlate(args: argparse.Namespace) -> int:
    from metrics.analysis import correlate_study
    from metrics.corpus import ScoreSettings, parse_lambdas
    from metrics.results import CorrelationReport

    lambdas, labels = parse_lambdas(args.lambdas)
    settings = ScoreSettings(lambdas, labels, args.slots, args.rsa, args.normalise)
    dialogues, votes, left_out = _load_for_rating(args)
    result = correlate_study(
        dialogues,
        votes,
        settings,
        rating=args.rating,
        tie=args.tie,
        resamples=args.bootstrap,
        seed=args.seed,
        adjust=args.adjust,
        resample=args.resample,
        family=args.family,
        reference=args.reference,
        fga_lambda=args.fga_lambda,
    )
    _note_unsure(result, left_out)
    view = CorrelationReport.from_dict(result)
    # the differences table too: the correlation table's notes speak of its Zou intervals and adjusted p
    return _emit(
        args,
        result,
        lambda present: [present.correlation_table(view), present.williams_table(view)],
        lambda summary: summary.summarise_correlation(view, condition=args.condition),
    )


def run_calibrate(args: argparse.Namespace) -> int:
    from metrics.analysis import calibrate_study
    from metrics.calibrate import parse_grid
    from metrics.corpus import ScoreSettings
    from metrics.results import Calibration

    grid = parse_grid(args.grid)
    settings = ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid), args.slots, args.rsa, args.normalise)
    dialogues, votes, left_out = _load_for_rating(args)
    result = calibrate_study(
        dialogues,
        votes,
        settings,
        grid,
        rating=args.rating,
        tie=args.tie,
        resamples=args.bootstrap,
        folds=args.folds,
        seed=args.seed,
        resample=args.resample,
    )
    _note_unsure(result, left_out)
    view = Calibration.from_dict(result)
    if args.plot:
        from exports.charts import r_lambda_chart, save_chart

        save_chart(r_lambda_chart(view), args.plot)
    return _emit(
        args, result, lambda present: [present.calibration_table(view)], lambda summary: summary.summarise_calibration(view)
    )


def _pilot(args: argparse.Namespace) -> dict[str, Any]:
    """The three correlations, the single-rating reliability and the ratings per dialogue of a pilot."""
    from collections import Counter

    import numpy as np

    from formats import load_dialogues
    from formats.tidy import read_votes
    from metrics.analysis import correlate_study, select_votes
    from metrics.corpus import ScoreSettings, parse_lambdas
    from metrics.planning import harmonic_count
    from metrics.results import CorrelationReport

    votes = select_votes(read_votes(args.pilot, default_question="rating"), args.question, args.condition)
    asked = [split_key(name) for name in (args.metric_a, args.metric_b)]
    lambdas, labels = parse_lambdas(",".join(lam for metric, lam in asked if metric is FGA and lam is not None) or "1")
    result = correlate_study(load_dialogues(args.paths, args.fmt), votes, ScoreSettings(lambdas, labels), resamples=0)
    view = CorrelationReport.from_dict(result)
    rows = {row.metric: row for row in view.metrics}
    for name in (args.metric_a, args.metric_b):
        found = rows.get(name)
        if found is None or found.pearson is None:
            raise ValueError(f"{args.pilot}: no correlation for metric {name!r} (metrics: {', '.join(rows)})")
    per = view.per_dialogue
    a, b = args.metric_a, args.metric_b
    pairs = np.array([(d.values[a], d.values[b]) for d in per if d.values[a] is not None and d.values[b] is not None])
    return {
        "ratings": args.pilot,
        "metric_a": args.metric_a,
        "metric_b": args.metric_b,
        "n_dialogues": view.n_dialogues,
        "r_a": rows[args.metric_a].pearson,
        "r_b": rows[args.metric_b].pearson,
        "r_ab": float(np.corrcoef(pairs.T)[0, 1]),
        "icc_single": view.human_ceiling.reliability_single,
        # ratings per dialogue behind r_a and r_b: the harmonic mean of the counts (each dialogue's mean has
        # reliability R(k_d); their average is Spearman-Brown at the harmonic mean, as the human ceiling)
        "k": harmonic_count(Counter(v.item for v in votes if v.item in {d.id for d in per if d.rating is not None})),
    }


def run_systems(args: argparse.Namespace) -> int:
    from formats import load_dialogues
    from formats.tidy import read_votes
    from metrics.analysis import select_votes
    from metrics.corpus import ScoreSettings, parse_lambdas
    from metrics.results import SystemLevel
    from metrics.systems import system_level

    groups = {}
    for spec in args.system:
        name, _, path = spec.partition("=")
        if not name or not path:
            raise ValueError(f"--system {spec!r}: give NAME=PATH")
        groups[name] = load_dialogues([path], args.fmt)
    votes = select_votes(read_votes(args.ratings, default_question="rating"), args.question)
    lambdas, labels = parse_lambdas(args.lambdas)
    settings = ScoreSettings(lambdas, labels)
    found = system_level(groups, votes, settings, resamples=args.bootstrap, seed=args.seed, statistic=args.statistic)
    signature = settings.as_signature(
        analysis_unit="system",
        resamples=args.bootstrap,
        seed=args.seed,
        resample_unit="systems+dialogues",
        interval="percentile",
        adjust="holm",
    )
    result = {"signature": str(signature), **found}
    view = SystemLevel.from_dict(result)
    return _emit(args, result, lambda present: present.system_tables(view))


def run_judge(args: argparse.Namespace) -> int:
    from formats.tidy import read_votes
    from metrics.analysis import choose_question
    from metrics.judges import judge_report
    from metrics.results import JudgeReport
    from metrics.signature import Signature

    human = read_votes(args.human)
    question = choose_question(human, args.question)
    judges = read_votes(args.judges, default_question=question)
    result = judge_report(human, judges, question, resamples=args.bootstrap, seed=args.seed)
    signature = Signature(judge="majority-ties-out", resamples=args.bootstrap, seed=args.seed)
    result = {"signature": str(signature), **result}
    view = JudgeReport.from_dict(result)
    return _emit(args, result, lambda present: [present.judge_table(view)])


def run_plan(args: argparse.Namespace) -> int:
    from metrics.planning import budget_plan, plan

    pilot = _pilot(args) if args.pilot else None
    r_a, r_b, r_ab = (pilot["r_a"], pilot["r_b"], pilot["r_ab"]) if pilot else (args.r_a, args.r_b, args.r_ab)
    if None in (r_a, r_b, r_ab):
        raise ValueError("give --r-a, --r-b and --r-ab, or --pilot RATINGS.csv PREDICTIONS...")
    result = plan(r_a, r_b, r_ab, args.alpha, args.power, comparisons=args.comparisons, adjust=args.adjust)
    if pilot:
        result["pilot"] = pilot
    if args.budget:
        icc, k_now = (pilot["icc_single"], pilot["k"]) if pilot else (args.icc, args.k_now)
        if icc is None:
            raise ValueError("a budget plan needs a single rating's reliability: --icc, or a pilot with repeated ratings")
        result["budget"] = budget_plan(r_a, r_b, r_ab, icc, k_now, args.budget, max_k=args.max_k, alpha=result["test_alpha"])
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    needed = result["n_dialogues"]
    test = f"two-sided jackknife-t test of z_a - z_b at alpha {result['test_alpha']:.4g}"
    print(f"r_a = {r_a:.3f}, r_b = {r_b:.3f}, r_ab = {r_ab:.3f}; {test}")
    print(f"family: {result['family']}")
    print(f"dialogues for power {args.power}: {needed if needed is not None else 'more than a million'}")
    print("\n".join(f"  n = {p['n']:>7}  power {p['power']:.2f}" for p in result["power_curve"]))
    if "budget" in result:
        print(f"budget of {args.budget} judgements (single-rating ICC {result['budget']['icc_single']:.2f}):")
        for o in result["budget"]["options"]:
            shown = "-" if o["power"] is None else f"{o['power']:.2f}"
            print(f"  k = {o['k']:>2} x {o['n_dialogues']:>6} dialogues: power {shown}")
    return 0


def _design_scores(args: argparse.Namespace) -> dict[str, Any]:
    """The pool's per-dialogue scores of the two metrics: from --scores (a CSV, one column per metric), or
    by scoring the prediction files."""
    import numpy as np

    if args.scores and args.paths:
        raise ValueError("give --scores SCORES.csv or prediction files, not both")
    if args.scores:
        import csv

        with open(args.scores, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        if not rows:
            raise ValueError(f"{args.scores}: no rows")
        out = {}
        wanted: tuple[str, ...] = (args.metric_a, args.metric_b)
        if args.question == "lambda":
            wanted = tuple(name for name in rows[0] if name.startswith("fga_"))
        for name in wanted:
            if name not in rows[0]:
                raise ValueError(f"{args.scores}: no column {name!r} (columns: {', '.join(rows[0])})")
            try:
                out[name] = np.array([float(r[name]) if r[name] not in ("", None) else np.nan for r in rows])
            except ValueError as err:
                raise ValueError(f"{args.scores}: column {name!r}: {err}") from None
        return out
    if not args.paths:
        raise ValueError("give the pool: --scores SCORES.csv or prediction files")
    from formats import load_dialogues
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings, parse_lambdas

    asked = [split_key(name) for name in (args.metric_a, args.metric_b)]
    lambdas, labels = parse_lambdas(",".join(lam for metric, lam in asked if metric is FGA and lam is not None) or "1")
    if args.question == "lambda":
        from metrics.calibrate import parse_grid
        from metrics.design import design_lambdas

        lambdas = design_lambdas(parse_grid(args.grid))
        labels = tuple(f"{v:g}" for v in lambdas)
    _, values = per_dialogue_metrics(load_dialogues(args.paths, args.fmt), ScoreSettings(lambdas, labels, args.slots))
    return values


def run_design(args: argparse.Namespace) -> int:
    from metrics.calibrate import parse_grid
    from metrics.design import design

    grid = parse_grid(args.grid) if args.question == "lambda" else None  # a grid that does not read: one line
    scores = _design_scores(args)
    proposal = design(
        args.question,
        scores,
        budget=args.budget,
        target_width=args.target_width,
        icc=args.icc,
        r_a=args.r_a,
        r_b=args.r_b,
        metric_a=args.metric_a,
        metric_b=args.metric_b,
        grid=grid,
    )
    result = proposal.as_dict()
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    p = proposal.proposal
    what = {
        "comparison": f"r({args.metric_a}) - r({args.metric_b}), corrected",
        "lambda": f"λ*, the FGA λ that tracks people best (prior: {args.metric_a})",
        "agreement": "ICC(1,1)",
    }[args.question]
    print(f"question: {args.question} ({what}); single-rating ICC {args.icc:g}; pool of {p.pool} dialogues")
    print(f"{'design':<22} {'dialogues':>9} {'overlap':>13} {'judgements':>10} {'95% width':>9}")
    for d in (proposal.proposal, proposal.uniform_k3, proposal.fga_11x100):
        if d is None:
            continue
        overlap = "all" if d.m == d.n else f"{d.m} x k={d.k_overlap}"
        overlap = f"all k={d.k_overlap}" if d.m == d.n else overlap
        print(f"{d.label:<22} {d.n:>9} {overlap:>13} {d.judgements:>10} {d.width:>9.3f}")
    drawn = (
        f"{p.n} dialogues expected, each pool dialogue judged with a probability by its λ score (mean {p.pi_dialogue:.3f}) "
        "and weighted 1/π"
        if p.weighting
        else f"{p.n} dialogues (each pool dialogue judged with probability {p.pi_dialogue:.3f})"
    )
    print(f"designer: {drawn}, 1 vote each except a random {p.m} (probability {p.pi_overlap:.3f}) with {p.k_overlap}")
    saving = proposal.saving_vs_uniform()
    if saving is not None:
        print(f"uniform k = 3 needs {proposal.uniform_needed} judgements for the same width: saving {saving:.2f}")
    for note in proposal.notes:
        print(f"note: {note}")
    return 0


COMMANDS = {
    "design": run_design,
    "systems": run_systems,
    "judge": run_judge,
    "plan": run_plan,
    "score": run_score,
    "agreement": run_agreement,
    "correlate": run_correlate,
    "calibrate": run_calibrate,
}


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (the docs' CLI reference is made from it)."""
    parser = argparse.ArgumentParser(prog="python -m metrics", description="DST metrics and human-judgement analysis")
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_score(subparsers)
    _add_analysis(subparsers)
    _add_design(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:  # ReaderError is a ValueError: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
