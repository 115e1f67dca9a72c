"""``python -m metrics``: score DST predictions (more commands join as they land).

    python -m metrics score PATH... [--format F] [--lambdas 0.25,0.5,0.75,1 | START:STOP:NUM]
                                    [--slots N] [--rsa macro|macro-skip|micro] [--normalise]
                                    [--per-dialogue] [--by-domain] [--json]

Imports stay lean (numpy and the readers only) so that a whole-process run is fast.
"""

from __future__ import annotations

import argparse
import json
import sys


def _add_score(subparsers) -> None:
    score = subparsers.add_parser("score", help="score predictions: JGA, M2, FGA(λ), SA, AGA, RSA, F1")
    score.add_argument("paths", nargs="+", metavar="PATH", help="prediction files or folders (pooled into one corpus)")
    score.add_argument("--format", dest="fmt", help="input format (default: detected per file)")
    score.add_argument("--lambdas", default="0.25,0.5,0.75,1", help="list 0.25,0.5 or range START:STOP:NUM")
    score.add_argument("--slots", type=int, default=30, help="|S| for slot accuracy (default 30, MultiWOZ)")
    score.add_argument("--rsa", default="macro", choices=("macro", "macro-skip", "micro"), help="RSA aggregation over turns")
    score.add_argument("--normalise", "--normalize", action="store_true", help="lower-case values and fold white space")
    score.add_argument("--per-dialogue", action="store_true", help="also score each dialogue")
    score.add_argument("--by-domain", action="store_true", help="also score each domain")
    score.add_argument("--json", action="store_true", help="print the JSON contract instead of tables")


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_table(result: dict, *, max_fga_columns: int = 8) -> str:
    """The FGA paper's Table 1 columns plus RSA and F1, one row per corpus / dialogue / domain."""
    labels = list(result["corpus"]["fga"])
    wide = len(labels) <= max_fga_columns
    header = ["", "#Turns", "#M1", "#M2", "JGA", "SA", "AGA", *(f"FGA_{lab}" for lab in labels if wide), "RSA", "F1"]
    rows = [("corpus", result["corpus"])]
    rows += [(d["id"], d) for d in result["dialogues"]]
    rows += [(f"domain:{name}", d) for name, d in result["domains"].items()]
    body = []
    for name, row in rows:
        cells = [name, str(row["turns"]), str(row["exact_matches"]), str(row["turn_matches"])]
        cells += [_percent(row[k]) for k in ("jga", "sa", "aga")]
        if wide:
            cells += [_percent(row["fga"][lab]) for lab in labels]
        cells += [_percent(row["rsa"]), _percent(row["f1"])]
        body.append(cells)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in [header, *body]]
    if not wide:
        lines += ["", "λ         FGA (corpus)"]
        lines += [f"{lab:<9} {_percent(result['corpus']['fga'][lab])}" for lab in labels]
    lines += ["", f"signature: {result['signature']}"]
    return "\n".join(lines)


def run_score(args) -> int:
    from annotate.readers import load_dialogues
    from metrics.corpus import ScoreSettings, parse_lambdas, score_dialogues

    lambdas, labels = parse_lambdas(args.lambdas)
    settings = ScoreSettings(lambdas, labels, args.slots, args.rsa, args.normalise)
    dialogues = load_dialogues(args.paths, args.fmt)
    result = score_dialogues(dialogues, settings, per_dialogue=args.per_dialogue, by_domain=args.by_domain)
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


COMMANDS = {"score": run_score}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metrics", description="DST metrics and human-judgement analysis")
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_score(subparsers)
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:  # ReaderError is a ValueError: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
