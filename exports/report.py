"""A study report, self-contained: HTML (plots as embedded PNG) or Markdown (same content).

Sections: the summary in words with the forest plot and the agreement chart, settings and
signatures, progress, agreement, majority results (the CoCo
paper's Table 3 layout for coco studies), metric–human correlations with CIs, and the
r(λ) plot with λ*.  Everything from the data (names, keys, conditions, notes) is escaped:
HTML with ``html.escape``, Markdown with backslashes, so it shows as text.  No timestamp
is written, so the same votes and settings give the same report.
"""

from __future__ import annotations

import base64
import html
import re

from exports.analysis_plan import report_rows
from metrics import __version__
from metrics.present import Table, analysis_tables
from metrics.results import StudyAnalysis
from metrics.summary import summarise

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def md_escape(text) -> str:
    """Backslash-escape Markdown syntax (and angle brackets, so no HTML gets through).

    >>> md_escape("![x](http://example.invalid/a.png) <b>")
    '\\\\!\\\\[x\\\\]\\\\(http://example\\\\.invalid/a\\\\.png\\\\) \\\\<b\\\\>'
    """
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def sections(data, analysis: StudyAnalysis | dict, settings) -> list[Table]:
    """The report's tables: its settings and the study's progress, then the analysis tables that the
    Analysis page and the CLI show too (``metrics.present``); plain strings, unescaped."""
    view = StudyAnalysis.of(analysis)
    progress = data.progress_report
    settings_rows = [
        ["study", data.name],
        ["kind", data.kind],
        ["overlap (k)", str(data.overlap)],
        ["agreement level", settings.level],
        ["majority ties", settings.tie],
        ["human rating", settings.rating],
        ["FGA λ values", ", ".join(f"{v:g}" for v in settings.lambdas)],
        ["λ grid", f"linspace {settings.grid[0]:g}..{settings.grid[1]:g}, {settings.grid[2]} points"],
        ["bootstrap resamples", str(settings.resamples)],
        ["cross-validation folds", str(settings.folds)],
        ["seed", str(settings.seed)],
        ["metric comparisons", settings.family],
        ["adjustment over the comparisons (p and intervals)", settings.adjust],
        ["agreement weights (Cohen's κ, AC2)", settings.weights],
        ["bootstrap over", settings.resample],
        ["DST Judge", __version__],
        # the frozen analysis plan (or "not frozen"), then a flag row per deviation from it and per
        # settings change made after votes arrived (exports.analysis_plan)
        *report_rows(getattr(data, "settings", None), settings.to_dict(), getattr(data, "late_settings_changes", [])),
    ]
    progress_rows = [
        ["items", str(progress["items"])],
        ["items complete", str(progress["items_complete"])],
        ["judgements", f"{progress['judgements_done']} / {progress['judgements_needed']}"],
        ["annotators", str(len(progress["annotators"]))],
        ["places held now", str(sum(progress.get("held", {}).values()))],
        ["vote events", str(progress["vote_events"])],
        *([["items left out by the adaptive design", str(progress["items_left_out"])]] if progress.get("items_left_out") else []),
    ]
    tables = [
        # the answers first, in words (metrics.summary), with the forest plot and the agreement chart under them
        Table(SUMMARY, (), [], summarise(view).strings()),
        Table("Settings", ("setting", "value"), settings_rows, ["Each result below ends with its signature."]),
        Table("Progress", ("", ""), progress_rows),
        *analysis_tables(view, settings.tie),
    ]
    adjudicated = getattr(data, "adjudications", {})
    if adjudicated:
        majority = {
            (row.item, row.condition, question): row.majority for question, table in view.majority.items() for row in table.rows
        }
        rows = [
            [
                key,
                condition,
                question,
                "—" if majority.get((key, condition, question)) is None else str(majority[(key, condition, question)]),
                label["value"],
                label["by"],
            ]
            for (key, condition, question), label in sorted(adjudicated.items())
        ]
        tables.append(
            Table(
                "Adjudicated items",
                ("item", "condition", "question", "majority", "adjudicated", "by"),
                rows,
                [f"{len(rows)} label(s) set by an adjudicator; majority-csv gives them as final (final_source adjudicated)."],
            )
        )
    return tables


SUMMARY = "Summary"


def _charts(heading: str, analysis: StudyAnalysis) -> list[tuple[str, bytes]]:
    """The pictures under a section (alt text, PNG): under the summary the forest plot of every metric
    against the ratings and the agreement chart; under the λ calibration r(λ); under the system level the
    metrics' system-level statistic with its clusters."""
    from exports.charts import agreement_chart, forest_chart, png_bytes, r_lambda_chart, system_chart

    pictures = []
    if heading == SUMMARY:
        if analysis.correlation is not None:
            alt = "each metric's correlation with the human rating, its interval and the human ceiling"
            pictures.append((alt, png_bytes(forest_chart(analysis.correlation))))
        if analysis.agreement is not None:
            alt = "agreement per question with its interval, over the conventional readings"
            pictures.append((alt, png_bytes(agreement_chart(analysis.agreement))))
        return pictures
    if heading.startswith("System level:") and "systems as the unit" in heading and analysis.system_level is not None:
        alt = "each metric's system-level correlation with the people's ranking, its interval and its cluster"
        return [(alt, png_bytes(system_chart(analysis.system_level)))]
    if heading.startswith("λ calibration") and analysis.calibration is not None:
        return [("r(λ) with its bootstrap band, λ* and its interval", png_bytes(r_lambda_chart(analysis.calibration)))]
    return []


def to_html(data, analysis: StudyAnalysis | dict, settings) -> bytes:
    view = StudyAnalysis.of(analysis)
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
    for table in sections(data, view, settings):
        heading, header, rows, paragraphs = table.title, table.columns, table.rows, table.notes
        parts.append(f"<h2>{e(heading)}</h2>")
        if rows:
            parts.append("<table>")
            if any(header):
                parts.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
            parts.append("</table>")
        parts += [f'<p class="note">{e(p)}</p>' for p in paragraphs]
        for alt, png in _charts(heading, view):
            data_uri = base64.b64encode(png).decode()
            parts.append(f'<img alt="{e(alt)}" width="640" src="data:image/png;base64,{data_uri}">')
    parts.append("</body></html>")
    return ("\n".join(parts) + "\n").encode()


def to_markdown(data, analysis: StudyAnalysis | dict, settings) -> bytes:
    view = StudyAnalysis.of(analysis)
    lines = [f"# DST Judge report: {md_escape(data.name)}", ""]
    for table in sections(data, view, settings):
        heading, header, rows, paragraphs = table.title, table.columns, table.rows, table.notes
        lines += [f"## {md_escape(heading)}", ""]
        if rows:
            lines.append("| " + " | ".join(md_escape(h) for h in header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
            lines.append("")
        lines += [md_escape(p) + "  " for p in paragraphs]
        if paragraphs:
            lines.append("")
        for alt, png in _charts(heading, view):
            lines += [f"![{md_escape(alt)}](data:image/png;base64,{base64.b64encode(png).decode()})", ""]
    return "\n".join(lines).encode()
