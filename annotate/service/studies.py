"""A study's life for its admin, through the door: the list, creation from files or uploads, settings
(overlap, guideline, analysis settings, gold answers), members, allocation and the designer's proposal,
re-opened items, archive and delete; every change recorded in the study's change log (``annotate.studies``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine, func, select

from annotate import studies
from annotate.kinds import get_kind
from annotate.people.auth import require_admin
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Item, Study
from annotate.studies import StudyError, allocation, assignment, create_study, membership
from annotate.studies.uploads import unpacked
from formats.gold import read_gold

if TYPE_CHECKING:  # the analysis (numpy and the statistics) is imported by the functions that run it (issue 36)
    from exports.analysis_plan import AnalysisPlan
    from metrics.analysis import AnalysisSettings


@dataclass(frozen=True)
class StudySummary:
    id: int
    name: str
    kind: str
    overlap: int
    items: int
    guideline: str
    archived: bool = False
    # the study's question specs (``Study.questions``: name, type, ..., ``"unsure": True`` where offered),
    # read with the study; not part of its equality (a summary names a study)
    questions: tuple[dict, ...] = field(default=(), compare=False, repr=False)


def list_studies(engine: Engine, user: Annotator | None = None) -> list[StudySummary]:
    """Every study (admin pages), or, for ``user``, the studies they may annotate now (membership,
    not archived; see annotate.studies.membership)."""
    with read_session(engine) as session:
        counts = dict(session.execute(select(Item.study_id, func.count()).group_by(Item.study_id)).all())
        allowed = None if user is None else membership.open_studies(session, user)
        return [
            StudySummary(s.id, s.name, s.kind, s.overlap, counts.get(s.id, 0), s.guideline, s.archived, tuple(s.questions or ()))
            for s in session.scalars(select(Study).order_by(Study.id))
            if allowed is None or s.id in allowed
        ]


def find_study(engine: Engine, user: Annotator, name: str) -> int:
    """The id of the study named ``name`` (the command lines name studies); StudyError if there is none."""
    require_admin(user)
    with read_session(engine) as session:
        found = session.scalar(select(Study.id).where(Study.name == name))
    if found is None:
        raise StudyError(f"no study named {name!r}")
    return found


def create_study_from_files(engine: Engine, user: Annotator, name: str, kind: str, paths: list, **options) -> StudySummary:
    """A study from data files (``python -m annotate study create``), in one transaction: all or
    nothing.  ``options``: those of ``annotate.studies.create_study`` (overlap, condition, guideline,
    sample, seed, gold_path, timeout_minutes).  The files are read before the write transaction, so
    votes do not wait on parsing (issue 23, item 7)."""
    require_admin(user)
    drafts = studies.prepare_items(kind, paths, options.get("condition"), options.get("sample"), options.get("seed", 0))
    with write_session(engine) as session:
        study = create_study(session, name, kind, paths, drafts=drafts, **options)
        return StudySummary(
            study.id, study.name, study.kind, study.overlap, len(study.items), study.guideline, questions=tuple(study.questions)
        )


def create_study_from_uploads(
    engine: Engine, user: Annotator, name: str, kind: str, files: list[tuple[str, bytes]], **options
) -> StudySummary:
    """:func:`create_study_from_files` from uploaded files (.zip for folders); all or nothing.

    Error messages name the uploaded file, not the temporary folder it was unpacked to.
    """
    require_admin(user)
    if not files:
        raise StudyError("upload at least one file")
    options["condition"] = options.get("condition") or get_kind(kind).upload_condition(files)
    with unpacked(files) as paths:
        return create_study_from_files(engine, user, name, kind, paths, **options)


def set_overlap(engine: Engine, user: Annotator, study_id: int, overlap: int) -> None:
    require_admin(user)
    if overlap < 1:
        raise StudyError("overlap must be at least 1")
    with write_session(engine) as session:
        studies.change(session, assignment.lock_study(session, study_id), user, "overlap", overlap)


def set_guideline(engine: Engine, user: Annotator, study_id: int, guideline: str) -> None:
    require_admin(user)
    with write_session(engine) as session:
        studies.change(session, assignment.lock_study(session, study_id), user, "guideline", guideline)


def set_allocation(
    engine: Engine,
    user: Annotator,
    study_id: int,
    *,
    policy: str,
    question: str = "fga_vs_jga",
    budget: int | None = None,
    target_width: float | None = None,
    max_k: int | None = None,
    lam: float = 0.5,
) -> allocation.Drawn:
    """Choose how the study spends its judgements (``annotate.studies.allocation``), before its first vote."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        return allocation.set_allocation(
            session, study, user, policy=policy, question=question, budget=budget, target_width=target_width, max_k=max_k, lam=lam
        )


def allocation_settings(engine: Engine, user: Annotator, study_id: int) -> dict:
    require_admin(user)
    with read_session(engine) as session:
        return allocation.design_of(session.get(Study, study_id).settings)


def set_archived(engine: Engine, user: Annotator, study_id: int, archived: bool) -> dict:
    """Archive (hidden from annotators, their places given back) or unarchive a study; recorded.

    Idempotent, not a toggle: archiving an archived study leaves it archived (and records nothing).
    Returns ``{"archived": the state now, "changed": whether this call changed it}``."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        changed = bool(study.archived) != bool(archived)
        studies.change(session, study, user, "archived", bool(archived))
        if archived:  # the places people hold go back at once
            assignment.release_study(session, study_id)
        return {"archived": bool(archived), "changed": changed}


def set_members(engine: Engine, user: Annotator, study_id: int, names: list[str]) -> list[str]:
    """Make exactly ``names`` the members (none: open to every annotator); the members now, by name."""
    require_admin(user)
    with write_session(engine) as session:
        return membership.set_members(session, assignment.lock_study(session, study_id), names, user)


def change_members(
    engine: Engine, user: Annotator, study_id: int, *, add: list[str] | None = None, remove: list[str] | None = None
) -> list[str]:
    """Add members, or remove some (each must be one), in one transaction; the members now, by name."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        current = membership.members(session, study_id)
        unknown = [n for n in remove or [] if n not in current]
        if unknown:
            raise StudyError(f"not a member of {study.name!r}: {', '.join(unknown)}")
        chosen = current + list(add) if add else [n for n in current if n not in (remove or [])]
        return membership.set_members(session, study, chosen, user)


def set_gold(engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes) -> int:
    """Attention-check answers uploaded in the app (the CLI's ``--gold`` CSV: item, question, value[,
    condition]): one transaction, the file and line named on any error; recorded.  Returns the rows."""
    require_admin(user)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StudyError(f"{file_name}: not UTF-8 text") from None
    rows = read_gold(file_name, text)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        studies.apply_gold(study, list(session.scalars(select(Item).where(Item.study_id == study_id))), rows, file_name)
        studies.record(session, study_id, user, "gold", "", f"{len(rows)} answers from {file_name}")
    return len(rows)


def study_settings(engine: Engine, user: Annotator, study_id: int) -> AnalysisSettings:
    """The analysis settings stored with the study (its λ grid, rating mode, ...), else the defaults
    (``study_data.stored_settings``: with the design's λ among the λs)."""
    from annotate.analysis.study_data import stored_settings

    require_admin(user)
    with read_session(engine) as session:
        return stored_settings(session.get(Study, study_id).settings)


def set_study_settings(engine: Engine, user: Annotator, study_id: int, settings: AnalysisSettings) -> None:
    """Store the analysis settings with the study: the Analysis page opens with them and the app's
    exports and report use them; recorded."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        before = (study.settings or {}).get("analysis")
        if before != settings.to_dict():
            studies.record(session, study_id, user, "analysis settings", before or "(defaults)", settings.to_dict())
        study.settings = {**(study.settings or {}), "analysis": settings.to_dict()}


def freeze_plan(engine: Engine, user: Annotator, study_id: int) -> AnalysisPlan:
    """Freeze the study's analysis settings (the whole settings: family, adjustment, λ grid, ...) as its
    analysis plan, before its first vote; recorded.  StudyError once the study has a vote, or when the
    plan is frozen already (nothing changes then)."""
    from annotate.analysis import analysis_plan

    require_admin(user)
    with write_session(engine) as session:
        return analysis_plan.freeze(session, study_id, user)


def study_plan(engine: Engine, user: Annotator, study_id: int) -> AnalysisPlan:
    """The study's analysis plan (``exports.analysis_plan.AnalysisPlan``: not frozen, or when and by whom)
    with its deviations: each setting in use that differs from the plan, and each analysis-settings
    change recorded after the first vote (old and new value, when, by whom)."""
    from annotate.analysis import analysis_plan

    require_admin(user)
    with read_session(engine) as session:
        return analysis_plan.plan_of(session, session.get(Study, study_id))


def plan_file(engine: Engine, user: Annotator, study_id: int) -> tuple[str, bytes]:
    """The frozen plan as a file: (``<study>-analysis-plan-<UTC timestamp>.json``, its JSON with the
    settings' SHA-256).  StudyError while the plan is not frozen."""
    from annotate.analysis import analysis_plan
    from exports.analysis_plan import plan_file as as_file

    require_admin(user)
    with read_session(engine) as session:
        study = session.get(Study, study_id)
        plan = analysis_plan.plan_of(session, study)
        name = study.name
    if not plan.frozen:
        raise StudyError(f"the analysis plan of {name!r} is not frozen: freeze it first (before the first vote)")
    return as_file(name, plan)


def study_members(engine: Engine, user: Annotator, study_id: int) -> list[str]:
    require_admin(user)
    with read_session(engine) as session:
        return membership.members(session, study_id)


def study_changes(engine: Engine, user: Annotator, study_id: int) -> list[studies.Change]:
    require_admin(user)
    with read_session(engine) as session:
        return studies.changes(session, study_id)


@dataclass(frozen=True)
class ItemSummary:
    key: str
    condition: str | None
    questions: list[str]


def study_items(engine: Engine, user: Annotator, study_id: int) -> list[ItemSummary]:
    """The study's items in order: key, condition and questions (``python -m annotate study items``)."""
    require_admin(user)
    with read_session(engine) as session:
        rows = session.execute(
            select(Item.key, Item.condition, Item.questions).where(Item.study_id == study_id).order_by(Item.position)
        )
        return [ItemSummary(key, condition, list(questions)) for key, condition, questions in rows]


def reopen(engine: Engine, user: Annotator, study_id: int, key: str | None, condition: str | None = None, extra: int = 1) -> int:
    """``extra`` more judgements on the item ``key`` (None: every item; ``condition`` when the key has
    several; empty: none given); the number of items re-opened."""
    require_admin(user)
    with write_session(engine) as session:
        return assignment.reopen_items(session, session.get(Study, study_id), key, condition or None, extra)


def delete_study(engine: Engine, user: Annotator, study_id: int, confirm: str) -> None:
    """Delete a study: the admin types its name; refused while votes exist that were not exported."""
    require_admin(user)
    with write_session(engine) as session:
        try:
            studies.delete_study(session, assignment.lock_study(session, study_id), confirm)
        except ValueError as err:
            raise StudyError(str(err)) from None


def set_designed_k(
    engine: Engine, user: Annotator, study_id: int, design: dict, *, budget: int | None = None
) -> allocation.Drawn:
    """Fix the study's design to the designer's proposal (issue 29; ``metrics.design``), before its first
    vote: ``design`` has ``n``, ``m``, ``k_overlap`` and optionally ``seed`` (a proposal's
    ``as_dict()["proposal"]`` with a seed will do: its ``pool`` must be the study's items, the other
    keys are the designer's own and left out).
    ``annotate.studies.allocation`` (policy ``designed``) draws the n dialogues and the overlap subset and
    records the design in the study's settings and change log."""
    require_admin(user)
    chosen = {key: design[key] for key in (*allocation.DESIGN_KEYS, "seed", "pool", "weighting") if design.get(key) is not None}
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        return allocation.set_allocation(session, study, user, policy="designed", budget=budget, design=chosen)


def design_proposal(
    engine: Engine,
    user: Annotator,
    study_id: int,
    *,
    icc: float,
    budget: int | None = None,
    target_width: float | None = None,
    lam: float = 0.5,
    r_a: float = 0.4,
    r_b: float = 0.3,
    question: str = "comparison",
):
    """The designer's proposal for the study's pool (``metrics.design.design``, issue 29), scored on the
    study's dialogues (its first system), for a budget or a target width at a pilot's or prior
    single-rating ICC; with uniform k = 3 and the FGA study's 11 × 100 beside it.  ``question``
    ``comparison``: FGA at ``lam`` against JGA; ``lambda``: λ* with ``lam`` the prior best λ (``r_a`` its prior
    corrected r), its width predicted for the interval the study's Analysis page will report, on the study's own
    analysis grid (its settings' λ grid; the pool scored there and on the λ scores' grid,
    ``metrics.design.design_lambdas``).  ValueError (the designer's reason) when no identified design fits."""
    from annotate.analysis import reports
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings
    from metrics.design import design

    require_admin(user)
    data = reports.load_study(engine, study_id)
    if not data.dialogues:
        raise StudyError("the designer needs metric scores: a dialogue satisfaction study")
    dialogues = next(iter(data.dialogues.values()))
    if question == "lambda":
        from metrics.design import analysis_grid, design_lambdas, nearest_on_grid

        grid = analysis_grid(study_settings(engine, user, study_id).grid)  # where the study's Analysis page estimates λ*
        lambdas = design_lambdas(grid)
        labels = tuple(f"{v:g}" for v in lambdas)
        _, values = per_dialogue_metrics(dialogues, ScoreSettings(lambdas=lambdas, lambda_labels=labels))
        scores = {f"fga_{v:g}": values[f"fga_{v:g}"] for v in lambdas}
        prior = f"fga_{nearest_on_grid(lam, lambdas):g}"
        return design(question, scores, budget, target_width, icc=icc, r_a=r_a, metric_a=prior, grid=grid)
    label = f"{lam:g}"
    _, values = per_dialogue_metrics(dialogues, ScoreSettings(lambdas=(lam,), lambda_labels=(label,)))
    scores = {"fga": values[f"fga_{label}"], "jga": values["jga"]}
    return design(question, scores, budget, target_width, icc=icc, r_a=r_a, r_b=r_b, metric_a="fga", metric_b="jga")
