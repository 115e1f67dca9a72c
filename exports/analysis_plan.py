"""A study's frozen analysis plan, as plain data: what is stored, what the plan file holds, and how the
settings in use (or a change recorded in the study's change log) depart from it.

An admin freezes the plan before the study's first vote (``annotate.service.freeze_plan``): the whole of
``AnalysisSettings.to_dict()`` as it stood, so a setting added later joins the plan by itself.  The plan
is kept in the study's settings (``settings["plan"]``: ``frozen_at`` ISO UTC, ``frozen_by``, ``version``,
``analysis``, ``settings_sha256``).  The plan file (:func:`plan_file`) carries the SHA-256 of the
settings' canonical JSON (keys sorted, no spaces, UTF-8), so a reader can check the settings are those
frozen (:func:`verify`).

Two kinds of :class:`Deviation`: a setting whose value in use differs from the plan (``kind`` "plan"),
and, planned or not, each analysis-settings change recorded after the study's first vote (``kind``
"after votes", with when and by whom).  Reading the store is ``annotate``'s; nothing here touches it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from metrics.analysis import AnalysisSettings

PLAN_KEY = "plan"  # where the plan is kept in a study's settings
SETTINGS_CHANGE = "analysis settings"  # the change log's ``what`` for a change of the stored settings
PLAN_CHANGE = "analysis plan"  # the change log's ``what`` for the freeze


@dataclass(frozen=True)
class Deviation:
    """One departure from the plan: ``planned`` the plan's value (or the value before a logged change),
    ``current`` the value in use (or after the change); ``at`` (ISO UTC, to the second) and ``by`` for a
    change recorded after the first vote."""

    kind: str  # "plan": differs from the frozen plan; "after votes": changed after votes arrived
    key: str
    planned: Any
    current: Any
    at: str | None = None
    by: str | None = None

    def text(self) -> str:
        if self.kind == "plan":
            return f"differs from the frozen plan: {self.key} {shown(self.planned)} in the plan, {shown(self.current)} now"
        when = f" on {self.at.replace('T', ' ')} UTC" if self.at else ""
        return f"changed after votes arrived: {self.key} {shown(self.planned)} → {shown(self.current)}{when}, by {self.by}"


@dataclass(frozen=True)
class AnalysisPlan:
    """A study's plan and where the study stands against it.  Not frozen: ``frozen_at`` is None and
    ``settings`` are those in use (the changes after the first vote are still listed)."""

    frozen_at: str | None
    frozen_by: str | None
    settings: dict[str, Any]
    version: str | None = None
    deviations: tuple[Deviation, ...] = ()
    votes: int = 0  # vote events in the study now (the plan can be frozen only while there are none)

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    @property
    def settings_sha256(self) -> str:
        return settings_sha256(self.settings)


def shown(value: Any) -> str:
    """A setting's value in words: numbers without trailing zeros, lists in brackets.

    >>> shown([0.0, 10.0, 1001]), shown(True), shown("holm"), shown(None)
    ('[0, 10, 1001]', 'true', 'holm', '(not set)')
    """
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def normalised(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """Stored settings as the analysis reads them: every key, missing ones at their defaults."""
    return AnalysisSettings.from_dict(dict(values or {})).to_dict()


def canonical_json(settings: Mapping[str, Any]) -> str:
    return json.dumps(dict(settings), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def settings_sha256(settings: Mapping[str, Any]) -> str:
    """The SHA-256 of the settings' canonical JSON (keys sorted, separators "," and ":", UTF-8)."""
    return hashlib.sha256(canonical_json(settings).encode("utf-8")).hexdigest()


def new_plan(settings: Mapping[str, Any], frozen_at: str, frozen_by: str, version: str) -> dict[str, Any]:
    """The plan as kept in the study's settings (``settings["plan"]``)."""
    chosen = dict(settings)
    return {
        "frozen_at": frozen_at,
        "frozen_by": frozen_by,
        "version": version,
        "analysis": chosen,
        "settings_sha256": settings_sha256(chosen),
    }


def stored_plan(study_settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    found = (study_settings or {}).get(PLAN_KEY)
    return found if isinstance(found, dict) and found.get("frozen_at") else None


def differences(planned: Mapping[str, Any], current: Mapping[str, Any]) -> list[Deviation]:
    """Every setting whose value in use differs from the plan's (a key the plan lacks is compared at
    its default: the plan was frozen before the setting existed)."""
    plan, now = normalised(planned), dict(current)
    keys = list(dict.fromkeys([*plan, *now]))
    return [Deviation("plan", key, plan.get(key), now.get(key)) for key in keys if plan.get(key) != now.get(key)]


def logged_settings(text: str) -> dict[str, Any] | None:
    """The settings a change-log line holds (``str`` of the stored dict, JSON, or "(defaults)");
    None when the line cannot be read as settings.

    >>> logged_settings("{'adjust': 'none', 'include_judges': False}")["adjust"]
    'none'
    >>> logged_settings("(defaults)") == normalised({})
    True
    """
    text = (text or "").strip()
    if text in ("", "(defaults)", "None"):
        return normalised({})
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return normalised(value)
    return None


def changes_after_votes(changes: Sequence[Mapping[str, str]]) -> list[Deviation]:
    """The settings changes recorded after the first vote (``at``, ``by``, ``old``, ``new`` each), one
    :class:`Deviation` per setting changed, oldest first."""
    found = []
    for change in changes:
        old, new = logged_settings(change.get("old", "")), logged_settings(change.get("new", ""))
        at, by = change.get("at"), change.get("by")
        if old is None or new is None:
            found.append(Deviation("after votes", "analysis settings", change.get("old"), change.get("new"), at, by))
            continue
        keys = list(dict.fromkeys([*old, *new]))
        found += [Deviation("after votes", k, old.get(k), new.get(k), at, by) for k in keys if old.get(k) != new.get(k)]
    return found


def plan_status(
    study_settings: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    late_changes: Sequence[Mapping[str, str]] = (),
    votes: int = 0,
) -> AnalysisPlan:
    """Where a study stands against its plan: ``current`` the settings in use (``to_dict()``),
    ``late_changes`` the analysis-settings changes logged after the first vote."""
    plan = stored_plan(study_settings)
    late = changes_after_votes(late_changes)
    if plan is None:
        return AnalysisPlan(None, None, dict(current), None, tuple(late), votes)
    planned = dict(plan.get("analysis") or {})
    return AnalysisPlan(
        str(plan["frozen_at"]),
        str(plan.get("frozen_by", "")),
        planned,
        plan.get("version"),
        (*differences(planned, current), *late),
        votes,
    )


def file_name(study: str, frozen_at: str) -> str:
    """``<study>-analysis-plan-<UTC timestamp>.json``, the study's name reduced to safe characters.

    >>> file_name("../a b/c", "2026-11-28T20:15:03Z")
    'a_b_c-analysis-plan-20261128T201503Z.json'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", study).strip("._-") or "study"
    stamp = frozen_at.replace("-", "").replace(":", "")
    return f"{safe[:80]}-analysis-plan-{stamp}.json"


def plan_document(study: str, plan: AnalysisPlan) -> dict[str, Any]:
    """The plan file's content: the study, when and by whom it was frozen, the version that froze it,
    the settings and their SHA-256, and the deviations now."""
    if not plan.frozen:
        raise ValueError("the analysis plan is not frozen")
    return {
        "study": study,
        "frozen_at": plan.frozen_at,
        "frozen_by": plan.frozen_by,
        "version": plan.version,
        "settings": plan.settings,
        "settings_sha256": plan.settings_sha256,
        "sha256_of": "the settings as JSON with sorted keys, separators ',' and ':', UTF-8",
        "deviations": [{"text": d.text(), **asdict(d)} for d in plan.deviations],
    }


def plan_file(study: str, plan: AnalysisPlan) -> tuple[str, bytes]:
    """The plan as a file: (its timestamped name, its JSON)."""
    document = plan_document(study, plan)
    return file_name(study, str(plan.frozen_at)), (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode()


def verify(document: Mapping[str, Any]) -> bool:
    """Whether a plan file's settings are those frozen (their SHA-256 matches)."""
    return settings_sha256(document.get("settings") or {}) == document.get("settings_sha256")


def report_rows(
    study_settings: Mapping[str, Any] | None, current: Mapping[str, Any], late_changes: Sequence[Mapping[str, str]]
) -> list[list[str]]:
    """The report's rows on the plan: whether it is frozen, then a flag row per deviation."""
    plan = plan_status(study_settings, current, late_changes)
    state = (
        f"frozen at {str(plan.frozen_at).replace('T', ' ').removesuffix('Z')} UTC by {plan.frozen_by} "
        f"(settings SHA-256 {plan.settings_sha256[:16]}…)"
        if plan.frozen
        else "not frozen"
    )
    return [["analysis plan", state], *(["flag", d.text()] for d in plan.deviations)]
