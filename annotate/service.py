"""The one door to the store: every action of the pages, of both CLIs (``python -m annotate``,
``python -m exports``) and of scripts, with the permission check on the server side of every action.

Each function takes the actor: an annotator (``user``) as the login established it, or the command
line's actor (an admin, recorded as ``cli`` in a study's change log).  Admin actions refuse
non-admins; an annotator can only see items they were given and only read or change their own votes.
The pages call nothing else that reads or writes the store (but the outage probe,
``store.db.reachable``, one ``SELECT 1``): logins (:func:`log_in`, :func:`log_out`,
:func:`session_user`), the demo (:func:`ensure_demo`) and the annotator's loop (:func:`screen`,
:func:`answer`, ... through ``annotate.screen``, the tab logic) are here too; what pages import
besides is constants and pure functions (a kind's item view, a report's prose, the proxy rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Engine, func, select

from annotate import allocation, assignment, crowd, demo, loop, membership, sessions, studies, tokens, votes
from annotate.auth import AuthError, PermissionDenied, StudyClosed, add_annotator, require_admin, set_password
from annotate.idempotency import KeyReused
from annotate.loop import NotLoggedIn
from annotate.store.db import not_sent, read_session, write_session
from annotate.store.models import WORKER, Annotator, Item, Study
from annotate.studies import StudyError, create_study, question_spec
from annotate.uploads import unpacked
from annotate.votes import CapacityError, Reassigned

if TYPE_CHECKING:  # the analysis (numpy and the statistics) is imported by the functions that run it (issue 36)
    from annotate import reports
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


# --- logins and the demo ---------------------------------------------------------------------

log_in = sessions.log_in  # name, password, client, device cookie -> (annotator, session token); throttled
log_out = sessions.log_out  # ends a session token
session_user = sessions.session_user  # the annotator of a live session token, or None
ensure_demo = demo.ensure_demo  # the demo studies and accounts, made once on an empty database


# --- annotators: the loop in one read and one write (annotate.loop) --------------------------


def screen(engine: Engine, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None) -> loop.Screen:
    """The screen of an item on the annotator's screen (or under review): one read transaction."""
    with read_session(engine) as session:
        return loop.read_screen(session, user, study_id, item_id, token=token)


def claim_screen(engine: Engine, user: Annotator | None, study_id: int, *, token: str | None = None) -> loop.Screen:
    """The annotator's next item, claimed, and its screen: one write transaction."""
    with write_session(engine) as session:
        return loop.claim_screen(session, user, study_id, token=token)


def answer(
    engine: Engine,
    user: Annotator | None,
    study_id: int,
    item_id: int,
    answers: dict[str, str],
    *,
    done: bool,
    comment: str = "",
    seconds: float | None = None,
    then: int | None = None,
    token: str | None = None,
    expected: dict[str, str] | None = None,
) -> loop.Screen:
    """One judgement, and the screen to show next: :func:`judge` with the :class:`loop.Judgement` made
    of these keywords (for scripts, benchmarks and tests; the page makes its Judgement itself)."""
    judgement = loop.Judgement(item_id, answers, done, comment, seconds, then, expected)
    return judge(engine, user, study_id, judgement, token=token)


def judge(
    engine: Engine, user: Annotator | None, study_id: int, judgement: loop.Judgement, *, token: str | None = None
) -> loop.Screen:
    """One judgement, and the screen to show next (the next item claimed when it is ``done``; its
    ``then``: an item to show instead, the one a tab left for a review): one write transaction.  The
    stored answers differ from its ``expected``: ``loop.AnsweredElsewhere``.  The transaction never
    began: the error raised is marked as not sent (``store.db.not_sent``)."""
    if not judgement.answers:
        raise StudyError("nothing to save")
    began = False
    try:
        with write_session(engine) as session:
            began = True
            return loop.answer(session, user, study_id, judgement, token=token)
    except Exception as err:
        if not began:  # the transaction never opened (SQLite: BEGIN IMMEDIATE failed): nothing was sent
            not_sent(err)
        raise


def skip_to_next(engine: Engine, user: Annotator | None, study_id: int, item_id: int, *, token: str | None = None) -> loop.Screen:
    """Pass on an item and claim the next, with its screen: one write transaction."""
    with write_session(engine) as session:
        return loop.skip(session, user, study_id, item_id, token=token)


def history(engine: Engine, user: Annotator, study_id: int) -> list[loop.Earlier]:
    """The go-back list (read when it is opened): skipped items first (oldest skip first), then judged
    ones (newest first), each with a line a person recognises."""
    from annotate.kinds import KINDS

    with read_session(engine) as session:
        loop_access = loop.access(session, user, study_id)
        return loop.history(session, user, study_id, KINDS[loop_access.kind].preview)


def next_item(engine: Engine, user: Annotator, study_id: int) -> Item | None:
    """The user's next item (claimed for them), or None: nothing left, or a crowd worker's quota reached."""
    return claim_screen(engine, user, study_id).item


def item_for(engine: Engine, user: Annotator, item_id: int) -> Item:
    """An item the user holds or held; anything else is refused."""
    with read_session(engine) as session:
        study_id = session.scalar(select(Item.study_id).where(Item.id == item_id))
        if study_id is None:
            raise PermissionDenied("no such item")
        return loop.read_screen(session, user, study_id, item_id).item


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
    """One judgement: the answers to an item's questions, in one transaction (the tab stays on it)."""
    if not answers:
        raise StudyError("nothing to save")
    with write_session(engine) as session:
        study_id = session.scalar(select(Item.study_id).where(Item.id == item_id))
        if study_id is None:
            raise PermissionDenied("no such item")
        loop.answer(session, user, study_id, loop.Judgement(item_id, answers, False, comment, seconds))


def release_places(engine: Engine, user: Annotator, *, keep_study: int | None = None) -> int:
    """Give back the user's held items (all of them, or all but those of ``keep_study``)."""
    with write_session(engine) as session:
        return assignment.release(session, user.id, keep_study=keep_study)


def skip(engine: Engine, user: Annotator, item_id: int) -> None:
    with write_session(engine) as session:
        assignment.skip_item(session, user, item_id)


def last_study(engine: Engine, user: Annotator, study_ids: list[int]) -> int | None:
    """Of ``study_ids``, the study this person was last working in: the one where they hold an item, else
    the one of their latest place (judged, skipped or given back).  A new tab or a new login opens it
    (issue 38)."""
    with read_session(engine) as session:
        return assignment.last_study(session, user.id, list(study_ids))


def my_answers(engine: Engine, user: Annotator, item_id: int) -> dict[str, str]:
    with read_session(engine) as session:
        return loop.answers_of(session, user, item_id)[0]


def my_comment(engine: Engine, user: Annotator, item_id: int) -> str:
    with read_session(engine) as session:
        return loop.answers_of(session, user, item_id)[1]


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


def my_history(engine: Engine, user: Annotator, study_id: int) -> list[tuple[int, str, str]]:
    """(item id, a label without the condition, ``"skipped"`` or ``"judged"``) of the items this user
    skipped (oldest skip first) and then of those they judged (newest first)."""
    return [(e.item_id, e.key, e.state) for e in history(engine, user, study_id)]


def my_progress(engine: Engine, user: Annotator, study_id: int) -> dict:
    with read_session(engine) as session:
        progress = loop.progress_of(session, user, study_id)
    return {"mine": progress.mine, "items": progress.items, "study_fraction": progress.study_fraction}


# --- crowd workers ------------------------------------------------------------------------


def join_crowd(engine: Engine, params, *, client: str = "", device: str | None = None, now=None) -> str:
    """Sign a crowd worker in by a study's join link (its URL parameters): the session token (the
    browser's crowd cookie, which a worker who comes back by the link needs, is ``join_crowd_browser``'s)."""
    return join_crowd_browser(engine, params, client=client, device=device, now=now)[0]


def join_crowd_browser(engine: Engine, params, *, client: str = "", device: str | None = None, now=None) -> tuple[str, str]:
    """Sign a crowd worker in by a study's join link (its URL parameters): (the session token, the
    browser's new crowd cookie).  ``client``: where the request comes from (the page's client address),
    for the per-client limit; ``device``: the browser's crowd cookie (``crowd.CROWD_COOKIE_NAME``): a
    worker id that joined already signs in only the browser that shows its token (or, on Prolific,
    the SESSION_ID of the first join; annotate.crowd); ``now``: a simulated clock (tests).  Raises
    crowd.JoinRefused with a plain message; a refused link changes nothing."""
    from sqlalchemy.exc import IntegrityError

    from annotate.sessions import open_session

    for attempt in range(2):  # the same worker joining in two tabs at once: the second finds the first
        try:
            with write_session(engine) as session:
                worker, cookie = crowd.join(session, params, client=client, device=device, now=now)
                return open_session(session, worker), cookie
        except IntegrityError:
            if attempt:
                raise
    raise AssertionError("unreachable")


def crowd_status(engine: Engine, user: Annotator, *, out_of_items: bool = False) -> dict:
    """A worker's count, quota and, once finished, completion code and redirect URL (crowd.status).
    A read; only a finish not yet recorded (``completed_at``) is written, once."""
    with read_session(engine) as session:
        status = crowd.status(session, user, out_of_items=out_of_items)
        unrecorded = bool(session.dirty)  # crowd.status stamped a finish on the worker's row: not stored yet
    if unrecorded:
        with write_session(engine) as session:
            status = crowd.status(session, user, out_of_items=out_of_items)
    return status


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
            studies.record(session, study_id, user, "crowd", crowd.public(before), crowd.public(after))
        return after


def crowd_joins(engine: Engine, user: Annotator, study_id: int, *, now=None) -> crowd.JoinStats:
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
# The admin pages and both command lines (``python -m annotate``, ``python -m exports``) act through
# these functions: each takes the acting admin, or :data:`CLI` for the command line.


@dataclass(frozen=True)
class Actor:
    """Who acts without a login: the command line.  It has an admin's rights (the command lines run
    with the database's own credentials) and is recorded by ``name`` in a study's change log."""

    name: str
    role: str = "admin"
    id: int | None = None


CLI = Actor(studies.CLI)  # the command lines' actor: "cli" in the change log, as ever


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
        return StudySummary(study.id, study.name, study.kind, study.overlap, len(study.items), study.guideline)


def create_study_from_uploads(
    engine: Engine, user: Annotator, name: str, kind: str, files: list[tuple[str, bytes]], **options
) -> StudySummary:
    """:func:`create_study_from_files` from uploaded files (.zip for folders); all or nothing.

    Error messages name the uploaded file, not the temporary folder it was unpacked to.
    """
    require_admin(user)
    if not files:
        raise StudyError("upload at least one file")
    from annotate.kinds import get_kind

    options["condition"] = options.get("condition") or get_kind(kind).upload_condition(files)
    with unpacked(files) as paths:
        return create_study_from_files(engine, user, name, kind, paths, **options)


@dataclass(frozen=True)
class AnnotatorSummary:
    name: str
    role: str  # admin, annotator, or worker (a crowd worker)
    login: bool  # has a password (crowd workers and imported voters have none)
    kind: str = "human"  # human, or judge (an automatic judge: issue 28)


def list_annotators(engine: Engine, user: Annotator, *, workers: bool = False) -> list[AnnotatorSummary]:
    """Everybody by name, crowd workers only with ``workers`` (the page lists them per study, on the
    Progress page; ``python -m annotate annotator list`` lists them all)."""
    require_admin(user)
    query = select(Annotator).order_by(Annotator.name)
    if not workers:
        query = query.where(Annotator.role != WORKER)
    with read_session(engine) as session:
        return [AnnotatorSummary(a.name, a.role, a.password_hash is not None, a.kind) for a in session.scalars(query)]


def add_person(
    engine: Engine, user: Annotator, name: str, password: str | None, role: str = "annotator", *, kind: str = "human"
) -> AnnotatorSummary:
    """A named account: an annotator or an admin; ``kind="judge"``: an automatic judge (an annotator
    without a password that votes through the HTTP API with a token, kept apart from the humans)."""
    from annotate.store.models import JUDGE, KINDS_OF_ANNOTATOR

    require_admin(user)
    if kind not in KINDS_OF_ANNOTATOR:
        raise StudyError(f"kind must be one of {', '.join(KINDS_OF_ANNOTATOR)}")
    if kind == JUDGE and role != "annotator":
        raise StudyError("an automatic judge is an annotator, never an admin")
    if kind == JUDGE and password:
        raise StudyError("an automatic judge has no password: it votes through the HTTP API with a token")
    with write_session(engine) as session:
        person = add_annotator(session, name, password, role)
        person.kind = kind
        return AnnotatorSummary(person.name, person.role, person.password_hash is not None, kind)


def reset_password(engine: Engine, user: Annotator, name: str, password: str) -> int:
    """A new password for ``name``; it also ends their sessions and API tokens and clears their failed
    logins (``auth.set_password``): the number of API tokens revoked."""
    from annotate.store.models import JUDGE

    require_admin(user)
    with write_session(engine) as session:
        if session.scalar(select(Annotator.kind).where(Annotator.name == name)) == JUDGE:
            raise StudyError(f"{name!r} is an automatic judge: it has no password (it votes through the HTTP API with a token)")
        return set_password(session, name, password)  # also ends their sessions and tokens, clears failed logins


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


def allocation_status(engine: Engine, user: Annotator, study_id: int, *, progress=None) -> reports.AllocationStatus:
    """The design, judgements spent, the main question's current interval and width, the judgements
    projected to reach the target; a study whose target width is reached is closed here (archived;
    ``closed_now`` says so).

    The interval is the Analysis page's own: the same cached analysis (``reports.study_analysis``),
    with the study's stored settings and the system (condition) the page opens with; ``progress`` as
    there (called only when it is computed)."""
    from annotate import reports
    from annotate.kinds import KINDS

    require_admin(user)
    with read_session(engine) as session:
        kind = session.get(Study, study_id).kind
    analysis = None
    if KINDS[kind].rates_metrics:  # a main question to estimate (annotate.reports)
        conditions = study_conditions(engine, user, study_id)
        condition = conditions[0] if len(conditions) > 1 else None  # as the Analysis page's System box
        analysis = reports.study_analysis(
            engine, user, study_id, study_settings(engine, user, study_id), condition=condition, progress=progress
        )
    with read_session(engine) as session:
        report = reports.allocation_status(session, session.get(Study, study_id), analysis)
    if report.reached:
        from dataclasses import replace

        with write_session(engine) as session:
            study = assignment.lock_study(session, study_id)
            closed_now = allocation.close_when_reached(session, study, report.reached, report.target_width)
        report = replace(report, closed=report.closed or closed_now, closed_now=closed_now)
    return report


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
    from formats.gold import read_gold

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
            studies.record(session, study_id, user, "analysis settings", before or "(defaults)", settings.to_dict())
        study.settings = {**(study.settings or {}), "analysis": settings.to_dict()}


# --- annotators left out of a study's analysis (recorded, reversible) ---------------------------


def _voter(session, study_id: int, name: str) -> Annotator:
    """The annotator ``name`` names in a study (an account's name, or a crowd worker's
    ``<platform>:<worker id>``, as the exports show them); an unknown one is a StudyError."""
    shown = crowd.display_names(session, study_id)
    internal = {v: k for k, v in shown.items()}.get(name, name)
    found = session.scalar(select(Annotator).where(Annotator.name == internal))
    if found is None:
        raise StudyError(f"no annotator named {name!r}")
    return found


def _set_excluded(engine: Engine, user: Annotator, study_id: int, name: str, excluded: bool, reason: str) -> bool:
    from annotate import reports
    from annotate.store.models import AnalysisExclusion

    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        annotator = _voter(session, study_id, name)
        name = crowd.display_names(session, study_id).get(annotator.name, annotator.name)  # as exclusions name them
        now = {e.annotator for e in reports.exclusions(session, study_id)}
        if (name in now) == excluded:
            return False
        session.add(
            AnalysisExclusion(study_id=study.id, annotator_id=annotator.id, excluded=excluded, by=user.name, reason=reason)
        )
        if excluded:
            studies.record(session, study_id, user, "excluded from analysis", "", f"{name}: {reason}" if reason else name)
        else:
            studies.record(session, study_id, user, "included in analysis", name, f"{name}: {reason}" if reason else name)
        return True


def exclude_annotator(engine: Engine, user: Annotator, study_id: int, name: str, reason: str = "") -> bool:
    """Leave an annotator's votes out of the study's analysis (agreement, majority and model labels,
    correlations, λ, the analysis exports and the report, which say so); their votes stay in the store
    and in the votes exports.  Recorded (who, when, why) here and in the study's change log; undone by
    :func:`include_annotator`.  Idempotent: True when this call changed the state."""
    return _set_excluded(engine, user, study_id, name, True, reason.strip())


def include_annotator(engine: Engine, user: Annotator, study_id: int, name: str, reason: str = "") -> bool:
    """Take an excluded annotator back into the study's analysis; recorded like the exclusion.
    True when this call changed the state."""
    return _set_excluded(engine, user, study_id, name, False, reason.strip())


def analysis_exclusions(engine: Engine, user: Annotator, study_id: int) -> list[reports.Exclusion]:
    """The annotators left out of the study's analysis now: who, by whom, when, why."""
    from annotate import reports

    require_admin(user)
    with read_session(engine) as session:
        return reports.exclusions(session, study_id)


def annotator_quality(engine: Engine, user: Annotator, study_id: int) -> list[reports.AnnotatorQuality]:
    """Each voter's Dawid-Skene competence and spammer flag (``reports.annotator_quality``), for the
    Progress page; the excluded annotators are listed too (``excluded``)."""
    from annotate import reports

    require_admin(user)
    return reports.annotator_quality(engine, study_id)


def study_conditions(engine: Engine, user: Annotator, study_id: int) -> list[str]:
    """The conditions (systems, variants) of a study's items, in item order."""
    from annotate.study_data import study_conditions as conditions_of

    return conditions_of(engine, user, study_id)


def study_analysis(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress=None,
) -> dict:
    """Everything the Analysis page shows, from the analysis cache (``reports.study_analysis``: one
    computation per study state and settings); ``progress(fraction, text)`` is called between steps
    when it is computed.  The result is shared: callers must not change it.  The study is wanted: the
    background keeps its analysis current for a while (``analysis_jobs.want``, issue 38)."""
    from annotate import analysis_jobs, reports

    found = reports.study_analysis(engine, user, study_id, settings, condition=condition, progress=progress)
    analysis_jobs.want(engine, study_id)
    return found


def analysis_look(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    retry: bool = False,
    wait: float = 0.0,
):
    """What the Analysis page can show at once (``annotate.analysis_jobs.look``): the current analysis,
    or the newest one of fewer votes while the current one is computed in the background."""
    from annotate import analysis_jobs

    return analysis_jobs.look(engine, user, study_id, settings, condition=condition, retry=retry, wait=wait)


def start_background_analysis(engine: Engine) -> bool:
    """Compute each open study's analysis in the background as votes arrive (``analysis_jobs.start_warmer``)."""
    from annotate import analysis_jobs

    return analysis_jobs.start_warmer(engine)


def judge_study(
    engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes, question: str | None = None, seed: int = 0
) -> dict:
    """An uploaded file of automatic judges' labels against the study's human majority
    (``study_data.judge_study``); the judges are never stored as votes."""
    from annotate.study_data import judge_study as judged

    return judged(engine, user, study_id, file_name, data, question, seed=seed)


def adjudicate(
    engine: Engine, user: Annotator, study_id: int, key: str, condition: str, question: str, value: str, note: str = ""
) -> None:
    """An adjudicator's (admin's) final label for an item's question: its own event, apart from the votes."""
    from annotate.store.models import Adjudication

    require_admin(user)
    with write_session(engine) as session:
        study = session.get(Study, study_id)
        item = session.scalar(select(Item).where(Item.study_id == study_id, Item.key == key, Item.condition == condition))
        if item is None:
            raise StudyError(f"no item {key!r} (condition {condition!r}) in study {study.name!r}")
        session.add(
            Adjudication(
                item_id=item.id,
                question=question,
                value=studies.check_value(study, item, question, value),
                by=user.name,
                note=note,
            )
        )


def item_votes(engine: Engine, user: Annotator, study_id: int, key: str, condition: str) -> list[dict]:
    """Drill-down: every vote event on an item, with its annotator, time, time spent and comment: the
    rows of ``votes.vote_rows`` (the votes export's columns, a table on the page) with ``current``."""
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


def study_progress(engine: Engine, user: Annotator, study_id: int) -> reports.StudyProgress:
    from annotate import reports

    require_admin(user)
    with read_session(engine) as session:
        return reports.progress(session, study_id)


def vote_table(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> list[dict]:
    require_admin(user)
    with read_session(engine) as session:
        return votes.vote_rows(session, study_id, history=history)


def votes_csv(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> str:
    return votes.rows_to_csv(vote_table(engine, user, study_id, history=history))


def votes_download(engine: Engine, user: Annotator, study_id: int, *, history: bool = False, fmt: str = "csv") -> tuple[str, int]:
    """The votes as CSV (``fmt="csv"``) or JSON lines (``"jsonl"``), and the newest vote event they
    hold (for :func:`record_export` once downloaded or written)."""
    import json

    require_admin(user)
    with read_session(engine) as session:
        through = studies.last_vote(session, study_id)
        rows = votes.vote_rows(session, study_id, history=history)
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), through
    return votes.rows_to_csv(rows), through


def import_votes(engine: Engine, user: Annotator, study_id: int, file_name: str, text: str) -> int:
    """Tidy CSV votes (item, annotator, question, value[, comment]): checked, staged apart, then
    swapped in by one short transaction (``votes.import_votes_file``); the votes imported."""
    require_admin(user)
    return votes.import_votes_file(engine, study_id, file_name, text)


def import_votes_upload(engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes) -> int:
    """:func:`import_votes` of an uploaded file (the Progress page): its bytes read as the command line
    reads a file (``formats.errors.read_text``: the size limit, UTF-8 with the line of a bad byte), then
    the same checks, all or nothing; a refusal (``ReaderError``) names the file and the line."""
    from formats.errors import read_text

    require_admin(user)
    return import_votes(engine, user, study_id, file_name, read_text(file_name, data))


def record_export(engine: Engine, user: Annotator, study_id: int, what: str, through: int) -> None:
    """The votes up to event ``through`` were exported (a download button's callback, a command line's
    file written): recorded, and counted for a later delete."""
    require_admin(user)
    with write_session(engine) as session:
        studies.record_export(session, assignment.lock_study(session, study_id), user, what, through)


def delete_study(engine: Engine, user: Annotator, study_id: int, confirm: str) -> None:
    """Delete a study: the admin types its name; refused while votes exist that were not exported."""
    require_admin(user)
    with write_session(engine) as session:
        try:
            studies.delete_study(session, assignment.lock_study(session, study_id), confirm)
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
    """One export format of a study as a download: (bytes, file name); several files come zipped.
    The analysis is the cached one (``reports.study_analysis``), shared with the Analysis page."""
    require_admin(user)
    from annotate import reports
    from exports.formats import as_download, write

    settings = settings or study_settings(engine, user, study_id)
    data = reports.load_study(engine, study_id, history=history)
    shared = lambda chosen: reports.study_analysis(engine, user, study_id, settings, condition=chosen)  # noqa: E731
    return as_download(write(data, fmt, settings, history=history, condition=condition, analysis=shared))


@dataclass(frozen=True)
class ExportFiles:
    """A study's export as files (``python -m exports``): (relative path, bytes) each, the study's id,
    and the newest vote event the export holds (read before the votes: for :func:`record_export`)."""

    files: list[tuple[str, bytes]]
    study_id: int
    through: int


def export_files(
    engine: Engine,
    user: Annotator,
    study: str | int,
    fmt: str,
    settings: AnalysisSettings,
    *,
    history: bool = False,
    condition: str | None = None,
) -> ExportFiles:
    """One export format of a study (by name or id) as its files, analysed afresh with ``settings``;
    an unknown study is a ValueError that lists the names (``study_data.find_study``)."""
    from annotate import reports
    from annotate.study_data import find_study
    from exports.formats import write

    require_admin(user)
    with read_session(engine) as session:  # the newest vote the export holds, read before the votes
        study_id = find_study(session, study).id
        through = studies.last_vote(session, study_id)
    data = reports.load_study(engine, study_id, history=history)
    return ExportFiles(write(data, fmt, settings, history=history, condition=condition), study_id, through)


def set_designed_k(
    engine: Engine, user: Annotator, study_id: int, design: dict, *, budget: int | None = None
) -> allocation.Drawn:
    """Fix the study's design to the designer's proposal (issue 29; ``metrics.design``), before its first
    vote: ``design`` has ``n``, ``m``, ``k_overlap`` and optionally ``seed`` (a proposal's
    ``as_dict()["proposal"]`` with a seed will do: its ``pool`` must be the study's items, the other
    keys are the designer's own and left out).
    ``annotate.allocation`` (policy ``designed``) draws the n dialogues and the overlap subset and
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
    ``comparison``: FGA at ``lam`` against JGA; ``lambda``: λ* over ``metrics.design.DESIGN_GRID`` with
    ``lam`` the prior best λ (``r_a`` its prior corrected r).  ValueError (the designer's reason) when no
    identified design fits."""
    from annotate import reports
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings
    from metrics.design import design

    require_admin(user)
    data = reports.load_study(engine, study_id)
    if not data.dialogues:
        raise StudyError("the designer needs metric scores: a dialogue satisfaction study")
    dialogues = next(iter(data.dialogues.values()))
    if question == "lambda":
        from metrics.design import DESIGN_GRID, nearest_on_grid

        grid = DESIGN_GRID
        _, values = per_dialogue_metrics(dialogues, ScoreSettings(lambdas=grid, lambda_labels=tuple(f"{v:g}" for v in grid)))
        scores = {f"fga_{v:g}": values[f"fga_{v:g}"] for v in grid}
        return design(question, scores, budget, target_width, icc=icc, r_a=r_a, metric_a=f"fga_{nearest_on_grid(lam):g}")
    label = f"{lam:g}"
    _, values = per_dialogue_metrics(dialogues, ScoreSettings(lambdas=(lam,), lambda_labels=(label,)))
    scores = {"fga": values[f"fga_{label}"], "jga": values["jga"]}
    return design(question, scores, budget, target_width, icc=icc, r_a=r_a, r_b=r_b, metric_a="fga", metric_b="jga")


# --- the HTTP API (issue 28): tokens, and the annotator's loop as data -------------------------------


def open_engine(url: str | None = None) -> Engine:
    """The database of ``url`` (else ``DST_JUDGE_DB``, else the embedded SQLite file), migrated."""
    from annotate.store.db import get_engine

    return get_engine(url)


# ``annotate.api`` calls only these (and the functions above): the same rules as the pages, checked here.


def token_user(engine: Engine, token: str) -> Annotator | None:
    """The annotator a live API token acts as, else None (one indexed read; a revoked token at once)."""
    with read_session(engine) as session:
        found = tokens.user_of(session, token)
        if found is not None:
            session.expunge(found)
        return found


def add_token(engine: Engine, user: Annotator, name: str, label: str = "") -> tuple[str, tokens.TokenInfo]:
    """A new API token for the annotator ``name``: (the token, shown once; what is kept of it)."""
    require_admin(user)
    with write_session(engine) as session:
        return tokens.add_token(session, name, by=getattr(user, "name", "cli"), label=label)


def revoke_tokens(engine: Engine, user: Annotator, name: str, token_id: int | None = None) -> int:
    """Revoke the annotator's live tokens (or one): how many; they are refused from the next request."""
    require_admin(user)
    with write_session(engine) as session:
        return tokens.revoke(session, name, token_id)


def list_tokens(engine: Engine, user: Annotator) -> list:
    """Every API token made (never the token: its first characters), newest first."""
    require_admin(user)
    with read_session(engine) as session:
        return tokens.tokens(session)


@dataclass(frozen=True)
class ApiQuestion:
    name: str
    type: str  # binary, choice, text
    label: str
    required: bool
    answers: list[str] | None  # the answers it takes; None: free text


@dataclass(frozen=True)
class ApiItem:
    """An item as the HTTP API gives it: what the kind's page shows, as data (``Kind.data``), its
    questions with their allowed answers, and the caller's current answers on it."""

    id: int
    key: str
    study: int
    kind: str
    data: dict
    questions: list[ApiQuestion]
    answers: dict[str, str]
    comment: str


@dataclass(frozen=True)
class ApiProgress:
    judged: int  # items the caller judged in the study
    items: int  # the study's items to judge
    study_fraction: float  # the study's judgements done (or its budget spent)
    quota: int | None  # a crowd worker's quota


@dataclass(frozen=True)
class ApiNext:
    item: ApiItem | None  # None: nothing left for the caller (or a crowd worker's quota reached)
    progress: ApiProgress


@dataclass(frozen=True)
class ApiVote:
    """What a vote POST stored: the caller's current answers on the item, whether the judgement is
    complete (every required question answered), the progress, whether this vote closed the study
    (its budget spent), and whether this response is a replay of an earlier POST with the same key."""

    item: int
    answers: dict[str, str]
    complete: bool
    progress: ApiProgress
    closed: bool
    replayed: bool = False


def _api_progress(progress: loop.Progress) -> ApiProgress:
    return ApiProgress(progress.mine, progress.items, round(progress.study_fraction, 6), progress.quota)


def _api_item(session, screen: loop.Screen, study_id: int) -> ApiItem | None:
    from annotate.assignment import study_row
    from annotate.kinds import KINDS
    from annotate.kinds.base import allowed_answers
    from annotate.kinds.base import question_spec as spec_in

    item = screen.item
    if item is None:
        return None
    study = study_row(session, study_id)
    kind = session.scalar(select(Study.kind).where(Study.id == study_id))
    questions = []
    for name in item.questions:
        spec = spec_in(study.questions, name)
        questions.append(
            ApiQuestion(name, spec["type"], str(spec.get("label", name)), bool(spec.get("required", True)), allowed_answers(spec))
        )
    data = KINDS[kind].data(item.payload)
    return ApiItem(item.id, item.key, study_id, kind, data, questions, dict(screen.answers), screen.comment)


def api_study(engine: Engine, user: Annotator, study: str) -> int:
    """The id of the study named by ``study``: its id (ASCII digits), else its name
    (``formats.references.reference``: ``¹`` or ``١`` is a name, never a number); PermissionDenied ("no
    such study") when none has that name or id.  Whether the caller may see it is the access rule of the
    call that follows (``loop.access``: 403, or StudyClosed for a study that closed), as for the pages."""
    from formats.references import MAX_ID, reference

    found = reference(study)
    if isinstance(found, int):
        if not 1 <= found <= MAX_ID:
            raise PermissionDenied("no such study")
        return found
    with read_session(engine) as session:
        found = session.scalar(select(Study.id).where(Study.name == study))
    if found is None:
        raise PermissionDenied("no such study")
    return found


def api_next(engine: Engine, user: Annotator, study_id: int) -> ApiNext:
    """The caller's next item, claimed (the one they hold, else a new place), as data: one write."""
    with write_session(engine) as session:
        screen = loop.claim_screen(session, user, study_id)
        return ApiNext(_api_item(session, screen, study_id), _api_progress(screen.progress))


def api_progress(engine: Engine, user: Annotator, study_id: int) -> ApiProgress:
    with read_session(engine) as session:
        loop.access(session, user, study_id)  # the same access rule as every screen
        return _api_progress(loop.progress_of(session, user, study_id))


def api_vote(
    engine: Engine,
    user: Annotator,
    study_id: int,
    item_id: int,
    answers: dict[str, str],
    *,
    comment: str = "",
    seconds: float | None = None,
    key: str | None = None,
) -> ApiVote:
    """One judgement through the API, in one write transaction, exactly as the page stores it
    (``loop.answer``: the item must be the caller's, the answers are checked, k is never exceeded);
    the item stays the caller's (``next`` gives the next one).  ``key``: the client's Idempotency-Key
    (``annotate.idempotency``): a retry returns the first response and stores nothing."""
    from dataclasses import asdict

    from sqlalchemy.exc import IntegrityError

    from annotate import idempotency
    from annotate.assignment import study_row
    from annotate.studies import required_questions

    if not answers:
        raise StudyError("nothing to save: give at least one answer")
    print_ = idempotency.fingerprint(study_id, item_id, answers, comment, seconds)
    for attempt in range(3):
        try:
            with write_session(engine) as session:
                if key:
                    stored = idempotency.replayed(session, user.id, key, print_)
                    if stored is not None:
                        return ApiVote(**{**stored, "progress": ApiProgress(**stored["progress"]), "replayed": True})
                    row = idempotency.reserve(session, user.id, key, print_)
                screen = loop.answer(session, user, study_id, loop.Judgement(item_id, answers, False, comment, seconds))
                required = set(required_questions(study_row(session, study_id), screen.item)) if screen.item else set()
                result = ApiVote(
                    item_id,
                    dict(screen.answers),
                    required <= set(screen.answers),
                    _api_progress(screen.progress),
                    screen.closed,
                )
                if key:
                    row.response = asdict(result)
                return result
        except IntegrityError:
            if not key or attempt == 2:  # another copy of this request committed the key first: look again
                raise
    raise AssertionError("unreachable")


def api_export(engine: Engine, user: Annotator, study_id: int, fmt: str) -> tuple[bytes, str]:
    """One export format (admins): (bytes, file name), recorded as exported (``record_export``)."""
    require_admin(user)
    with read_session(engine) as session:
        through = studies.last_vote(session, study_id)
    data, name = export(engine, user, study_id, fmt)
    record_export(engine, user, study_id, f"{fmt} (HTTP API)", through)
    return data, name


# what the service's callers catch (the pages, the CLIs, the API's problem mapping)
__all__ = [
    "AuthError",
    "CapacityError",
    "KeyReused",
    "NotLoggedIn",
    "PermissionDenied",
    "Reassigned",
    "StudyClosed",
    "StudyError",
    "question_spec",
    "require_admin",
]
