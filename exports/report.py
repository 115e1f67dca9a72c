"""A study report, self-contained: HTML (plots as embedded PNG) or Markdown (same content).

Sections: settings and signatures, progress, agreement, majority results (the CoCo
paper's Table 3 layout for coco studies), metric–human correlations with CIs, and the
r(λ) plot with λ*.  Everything from the data (names, keys, conditions, notes) is escaped:
HTML with ``html.escape``, Markdown with backslashes, so it shows as text.  No timestamp
is written, so the same votes and settings give the same report.
"""

from __future__ import annotations

import base64
import html
import re

from metrics import __version__

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def md_escape(text) -> str:
    """Backslash-escape Markdown syntax (and angle brackets, so no HTML gets through).

    >>> md_escape("![x](http://example.invalid/a.png) <b>")
    '\\\\!\\\\[x\\\\]\\\\(http://example\\\\.invalid/a\\\\.png\\\\) \\\\<b\\\\>'
    """
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(pair) -> str:
    return "—" if not pair else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def sections(data, analysis: dict, settings) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """(heading, table header, table rows, paragraphs) per section; plain strings, unescaped."""
    progress = data.progress_report
    out = []
    settings_rows = [
        ["study", data.name], ["kind", data.kind], ["overlap (k)", str(data.overlap)],
        ["agreement level", settings.level], ["majority ties", settings.tie], ["human rating", settings.rating],
        ["FGA λ values", ", ".join(f"{v:g}" for v in settings.lambdas)],
        ["λ grid", f"linspace {settings.grid[0]:g}..{settings.grid[1]:g}, {settings.grid[2]} points"],
        ["bootstrap resamples", str(settings.resamples)], ["cross-validation folds", str(settings.folds)],
        ["seed", str(settings.seed)], ["DST Judge", __version__],
    ]  # fmt: skip
    named = ("agreement", "correlation", "calibration")
    signatures = [f"{name}: {analysis[name]['signature']}" for name in named if name in analysis]
    out.append(("Settings", ["setting", "value"], settings_rows, signatures))
    out.append(("Progress", ["", ""], [
        ["items", str(progress["items"])], ["items complete", str(progress["items_complete"])],
        ["judgements", f"{progress['judgements_done']} / {progress['judgements_needed']}"],
        ["annotators", str(len(progress["annotators"]))], ["places held now", str(sum(progress.get("held", {}).values()))],
        ["vote events", str(progress["vote_events"])],
    ], []))  # fmt: skip
    if "agreement" not in analysis:
        out.append(("Results", [], [], ["No votes yet."]))
        return out
    header = ["question", "items", "annotators", "% agreement", "Krippendorff's α", "α 95% CI", "Fleiss' κ", "Gwet's AC1"]
    rows, notes = [], []
    for question, report in analysis["agreement"]["questions"].items():
        rows.append([question, str(report["n_items"]), str(report["n_annotators"]), _fmt(report["percent_agreement"]),
                     _fmt(report["krippendorff_alpha"]), _ci(report["ci"]["krippendorff_alpha"]),
                     _fmt(report["fleiss_kappa"]), _fmt(report["gwet_ac1"])])  # fmt: skip
        notes += [f"{question}: {note}" for note in report["notes"]]
    out.append(("Agreement", header, rows, notes))
    if "coco" in analysis:
        coco_rows = [[r["condition"], _fmt(r["human_like_pct"], 1), _fmt(r["correct_pct"], 1),
                      f"{r['human_like_n']} / {r['correct_n']}", f"{r['human_like_ties']} / {r['correct_ties']}",
                      _fmt(r["human_like_alpha"]), _fmt(r["correct_alpha"])] for r in analysis["coco"]]  # fmt: skip
        out.append(("Results (CoCo Table 3 layout)",
                    ["condition", "human-like %", "correct %", "items", "ties", "α human-like", "α correct"], coco_rows,
                    ["By majority vote over the items with a majority; ties are counted, not labelled."]))  # fmt: skip
    majority_rows = []
    for question, table in analysis["majority"].items():
        labels: dict[str, int] = {}
        for row in table["rows"]:
            label = "no majority" if row["majority"] is None else row["majority"]
            labels[label] = labels.get(label, 0) + 1
        majority_rows.append([question, ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())), str(table["n_ties"])])
    out.append(("Majority labels", ["question", "items per majority label", "ties"], majority_rows,
                [f"Tie policy: {settings.tie}."]))  # fmt: skip
    if "correlation" in analysis:
        c = analysis["correlation"]
        rows = [[r["metric"], _fmt(r["pearson"]), _ci(r["pearson_ci"]), "—" if r["p_value"] is None else f"{r['p_value']:.2g}",
                 _ci(r["bootstrap_ci"]), _fmt(r["spearman"]), _fmt(r["kendall"])] for r in c["metrics"]]  # fmt: skip
        paragraphs = [f"System (condition): {analysis.get('condition', '')}; {c['n_dialogues']} dialogues, "
                      f"{c['n_ratings']} ratings ({c['rating']}).",
                      f"Human ceiling (each annotator vs the mean of the others): {_fmt(c['human_ceiling']['mean_pearson'])}.",
                      *c["notes"]]  # fmt: skip
        out.append(("Metrics against human ratings", ["metric", "Pearson r", "95% CI (Fisher z)", "p", "bootstrap 95% CI",
                                                      "Spearman", "Kendall"], rows, paragraphs))  # fmt: skip
    elif "correlation_note" in analysis:
        out.append(("Metrics against human ratings", [], [], [analysis["correlation_note"]]))
    if "calibration" in analysis:
        k = analysis["calibration"]
        rows = [["best λ", _fmt(k["best_lambda"]), _ci(k["ci_lambda"])], ["r at best λ", _fmt(k["r_best"]), _ci(k["ci_r"])],
                ["r at λ = 0 (JGA)", _fmt(k["r_jga"]), ""], ["r at λ = ∞ (turn match)", _fmt(k["r_turn"]), ""],
                ["cross-validated r", _fmt(k["cv_r"]), f"{len(k['cv_folds'])} folds"],
                ["bootstrap refits at a grid bound", _fmt(k["at_bound"]), ""]]  # fmt: skip
        out.append(("λ calibration for FGA", ["", "value", "95% CI"], rows, list(k["notes"])))
    return out


def _plot_png(analysis: dict) -> bytes | None:
    if "calibration" not in analysis:
        return None
    from exports.charts import png_bytes, r_lambda_chart

    return png_bytes(r_lambda_chart(analysis["calibration"]))


def to_html(data, analysis: dict, settings) -> bytes:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # No scripts and no outside resources: a CSP that forbids both, in case anything slipped through.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">",
        f"<title>DST Judge report: {e(data.name)}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .6em;text-align:left}"
        "th{background:#eee}p.note{color:#555;font-size:.9em;overflow-wrap:anywhere}</style></head><body>",
        f"<h1>DST Judge report: {e(data.name)}</h1>",
    ]
    for heading, header, rows, paragraphs in sections(data, analysis, settings):
        parts.append(f"<h2>{e(heading)}</h2>")
        if rows:
            parts.append("<table>")
            if any(header):
                parts.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
            parts.append("</table>")
        parts += [f'<p class="note">{e(p)}</p>' for p in paragraphs]
        if heading.startswith("λ calibration"):
            png = _plot_png(analysis)
            if png:
                data_uri = base64.b64encode(png).decode()
                parts.append(f'<img alt="r(λ) with its bootstrap band" width="640" src="data:image/png;base64,{data_uri}">')
    parts.append("</body></html>")
    return ("\n".join(parts) + "\n").encode()


def to_markdown(data, analysis: dict, settings) -> bytes:
    lines = [f"# DST Judge report: {md_escape(data.name)}", ""]
    for heading, header, rows, paragraphs in sections(data, analysis, settings):
        lines += [f"## {md_escape(heading)}", ""]
        if rows:
            lines.append("| " + " | ".join(md_escape(h) for h in header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
            lines.append("")
        lines += [md_escape(p) + "  " for p in paragraphs]
        if paragraphs:
            lines.append("")
        if heading.startswith("λ calibration"):
            png = _plot_png(analysis)
            if png:
                lines += [f"![r(λ) with its bootstrap band](data:image/png;base64,{base64.b64encode(png).decode()})", ""]
    return "\n".join(lines).encode()
