"""The HTTP API's door (issue 28): its data shapes, and the annotator's loop as data.  ``annotate.api``
(the routes) calls only these and the service's other functions: the same rules as the pages,
checked here."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from annotate import studies
from annotate.judging import idempotency, loop
from annotate.kinds import KINDS
from annotate.kinds.base import allowed_answers
from annotate.kinds.base import question_spec as spec_in
from annotate.people.auth import PermissionDenied, require_admin
from annotate.service.downloads import export, record_export
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Study
from annotate.studies import StudyError, required_questions
from annotate.studies.assignment import study_row
from formats.references import MAX_ID, reference


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
    (``annotate.judging.idempotency``): a retry returns the first response and stores nothing."""
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
