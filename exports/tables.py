"""Tidy tables: votes (CSV, JSON lines, Parquet), majority labels, agreement, correlation,
calibration.  Every CSV goes through :func:`formats.safety.neutralise` (spreadsheet safety).

Column contracts:

- votes: item, condition, annotator, question, value, comment, created_at, seconds, annotator_kind
  (``account`` or ``crowd``), platform and platform_id (a crowd worker's platform and its worker id)
- majority: item, condition, question, n_votes, majority, tie, soft, median, counts, final, final_source
  (``counts`` is a JSON object {answer: votes}; ``final`` is the adjudicated label where there is one,
  ``final_source`` says ``adjudicated`` or ``majority``); the free-text ``transcription`` is left out
- agreement: question, n_items, n_annotators, n_votes, level, then each coefficient with
  ``_low`` / ``_high`` (the 95 % interval the agreement report names in its ``ci_method``: by default
  Fisher z with the jackknife SE over items and t; a percentile bootstrap over items where asked), notes
- correlation: metric, n, pearson, pearson_low, pearson_high, p_value (the test of r = 0 that the
  pearson_low / pearson_high interval inverts: p < 0.05 exactly when it excludes 0), bootstrap_low,
  bootstrap_high, spearman, kendall, signature, then kind (``metric``; or ``difference``: one row per
  comparison, metric and metric_b, diff = r_metric − r_metric_b with diff_low / diff_high by the
  jackknife-t of z_metric − z_metric_b over dialogues mapped to r, t of Williams' test, p_value of the
  interval's own test, p_adjusted and adjust (holm, bonferroni, bh or none) over the
  declared comparisons (the signature's ``family``; diff_low/diff_high at the level that agrees with
  the adjustment, ``metrics.comparisons``), n_needed:
  dialogues for 80% power to detect the observed difference); a ``ceiling`` row (pearson = r_max with
  its interval, note = the method); one ``note`` row per note
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence

from formats.safety import neutralise_row

VOTE_COLUMNS = (
    "item",
    "condition",
    "annotator",
    "question",
    "value",
    "comment",
    "created_at",
    "seconds",
    "annotator_kind",
    "platform",
    "platform_id",
)
MAJORITY_COLUMNS = (
    "item",
    "condition",
    "question",
    "n_votes",
    "majority",
    "tie",
    "soft",
    "median",
    "counts",
    "final",
    "final_source",
)
COEFFICIENTS = ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1")
AGREEMENT_COLUMNS = (
    "question",
    "n_items",
    "n_annotators",
    "n_votes",
    "level",
    *(f"{c}{end}" for c in COEFFICIENTS for end in ("", "_low", "_high")),
    "notes",
)
CORRELATION_COLUMNS = (
    "metric",
    "n",
    "pearson",
    "pearson_low",
    "pearson_high",
    "p_value",
    "bootstrap_low",
    "bootstrap_high",
    "spearman",
    "kendall",
    "signature",
    "kind",
    "metric_b",
    "diff",
    "diff_low",
    "diff_high",
    "t",
    "p_adjusted",
    "adjust",
    "n_needed",
    "note",
)


def csv_bytes(rows: Iterable[dict], columns: Sequence[str]) -> bytes:
    buffer = io.StringIO()
    # CRLF (RFC 4180): Python's csv quotes a field only for the characters of its line terminator,
    # so with "\n" alone a lone "\r" in a comment would be written bare and split the row.
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(neutralise_row({k: ("" if v is None else v) for k, v in row.items()}))
    return buffer.getvalue().encode()


def votes_csv(rows: list[dict]) -> bytes:
    return csv_bytes(rows, VOTE_COLUMNS)


def votes_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps({k: row.get(k) for k in VOTE_COLUMNS}, ensure_ascii=False) + "\n" for row in rows).encode()


def votes_parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.float64() if c == "seconds" else pa.string()) for c in VOTE_COLUMNS])
    table = pa.Table.from_pylist([{k: row.get(k) for k in VOTE_COLUMNS} for row in rows], schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def majority_csv(majority: dict, adjudications: dict | None = None) -> bytes:
    """Majority rows; ``final`` is the adjudicated label where an adjudicator gave one (``final_source``
    ``adjudicated``), else the majority (``majority``; empty when tied)."""
    from metrics.results import majority_tables  # the statistics stack: not on the login path (exports.formats)

    adjudications = adjudications or {}
    rows = []
    for question, table in majority_tables(majority).items():
        for row in table.rows:
            adjudicated = adjudications.get((row.item, row.condition, question))
            final, source = (adjudicated["value"], "adjudicated") if adjudicated else (row.majority, "majority")
            rows.append(
                {
                    "item": row.item,
                    "condition": row.condition,
                    "question": question,
                    "n_votes": row.n_votes,
                    "majority": row.majority,
                    "tie": int(row.tie),
                    "soft": row.soft,
                    "median": row.median,
                    "counts": json.dumps(dict(row.counts), ensure_ascii=False),
                    "final": final,
                    "final_source": source if final is not None else "",
                }
            )
    return csv_bytes(rows, MAJORITY_COLUMNS)


def agreement_csv(agreement: dict) -> bytes:
    from metrics.results import Agreement  # the statistics stack: not on the login path (exports.formats)

    rows = []
    for question, report in Agreement.of(agreement).questions.items():
        row = {
            "question": question,
            "n_items": report.n_items,
            "n_annotators": report.n_annotators,
            "n_votes": report.n_votes,
            "level": report.level,
        }
        for name in COEFFICIENTS:
            ci = report.interval(name) or (None, None)
            row.update({name: report.estimate(name), f"{name}_low": ci[0], f"{name}_high": ci[1]})
        row["notes"] = "; ".join(report.notes)
        rows.append(row)
    return csv_bytes(rows, AGREEMENT_COLUMNS)


def correlation_csv(correlation: dict) -> bytes:
    from metrics.results import CorrelationReport  # the statistics stack: not on the login path (exports.formats)

    view = CorrelationReport.of(correlation)
    rows = []
    for row in view.metrics:
        fisher = row.pearson_ci or (None, None)
        boot = row.bootstrap_ci or (None, None)
        rows.append(
            {
                "metric": row.metric,
                "n": row.n,
                "pearson": row.pearson,
                "pearson_low": fisher[0],
                "pearson_high": fisher[1],
                "p_value": row.p_value,
                "bootstrap_low": boot[0],
                "bootstrap_high": boot[1],
                "spearman": row.spearman,
                "kendall": row.kendall,
                "note": row.note,
                "signature": view.signature,
                "kind": "metric",
            }
        )
    for w in view.williams:  # then one row per pair of metrics: the difference and its test
        diff_ci = w.diff_ci or (None, None)
        rows.append(
            {
                "kind": "difference",
                "metric": w.a,
                "metric_b": w.b,
                "n": w.n,
                "diff": w.diff,
                "diff_low": diff_ci[0],
                "diff_high": diff_ci[1],
                "t": w.t,
                "p_value": w.p_value,
                "p_adjusted": w.p_adjusted,
                "adjust": w.adjust or "none",
                "n_needed": w.n_needed,
                "signature": view.signature,
            }
        )
    ceiling = view.human_ceiling
    if ceiling.r_max is not None or ceiling.note:
        ci = ceiling.ci or (None, None)
        rows.append(
            {
                "kind": "ceiling",
                "metric": "human_ceiling",
                "n": view.n_dialogues,
                "pearson": ceiling.r_max,
                "pearson_low": ci[0],
                "pearson_high": ci[1],
                "note": ceiling.note or ceiling.method or None,
                "signature": view.signature,
            }
        )
    rows += [{"kind": "note", "note": note, "signature": view.signature} for note in view.notes]
    return csv_bytes(rows, CORRELATION_COLUMNS)


def calibration_json(calibration: dict) -> bytes:
    return (json.dumps(calibration, indent=1, allow_nan=False) + "\n").encode()
