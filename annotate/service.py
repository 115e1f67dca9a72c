"""What the pages may do, with the permission check on the server side of every action.

Pages call only these functions.  Each takes the acting annotator (``user``) as the
login established it; admin actions refuse non-admins, and an annotator can only see
items they were given and only read or change their own votes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, func, select, true

from annotate import allocation, assignment, crowd, membership, votes
from annotate.auth import PermissionDenied, add_annotator, require_admin, set_password
from annotate.store.db import read_session, write_session
from annotate.store.models import WORKER, Annotator, Assignment, Item, Study
from annotate.studies import StudyError, create_study, question_spec
from annotate.uploads import safe_name, unpacked
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


def list_studies(engine: Engine, user: Annotator | None = None) -> list[StudySummary]:
    """Every study (admin pages), or, for ``user``, the studies they may annotate now (membership,
    not archived; see annotate.membership)."""
    with read_session(engine) as session:
        counts = dict(session.execute(select(Item.study_id, func.count()).group_by(Item.study_id)).all())
        allowed = None if user is None else membership.open_studies(session, user)
        return [
            StudySummary(s.id, s.name, s.kind, s.overlap, counts.get(s.id, 0), s.guideline, s.archived)
            for s in session.scalars(select(Study).order_by(Study.id))
            if allowed is None or s.id in allowed
        ]


# --- annotators ---------------------------------------------------------------------------


def next_item(engine: Engine, user: Annotator, study_id: int) -> Item | None:
    """The user's next item (claimed for them), or None: nothing left, or a crowd worker's quota reached.
    The claim is the write transaction; the item (a whole dialogue) is read after it commits, so the
    write lock is not held while it is decoded (issue 16)."""
    with write_session(engine) as session:
        membership.require_access(session, user, study_id)
        if crowd.quota_reached(session, user, study_id):
            return None
        item_id = assignment.claim_next(session, study_id, user)
    if item_id is None:
        return None
    with read_session(engine) as session:
        return session.get(Item, item_id)


def item_for(engine: Engine, user: Annotator, item_id: int) -> Item:
    """An item the user holds or held; anything else is refused."""
    with read_session(engine) as session:
        mine = session.scalar(select(Assignment.id).where(Assignment.item_id == item_id, Assignment.annotator_id == user.id))
        if mine is None and user.role != "admin":
            raise PermissionDenied("this item is not assigned to you")
        item = session.get(Item, item_id)
        if item is None:
            raise PermissionDenied("no such item")
        membership.require_access(session, user, item.study_id)
        return item


def item_audio(engine: Engine, user: Annotator, item_id: int) -> tuple[str, str, bytes] | None:
    """The recording of an item the user holds or held: (file name, MIME type, bytes), or None."""
    from annotate.store.models import ItemAudio

    item_for(engine, user, item_id)
    with read_session(engine) as session:
        audio = session.get(ItemAudio, item_id)
        return None if audio is None else (audio.file_name, audio.mime, audio.data)


def submit(
    engine: Engine, user: Annotator, item_id: int, answers: dict[str, str], *, comment: str = "", seconds: float | None = None
) -> None:
    """One judgement: the answers to an item's questions, in one transaction."""
    if not answers:
        raise StudyError("nothing to save")
    item = item_for(engine, user, item_id)
    with write_session(engine) as session:
        allocation.before_judgement(session, item.study_id, item_id)
        votes.cast_votes(session, user, item_id, answers, comment=comment, seconds=seconds)
        allocation.after_judgement(session, item.study_id, item_id)


def release_places(engine: Engine, user: Annotator, *, keep_study: int | None = None) -> int:
    """Give back the user's held items (all of them, or all but those of ``keep_study``)."""
    with write_session(engine) as session:
        return assignment.release(session, user.id, keep_study=keep_study)


def skip(engine: Engine, user: Annotator, item_id: int) -> None:
    with write_session(engine) as session:
        assignment.skip_item(session, user, item_id)


def my_answers(engine: Engine, user: Annotator, item_id: int) -> dict[str, str]:
    with read_session(engine) as session:
        return {q: e.value for q, e in votes.current_answers(session, user, item_id).items()}


def answers_since(engine: Engine, user: Annotator, item_id: int, since) -> dict[str, str]:
    """The user's answers on the item stored at or after ``since`` (latest per question): whether an
    answer sent while the database was unreachable got through (``annotate.screen.settle``)."""
    from annotate.store.models import VoteEvent

    with read_session(engine) as session:
        rows = session.execute(
            select(VoteEvent.question, VoteEvent.value)
            .where(VoteEvent.item_id == item_id, VoteEvent.annotator_id == user.id, VoteEvent.created_at >= since)
            .order_by(VoteEvent.id)
        ).all()
    return dict(rows)


def my_comment(engine: Engine, user: Annotator, item_id: int) -> str:
    with read_session(engine) as session:
        events = votes.current_answers(session, user, item_id)
        latest = max(events.values(), key=lambda e: e.id, default=None)
        return latest.comment if latest else ""


def my_history(engine: Engine, user: Annotator, study_id: int) -> list[tuple[int, str, str]]:
    """(item id, a label without the condition, ``"skipped"`` or ``"judged"``) of the items this user
    skipped (oldest skip first) and then of those they judged (newest first)."""
    with read_session(engine) as session:
        skipped = [(item.id, item.key, "skipped") for item in votes.skipped_items(session, study_id, user)]
        return skipped + [(item.id, item.key, "judged") for item in votes.judged_items(session, study_id, user)]


def history_labels(engine: Engine, user: Annotator, study_id: int, history: list[tuple[int, str, str]]) -> dict[int, str]:
    """A line per item of :func:`my_history` that a person recognises: the key, a preview of the item
    (a dialogue's first user turn, the CoCo user turn, the SLU top hypothesis) and the current answer."""
    from annotate.kinds import KINDS

    labels = {}
    with read_session(engine) as session:
        kind = KINDS[session.get(Study, study_id).kind]
        for position, (item_id, key, state) in enumerate(history):
            item = session.get(Item, item_id)
            preview = " ".join(kind.preview(item.payload).split())
            preview = preview if len(preview) <= 70 else preview[:69] + "…"
            answers = {q: e.value for q, e in votes.current_answers(session, user, item_id).items()}
            binary = {q: v for q, v in answers.items() if v in ("0", "1")}
            if state == "skipped":
                answer = "(skipped)"
            elif len(binary) <= 2:
                answer = ", ".join(f"{q} {'yes' if v == '1' else 'no'}" for q, v in binary.items())
            else:
                answer = f"{sum(v == '1' for v in binary.values())} of {len(binary)} marked correct"
            labels[item_id] = f"{position + 1}. {key} — “{preview}” — {answer}"
    return labels


def my_progress(engine: Engine, user: Annotator, study_id: int) -> dict:
    with read_session(engine) as session:
        study = session.get(Study, study_id)
        done = session.scalar(
            select(func.count())
            .select_from(Assignment)
            .where(Assignment.study_id == study_id, Assignment.annotator_id == user.id, Assignment.status == "done")
        )
        # items to judge (an adaptive design leaves some out) and their extra places: from ix_items_capacity
        total, extra = session.execute(
            select(func.count(), func.sum(Item.extra_capacity)).where(Item.study_id == study_id, Item.included == true())
        ).one()
        judged = session.scalar(
            select(func.count()).select_from(Assignment).where(Assignment.study_id == study_id, Assignment.status == "done")
        )
        # against the budget when the study has one (it closes once that is spent): issue 24
        needed = allocation.judgements_total(allocation.design_of(study.settings), total * study.overlap + (extra or 0))
    return {"mine": int(done or 0), "items": int(total), "study_fraction": min(1.0, (judged or 0) / needed) if needed else 1.0}


# --- crowd workers ------------------------------------------------------------------------


def join_crowd(engine: Engine, params, *, client: str = "", now=None) -> str:
    """Sign a crowd worker in by a study's join link (its URL parameters): the session token.
    ``client``: where the request comes from (the page's client address), for the per-client limit;
    ``now``: a simulated clock (tests).  Raises crowd.JoinRefused with a plain message; a refused
    link changes nothing."""
    from sqlalchemy.exc import IntegrityError

    from annotate.sessions import open_session

    for attempt in range(2):  # the same worker joining in two tabs at once: the second finds the first
        try:
            with write_session(engine) as session:
                return open_session(session, crowd.join(session, params, client=client, now=now))
        except IntegrityError:
            if attempt:
                raise
    raise AssertionError("unreachable")


def crowd_status(engine: Engine, user: Annotator, *, out_of_items: bool = False) -> dict:
    """A worker's count, quota and, once finished, completion code and redirect URL (crowd.status)."""
    with write_session(engine) as session:
        return crowd.status(session, user, out_of_items=out_of_items)


def crowd_settings(engine: Engine, user: Annotator, study_id: int) -> dict:
    require_admin(user)
    with read_session(engine) as session:
        return crowd.settings_of(session.get(Study, study_id))


def set_crowd(
    engine: Engine,
    user: Annotator,
    study_id: int,
    *,
    enabled: bool,
    quota: int | None,
    completion_code: str,
    redirect_url: str,
    new_secret: bool = False,
    places: int | None = None,
) -> dict:
    """Open or close a study to crowd workers, with quota, places (None: the study's need), completion
    code and redirect URL; recorded (without the secret).  Returns the new settings."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        before, after = crowd.configure(
            study,
            enabled=enabled,
            quota=quota,
            completion_code=completion_code,
            redirect_url=redirect_url,
            new_secret=new_secret,
            places=places,
        )
        if before != after:
            membership.record(session, study_id, user, "crowd", crowd.public(before), crowd.public(after))
        return after


def crowd_joins(engine: Engine, user: Annotator, study_id: int, *, now=None) -> dict:
    """Workers joined, places, and joins per minute (crowd.join_stats) for the admin."""
    require_admin(user)
    with read_session(engine) as session:
        return crowd.join_stats(session, session.get(Study, study_id), now)


def crowd_link(engine: Engine, user: Annotator, study_id: int, base_url: str, platform: str = "prolific") -> str:
    """The study's join link for a platform, on the app's public address ``base_url``."""
    require_admin(user)
    with read_session(engine) as session:
        return base_url.rstrip("/") + "/" + crowd.join_query(session.get(Study, study_id), platform)


# --- admins -------------------------------------------------------------------------------


def _loose_system_name(kind: str, files: list[tuple[str, bytes]]) -> str | None:
    """The system name of a satisfaction upload when the admin gave none (issue 24): an FGA text
    file's system is its folder, and a loose upload has none (a zip's folders name theirs).  One loose
    FGA text file: its name up to the first dot, as for a JSON file; several: refused, asking for it."""
    if kind != "satisfaction":
        return None
    loose = [safe_name(name) for name, _ in files if name.lower().endswith(".txt")]
    if len(loose) > 1:
        shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
        raise StudyError(
            f"{shown}: loose FGA text files do not say which system made them: give the system name "
            "(or upload them as a .zip of a folder named after the system)"
        )
    return (loose[0].split(".")[0] or None) if loose else None


def create_study_from_uploads(
    engine: Engine, user: Annotator, name: str, kind: str, files: list[tuple[str, bytes]], **options
) -> StudySummary:
    """The CLI's study creation, from uploaded files (.zip for folders); all or nothing.

    Error messages name the uploaded file, not the temporary folder it was unpacked to.
    """
    require_admin(user)
    if not files:
        raise StudyError("upload at least one file")
    from annotate.studies import prepare_items

    options["condition"] = options.get("condition") or _loose_system_name(kind, files)
    with unpacked(files) as paths:
        # read the files before the write transaction: votes do not wait on parsing (issue 23, item 7)
        drafts = prepare_items(kind, paths, options.get("condition"), options.get("sample"), options.get("seed", 0))
        with write_session(engine) as session:
            study = create_study(session, name, kind, paths, drafts=drafts, **options)
            return StudySummary(study.id, study.name, study.kind, study.overlap, len(study.items), study.guideline)


def list_annotators(engine: Engine, user: Annotator) -> list[dict]:
    require_admin(user)
    with read_session(engine) as session:
        return [
            {"name": a.name, "role": a.role, "login": a.password_hash is not None}
            for a in session.scalars(select(Annotator).where(Annotator.role != WORKER).order_by(Annotator.name))
        ]  # crowd workers are listed per study, on the Progress page


def add_person(engine: Engine, user: Annotator, name: str, password: str, role: str = "annotator") -> None:
    require_admin(user)
    with write_session(engine) as session:
        add_annotator(session, name, password, role)


def reset_password(engine: Engine, user: Annotator, name: str, password: str) -> None:
    require_admin(user)
    with write_session(engine) as session:
        set_password(session, name, password)  # also ends their sessions and clears failed logins


def set_overlap(engine: Engine, user: Annotator, study_id: int, overlap: int) -> None:
    require_admin(user)
    if overlap < 1:
        raise StudyError("overlap must be at least 1")
    with write_session(engine) as session:
        membership.change(session, assignment.lock_study(session, study_id), user, "overlap", overlap)


def set_guideline(engine: Engine, user: Annotator, study_id: int, guideline: str) -> None:
    require_admin(user)
    with write_session(engine) as session:
        membership.change(session, assignment.lock_study(session, study_id), user, "guideline", guideline)


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
) -> dict:
    """Choose how the study spends its judgements (``annotate.allocation``), before its first vote."""
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


def allocation_status(engine: Engine, user: Annotator, study_id: int, *, progress=None) -> dict:
    """The design, judgements spent, the main question's current interval and width, the judgements
    projected to reach the target; a study whose target width is reached is closed here (archived).

    The interval is the Analysis page's own: the same cached analysis (``study_data.study_analysis``),
    with the study's stored settings and the system (condition) the page opens with; ``progress`` as
    there (called only when it is computed)."""
    from annotate.study_data import study_analysis, study_conditions

    require_admin(user)
    with read_session(engine) as session:
        kind = session.get(Study, study_id).kind
    analysis = None
    if kind == "satisfaction":  # the only kind with a main question to estimate (annotate.allocation)
        conditions = study_conditions(engine, user, study_id)
        condition = conditions[0] if len(conditions) > 1 else None  # as the Analysis page's System box
        analysis = study_analysis(
            engine, user, study_id, study_settings(engine, user, study_id), condition=condition, progress=progress
        )
    with read_session(engine) as session:
        report = allocation.status(session, session.get(Study, study_id), analysis=analysis)
    if report["reached"]:
        with write_session(engine) as session:
            report["closed_now"] = allocation.close_when_reached(session, assignment.lock_study(session, study_id), report)
    return report


def set_archived(engine: Engine, user: Annotator, study_id: int, archived: bool) -> dict:
    """Archive (hidden from annotators, their places given back) or unarchive a study; recorded.

    Idempotent, not a toggle: archiving an archived study leaves it archived (and records nothing).
    Returns ``{"archived": the state now, "changed": whether this call changed it}``."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        changed = bool(study.archived) != bool(archived)
        membership.change(session, study, user, "archived", bool(archived))
        if archived:  # the places people hold go back at once
            assignment.release_study(session, study_id)
        return {"archived": bool(archived), "changed": changed}


def set_members(engine: Engine, user: Annotator, study_id: int, names: list[str]) -> list[str]:
    require_admin(user)
    with write_session(engine) as session:
        return membership.set_members(session, assignment.lock_study(session, study_id), names, user)


def set_gold(engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes) -> int:
    """Attention-check answers uploaded in the app (the CLI's ``--gold`` CSV: item, question, value[,
    condition]): one transaction, the file and line named on any error; recorded.  Returns the rows."""
    from annotate.studies import apply_gold
    from formats.gold import read_gold

    require_admin(user)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StudyError(f"{file_name}: not UTF-8 text") from None
    rows = read_gold(file_name, text)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        apply_gold(study, list(session.scalars(select(Item).where(Item.study_id == study_id))), rows, file_name)
        membership.record(session, study_id, user, "gold", "", f"{len(rows)} answers from {file_name}")
    return len(rows)


def study_settings(engine: Engine, user: Annotator, study_id: int) -> AnalysisSettings:
    """The analysis settings stored with the study (its λ grid, rating mode, ...), else the defaults
    (``study_data.stored_settings``: with the design's λ among the λs)."""
    from annotate.study_data import stored_settings

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
            membership.record(session, study_id, user, "analysis settings", before or "(defaults)", settings.to_dict())
        study.settings = {**(study.settings or {}), "analysis": settings.to_dict()}


def adjudicate(
    engine: Engine, user: Annotator, study_id: int, key: str, condition: str, question: str, value: str, note: str = ""
) -> None:
    """An adjudicator's (admin's) final label for an item's question: its own event, apart from the votes."""
    from annotate.store.models import Adjudication
    from annotate.studies import check_value

    require_admin(user)
    with write_session(engine) as session:
        study = session.get(Study, study_id)
        item = session.scalar(select(Item).where(Item.study_id == study_id, Item.key == key, Item.condition == condition))
        if item is None:
            raise StudyError(f"no item {key!r} (condition {condition!r}) in study {study.name!r}")
        session.add(
            Adjudication(
                item_id=item.id, question=question, value=check_value(study, item, question, value), by=user.name, note=note
            )
        )


def item_votes(engine: Engine, user: Annotator, study_id: int, key: str, condition: str) -> list[dict]:
    """Drill-down: every vote event on an item, with its annotator, time, time spent and comment."""
    require_admin(user)
    with read_session(engine) as session:
        rows = [
            row
            for row in votes.vote_rows(session, study_id, history=True)
            if row["item"] == key and (row["condition"] or "") == condition
        ]
    # "current": the annotator's latest answer to the question (what the analysis counts); the
    # earlier events it superseded are kept and listed, marked False (issue 24).
    latest = {(r["annotator_kind"], r["annotator"], r["question"]): i for i, r in enumerate(rows)}
    return [{**r, "current": latest[(r["annotator_kind"], r["annotator"], r["question"])] == i} for i, r in enumerate(rows)]


def study_members(engine: Engine, user: Annotator, study_id: int) -> list[str]:
    require_admin(user)
    with read_session(engine) as session:
        return membership.members(session, study_id)


def study_changes(engine: Engine, user: Annotator, study_id: int) -> list[dict]:
    require_admin(user)
    with read_session(engine) as session:
        return membership.changes(session, study_id)


def reopen(engine: Engine, user: Annotator, study_id: int, key: str, condition: str = "") -> None:
    require_admin(user)
    with write_session(engine) as session:
        assignment.reopen_items(session, session.get(Study, study_id), key.strip(), condition.strip() or None)


def study_progress(engine: Engine, user: Annotator, study_id: int) -> dict:
    require_admin(user)
    with read_session(engine) as session:
        return assignment.progress(session, study_id)


def vote_table(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> list[dict]:
    require_admin(user)
    with read_session(engine) as session:
        return votes.vote_rows(session, study_id, history=history)


def votes_csv(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> str:
    return votes.rows_to_csv(vote_table(engine, user, study_id, history=history))


def votes_download(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> tuple[str, int]:
    """The votes CSV and the newest vote event it holds (for :func:`record_export` once downloaded)."""
    require_admin(user)
    with read_session(engine) as session:
        through = membership.last_vote(session, study_id)
        rows = votes.vote_rows(session, study_id, history=history)
    return votes.rows_to_csv(rows), through


def record_export(engine: Engine, user: Annotator, study_id: int, what: str, through: int) -> None:
    """The admin downloaded the votes up to event ``through`` (a download button's callback)."""
    require_admin(user)
    with write_session(engine) as session:
        membership.record_export(session, assignment.lock_study(session, study_id), user, what, through)


def delete_study(engine: Engine, user: Annotator, study_id: int, confirm: str) -> None:
    """Delete a study: the admin types its name; refused while votes exist that were not exported."""
    require_admin(user)
    with write_session(engine) as session:
        try:
            membership.delete_study(session, assignment.lock_study(session, study_id), confirm)
        except ValueError as err:
            raise StudyError(str(err)) from None


def export(
    engine: Engine,
    user: Annotator,
    study_id: int,
    fmt: str,
    settings=None,
    *,
    history: bool = False,
    condition: str | None = None,
) -> tuple[bytes, str]:
    """One export format of a study as a download: (bytes, file name); several files come zipped."""
    require_admin(user)
    from annotate.study_data import load_study, study_analysis
    from exports.formats import as_download, write

    settings = settings or study_settings(engine, user, study_id)
    data = load_study(engine, study_id, history=history)
    shared = lambda chosen: study_analysis(engine, user, study_id, settings, condition=chosen)  # noqa: E731
    return as_download(write(data, fmt, settings, history=history, condition=condition, analysis=shared))


__all__ = ["PermissionDenied", "question_spec", "require_admin"]
