"""The export formats: one entry per format, one function that writes any of them.

A writer returns files as ``(relative path, bytes)``: one file for the table formats and
reports, one per session (``dstc-labels``) or per dialogue (``fga-text``).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from annotate.analysis import AnalysisSettings, compute, dialogues_from_items, gold_answers
from exports import dstc_labels, report, tables
from exports.study_data import StudyData
from formats import fga_text


@dataclass(frozen=True)
class Format:
    name: str
    file_name: str  # for single-file formats; a folder layout for multi-file ones
    multi_file: bool = False
    kinds: tuple[str, ...] = ("satisfaction", "coco", "slu")
    description: str = ""


FORMATS = {
    f.name: f
    for f in (
        Format("votes-csv", "votes.csv", description="current votes (every event with --history), tidy CSV"),
        Format("votes-jsonl", "votes.jsonl", description="the same as JSON lines"),
        Format("votes-parquet", "votes.parquet", description="the same as Parquet"),
        Format("majority-csv", "majority.csv", description="majority label, soft label, median and counts per item and question"),
        Format("agreement-csv", "agreement.csv", description="agreement coefficients with bootstrap CIs per question"),
        Format("correlation-csv", "correlation.csv", kinds=("satisfaction",), description="every metric vs human ratings"),
        Format("calibration-json", "calibration.json", kinds=("satisfaction",), description="λ calibration for FGA"),
        Format("dstc-labels", "<session-id>/dstc.labels.json", True, ("slu",), "DSTC handbook label files per session"),
        Format("fga-text", "<condition>/<dialogue id>.txt", True, ("satisfaction",), "FGA human-evaluation text per dialogue"),
        Format("report-html", "report.html", description="self-contained study report"),
        Format("report-md", "report.md", description="the same report as Markdown"),
    )
}


def _analysis(data: StudyData, settings: AnalysisSettings, condition: str | None, analysis=None) -> dict:
    """The study's analysis: from ``analysis(condition)`` when the caller has it (the app's shared
    per-study cache), else computed here from the loaded data."""
    dialogues = dialogues_from_items(data.items) if data.kind == "satisfaction" else {}
    if condition is not None and data.kind == "satisfaction" and condition not in dialogues:
        raise ValueError(f"study {data.name!r} has no condition {condition!r} (conditions: {', '.join(dialogues)})")
    if analysis is not None:
        return analysis(condition)
    return compute(data.kind, data.vote_table(), dialogues, settings, condition=condition, gold=gold_answers(data.items))


def _safe_folder(name: str) -> str:
    return name.replace("/", "_").replace("\\", "_").lstrip(".") or "default"


def write(
    data: StudyData, name: str, settings: AnalysisSettings | None = None, *, history: bool = False, condition: str | None = None,
    analysis=None,
) -> list[tuple[str, bytes]]:
    """The files of one export format for a study.  Raises ValueError for a wrong kind or no data.

    ``analysis(condition) -> dict``, when given, supplies the analysis for these settings (the app
    passes its shared cache, so the page, every export and the report compute it once)."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; formats: {', '.join(FORMATS)}")
    fmt = FORMATS[name]
    if data.kind not in fmt.kinds:
        raise ValueError(f"{name} is for {' and '.join(fmt.kinds)} studies; {data.name!r} is a {data.kind} study")
    settings = settings or AnalysisSettings()
    rows = data.history if history else data.votes
    if name == "votes-csv":
        return [(fmt.file_name, tables.votes_csv(rows))]
    if name == "votes-jsonl":
        return [(fmt.file_name, tables.votes_jsonl(rows))]
    if name == "votes-parquet":
        return [(fmt.file_name, tables.votes_parquet(rows))]
    if name == "dstc-labels":
        return dstc_labels.files(data)
    if name == "fga-text":
        out = []
        for condition_name, dialogues in dialogues_from_items(data.items).items():
            if condition is not None and condition_name != condition:
                continue
            for dialogue in dialogues:
                path = f"{_safe_folder(condition_name)}/{fga_text.file_name(dialogue.id)}"
                out.append((path, fga_text.dialogue_text(dialogue).encode()))
        return out
    analysis = _analysis(data, settings, condition, analysis)
    if name == "report-html":
        return [(fmt.file_name, report.to_html(data, analysis, settings))]
    if name == "report-md":
        return [(fmt.file_name, report.to_markdown(data, analysis, settings))]
    if "agreement" not in analysis:
        raise ValueError(f"study {data.name!r} has no votes yet")
    if name == "majority-csv":
        return [(fmt.file_name, tables.majority_csv(analysis["majority"]))]
    if name == "agreement-csv":
        return [(fmt.file_name, tables.agreement_csv(analysis["agreement"]))]
    key = "correlation" if name == "correlation-csv" else "calibration"
    if key not in analysis:
        raise ValueError(analysis.get("correlation_note", f"no {key} for study {data.name!r}"))
    if name == "correlation-csv":
        return [(fmt.file_name, tables.correlation_csv(analysis["correlation"]))]
    return [(fmt.file_name, tables.calibration_json(analysis["calibration"]))]


def as_download(files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """One file as it is, several as a zip: (bytes, suggested file name)."""
    if len(files) == 1 and "/" not in files[0][0]:
        return files[0][1], files[0][0]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, content in files:
            archive.writestr(path, content)
    return buffer.getvalue(), "export.zip"
