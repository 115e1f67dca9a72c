"""The export formats: a registry with one entry per format, each holding its writer.

A writer takes an :class:`ExportRequest` (the study as plain data, the settings, and the study's
analysis on demand) and returns files as ``(relative path, bytes)``: one file for the table formats
and reports, one per session (``dstc-labels``) or per dialogue (``fga-text``).

Generic formats serve every kind; the others are offered by the task kinds that name them
(``Kind.export_formats``; the kind registry calls :func:`offer`), so this module names no kind.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from exports import dstc_labels, tables
from exports.study import StudyData
from formats import fga_text

if TYPE_CHECKING:  # the statistics are imported when a report or an analysis is written (issue 36)
    from metrics.analysis import AnalysisSettings


@dataclass(frozen=True)
class ExportRequest:
    data: StudyData
    settings: AnalysisSettings
    history: bool
    condition: str | None
    analysis: Callable[[], dict]  # the study's analysis for these settings and condition, computed once when asked


@dataclass(frozen=True)
class Format:
    name: str
    file_name: str  # for single-file formats; a folder layout for multi-file ones
    write: Callable[[ExportRequest], list[tuple[str, bytes]]]
    description: str = ""
    generic: bool = True  # every kind; else only the kinds that offer it
    unit: str = ""  # multi-file formats: what one file holds ("session", "dialogue")

    @property
    def multi_file(self) -> bool:
        return bool(self.unit)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds that have this format (every registered kind for a generic format)."""
        return tuple(_KINDS) if self.generic else tuple(k for k, names in _KINDS.items() if self.name in names)


_KINDS: dict[str, tuple[str, ...]] = {}  # kind -> the non-generic formats it offers


def offer(kind: str, names: tuple[str, ...] = ()) -> None:
    """A task kind's registration: the generic formats, and ``names`` (checked to exist)."""
    unknown = [n for n in names if n not in FORMATS or FORMATS[n].generic]
    if unknown:
        raise ValueError(f"kind {kind!r} offers unknown or generic formats: {', '.join(unknown)}")
    _KINDS[kind] = tuple(names)


def _rows(request: ExportRequest) -> list[dict]:
    return request.data.history if request.history else request.data.votes


def _analysis_part(request: ExportRequest, key: str) -> dict:
    analysis = request.analysis()
    if "agreement" not in analysis:
        raise ValueError(f"study {request.data.name!r} has no votes yet")
    if key not in analysis:
        raise ValueError(analysis.get("correlation_note", f"no {key} for study {request.data.name!r}"))
    return analysis[key]


def _fga_text(request: ExportRequest) -> list[tuple[str, bytes]]:
    out = []
    for condition_name, dialogues in request.data.dialogues.items():
        if request.condition is not None and condition_name != request.condition:
            continue
        for dialogue in dialogues:
            path = f"{_safe_folder(condition_name)}/{fga_text.file_name(dialogue.id)}"
            out.append((path, fga_text.dialogue_text(dialogue).encode()))
    return out


def _single(file_name: str, content: Callable[[ExportRequest], bytes]):
    return lambda request: [(file_name, content(request))]


def _safe_folder(name: str) -> str:
    return name.replace("/", "_").replace("\\", "_").lstrip(".") or "default"


def _report_html(request: ExportRequest) -> bytes:
    from exports import report  # numpy and the summaries: the kinds register their formats without them

    return report.to_html(request.data, request.analysis(), request.settings)


def _report_md(request: ExportRequest) -> bytes:
    from exports import report

    return report.to_markdown(request.data, request.analysis(), request.settings)


FORMATS = {
    f.name: f
    for f in (
        Format(
            "votes-csv",
            "votes.csv",
            _single("votes.csv", lambda r: tables.votes_csv(_rows(r))),
            "current votes (or every vote event), tidy CSV",
        ),
        Format(
            "votes-jsonl", "votes.jsonl", _single("votes.jsonl", lambda r: tables.votes_jsonl(_rows(r))), "the same as JSON lines"
        ),
        Format(
            "votes-parquet",
            "votes.parquet",
            _single("votes.parquet", lambda r: tables.votes_parquet(_rows(r))),
            "the same as Parquet",
        ),
        Format(
            "majority-csv",
            "majority.csv",
            _single("majority.csv", lambda r: tables.majority_csv(_analysis_part(r, "majority"), r.data.adjudications)),
            "majority label, soft label, median and counts per item and question",
        ),
        Format(
            "agreement-csv",
            "agreement.csv",
            _single("agreement.csv", lambda r: tables.agreement_csv(_analysis_part(r, "agreement"))),
            "agreement coefficients with 95% intervals per question",
        ),
        Format(
            "correlation-csv",
            "correlation.csv",
            _single("correlation.csv", lambda r: tables.correlation_csv(_analysis_part(r, "correlation"))),
            "every metric vs human ratings",
            generic=False,
        ),
        Format(
            "calibration-json",
            "calibration.json",
            _single("calibration.json", lambda r: tables.calibration_json(_analysis_part(r, "calibration"))),
            "λ calibration for FGA",
            generic=False,
        ),
        Format(
            "dstc-labels",
            "<session-id>/dstc.labels.json",
            lambda r: dstc_labels.files(r.data),
            "DSTC handbook label files per session",
            generic=False,
            unit="session",
        ),
        Format(
            "fga-text",
            "<condition>/<dialogue id>.txt",
            _fga_text,
            "FGA human-evaluation text per dialogue",
            generic=False,
            unit="dialogue",
        ),
        Format(
            "report-html",
            "report.html",
            _single("report.html", _report_html),
            "self-contained study report",
        ),
        Format(
            "report-md",
            "report.md",
            _single("report.md", _report_md),
            "the same report as Markdown",
        ),
    )
}


def write(
    data: StudyData,
    name: str,
    settings: AnalysisSettings | None = None,
    *,
    history: bool = False,
    condition: str | None = None,
    analysis=None,
) -> list[tuple[str, bytes]]:
    """The files of one export format for a study.  Raises ValueError for a wrong kind or no data.

    ``analysis(condition) -> dict``, when given, supplies the analysis for these settings (the app
    passes its shared cache, so the page, every export and the report compute it once); else the
    study's own ``analyser`` computes it, once, when a writer asks."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; formats: {', '.join(FORMATS)}")
    fmt = FORMATS[name]
    if data.kind not in fmt.kinds:
        raise ValueError(f"{name} is for {' and '.join(fmt.kinds)} studies; {data.name!r} is a {data.kind} study")
    if settings is None:
        from metrics.analysis import AnalysisSettings

        settings = AnalysisSettings()
    if condition is not None and data.dialogues and condition not in data.dialogues:
        raise ValueError(f"study {data.name!r} has no condition {condition!r} (conditions: {', '.join(data.dialogues)})")
    computed: list[dict] = []

    def analysis_once() -> dict:
        if not computed:
            if analysis is not None:
                computed.append(analysis(condition))
            elif data.analyser is not None:
                computed.append(data.analyser(settings, condition))
            else:
                raise ValueError(f"{name} needs the study's analysis, and none was given")
        return computed[0]

    return fmt.write(ExportRequest(data, settings, history, condition, analysis_once))


def as_download(files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """One file as it is, several as a zip: (bytes, suggested file name)."""
    if len(files) == 1 and "/" not in files[0][0]:
        return files[0][1], files[0][0]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, content in files:
            archive.writestr(path, content)
    return buffer.getvalue(), "export.zip"
