"""The data model (SQLAlchemy 2).  Vote events are append-only: the current vote of an
annotator on an item's question is its latest event.

Keys and questions are a contract (scripts and exports rely on them):
- satisfaction: item key = dialogue id as in the source (``PMUL4648.json``), condition =
  system name; question ``satisfied`` (1/0).
- coco: item key = ``<dialogue id>/<turn index>``, condition = ``original`` or the CoCo
  variant; questions ``human_like`` and ``correct`` (1/0).
- slu: item key = ``<session-id>/<turn-index>``; one question per distinct recognised act
  in DSTC notation (``inform(food=korean)``), 1/0; plus ``transcription`` (text) and
  ``transcription_status`` (the handbook's values).
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

ROLES = ("annotator", "admin")  # the roles of named accounts
WORKER = "worker"  # a crowd worker: made by a study's join link only (annotate.studies.crowd), no password
HUMAN, JUDGE = "human", "judge"  # an annotator's kind: a person, or an automatic judge (an LLM, a classifier; issue 28)
KINDS_OF_ANNOTATOR = (HUMAN, JUDGE)
# Minutes an item stays held for an annotator who neither judges nor skips it (a study's own
# ``timeout_minutes`` setting overrides it); the one place this default is written.
DEFAULT_TIMEOUT_MINUTES = 30


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Study(Base):
    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(20))
    guideline: Mapped[str] = mapped_column(Text, default="")
    overlap: Mapped[int] = mapped_column(Integer, default=3)
    questions: Mapped[list] = mapped_column(JSON, default=list)  # study-level question specs
    settings: Mapped[dict] = mapped_column(JSON, default=dict)  # seed, timeout_minutes, sources, ...
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())  # hidden from annotators

    items: Mapped[list[Item]] = relationship(back_populates="study", cascade="all, delete-orphan")


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("study_id", "key", "condition", name="uq_item_key"),
        Index("ix_items_open", "study_id", "condition", "included", "holders", "position"),
        Index("ix_items_capacity", "study_id", "included", "extra_capacity", "k"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(300))
    condition: Mapped[str] = mapped_column(String(100), default="")
    position: Mapped[int] = mapped_column(Integer, default=0)
    questions: Mapped[list] = mapped_column(JSON, default=list)  # question names asked on this item
    payload: Mapped[dict] = mapped_column(JSON, default=dict)  # what the page shows (never the condition)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)  # hidden facts: source file, CoCo success flag, ...
    gold: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # attention check: {question: value}
    extra_capacity: Mapped[int] = mapped_column(Integer, default=0)  # admin re-opens add judgements
    # places taken (assignments done or active), kept by the transactions that change them (annotate.studies.assignment)
    holders: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # the allocation design (annotate.studies.allocation): an adaptive study judges only the items its draw
    # included, each with inclusion probability ``pi`` (None: the uniform design)
    included: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    pi: Mapped[float | None] = mapped_column(Float, nullable=True)
    # places by design (a designed study: k_overlap on the overlap subset, one on the others); None:
    # the study's overlap.  Every capacity is ``coalesce(k, overlap) + extra_capacity`` (issue 29)
    k: Mapped[int | None] = mapped_column(Integer, nullable=True)

    study: Mapped[Study] = relationship(back_populates="items")


class Annotator(Base):
    __tablename__ = "annotators"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="annotator")
    password_hash: Mapped[str | None] = mapped_column(String(200), nullable=True)  # None: no login
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # human, or judge: an automatic judge votes through the HTTP API like a person, on places of its
    # own (never one of an item's k), and is kept apart from the humans in the analysis
    kind: Mapped[str] = mapped_column(String(20), default=HUMAN, server_default=HUMAN)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("item_id", "annotator_id", name="uq_assignment"),
        Index("ix_assignment_study_annotator", "study_id", "annotator_id"),
        Index("ix_assignment_study_status_at", "study_id", "status", "assigned_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="active")
    assigned_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class VoteEvent(Base):
    """Append-only: never updated, never deleted."""

    __tablename__ = "vote_events"
    __table_args__ = (Index("ix_vote_item_annotator", "item_id", "annotator_id", "question"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    question: Mapped[str] = mapped_column(String(300))
    value: Mapped[str] = mapped_column(Text)
    comment: Mapped[str] = mapped_column(Text, default="")
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    source: Mapped[str] = mapped_column(String(20), default="human")  # human | import | judge
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LoginFailure(Base):
    """A failed login, for throttling across app servers (per name, and per name and client)."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_name_at", "name", "at"),
        Index("ix_login_failures_name_client_at", "name", "client", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    client: Mapped[str] = mapped_column(String(100), default="", server_default="")
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LoginSession(Base):
    """A browser login.  Only the SHA-256 of the cookie's random token is stored."""

    __tablename__ = "login_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class StudyMember(Base):
    """Who may annotate a study.  A study with no members is open to every annotator; once it has
    members, only they (and admins) see it and get its items."""

    __tablename__ = "study_members"

    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), primary_key=True, index=True)
    added_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class StudyChange(Base):
    """A change an admin made to a study after its creation (overlap, guideline, members, archive):
    append-only, like votes."""

    __tablename__ = "study_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    by: Mapped[str] = mapped_column(String(100))
    what: Mapped[str] = mapped_column(String(40))
    old: Mapped[str] = mapped_column(Text, default="")
    new: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Adjudication(Base):
    """An adjudicator's final label for an item's question, kept apart from the annotators' votes.
    Append-only: the current label is the latest event."""

    __tablename__ = "adjudications"
    __table_args__ = (Index("ix_adjudications_item_question", "item_id", "question"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    question: Mapped[str] = mapped_column(String(300))
    value: Mapped[str] = mapped_column(Text)
    by: Mapped[str] = mapped_column(String(100))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class CrowdWorker(Base):
    """A crowd worker who joined a study by its join link: one annotator row (role ``worker``, no
    password) per study and platform id, so a worker's login reaches that study only."""

    __tablename__ = "crowd_workers"
    __table_args__ = (
        UniqueConstraint("study_id", "platform", "worker_id", name="uq_crowd_worker"),
        Index("ix_crowd_workers_client_joined", "client", "joined_at"),  # new workers per client (annotate.studies.crowd)
        Index("ix_crowd_workers_study_joined", "study_id", "joined_at"),  # joins per minute
    )

    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    platform: Mapped[str] = mapped_column(String(20))  # prolific | generic
    worker_id: Mapped[str] = mapped_column(String(64))  # PROLIFIC_PID, or the link's worker
    platform_study: Mapped[str] = mapped_column(String(64), default="")  # Prolific's STUDY_ID
    platform_session: Mapped[str] = mapped_column(String(64), default="")  # Prolific's SESSION_ID (of the first join)
    joined_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)  # completion code shown
    client: Mapped[str] = mapped_column(String(100), default="", server_default="")  # address it joined from: the limit only
    # the key of the browser tokens that bind the worker id to the browser of its first join (annotate.studies.crowd);
    # empty for the workers who joined before issue 37: no browser can show a token for them
    device_key: Mapped[str] = mapped_column(String(64), default="", server_default="")


class ItemAudio(Base):
    """The recording of an item (an SLU turn's audio file, when the call folder had it), kept in the
    database so that every app server can play it whatever files it can reach."""

    __tablename__ = "item_audio"

    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), primary_key=True)
    file_name: Mapped[str] = mapped_column(String(300))
    mime: Mapped[str] = mapped_column(String(40))
    data: Mapped[bytes] = mapped_column(LargeBinary)


class AnalysisExclusion(Base):
    """An admin left an annotator out of a study's analysis (``excluded`` True) or took them back in
    (False): append-only, the current state of (study, annotator) is its latest event.  The votes stay
    in the store; the analysis, its exports and the report leave them out and say so."""

    __tablename__ = "analysis_exclusions"
    __table_args__ = (Index("ix_analysis_exclusions_study_annotator", "study_id", "annotator_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    excluded: Mapped[bool] = mapped_column(Boolean)
    by: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ApiToken(Base):
    """A bearer token of the HTTP API (``annotate.people.tokens``): it acts as its annotator, with their role.
    Only the SHA-256 of the token is stored (the token is 256 random bits, shown once when made)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # the token's first characters, to tell tokens apart
    label: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class ApiRequest(Base):
    """A vote POSTed with an ``Idempotency-Key`` (``annotate.judging.idempotency``): the key, a fingerprint of
    the request and the response sent, so that a retried POST gets the same response and stores
    nothing twice.  Written in the vote's own transaction."""

    __tablename__ = "api_requests"
    __table_args__ = (UniqueConstraint("annotator_id", "key", name="uq_api_request_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    fingerprint: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer, default=200)
    response: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class AnalysisResult(Base):
    """A study's analysis as an app server computed it, shared by every app server of the database
    (``annotate.analysis.analysis_cache``, issue 39): one row per slot (study, analysis settings, condition),
    holding the newest result (``digest``: the whole key, the study's inputs included) and the lease of
    the server computing the next one (``running_*``), so that two servers compute an analysis once.
    The payload is a compressed pickle of plain values (dicts, lists, numbers, strings) and is loaded
    with no class or function allowed; a row is only a cache: deleting it costs a recomputation."""

    __tablename__ = "analysis_results"

    slot: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 of (study, settings, condition)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    digest: Mapped[str | None] = mapped_column(String(64), nullable=True)  # SHA-256 of the whole key of the payload
    payload: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    votes: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the vote events the payload was computed on
    computed_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # time.time() of its computation
    running_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the key being computed
    running_until: Mapped[float | None] = mapped_column(Float, nullable=True)  # the lease's end (time.time())
    running_by: Mapped[str] = mapped_column(String(200), default="")  # host and process computing it
