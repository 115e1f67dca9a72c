"""The analysis cache: one study's analysis per (study, settings, condition, inputs), in this process and
shared by every app server of the database (issue 39, item 2).

The bootstrap and the λ calibration take seconds, so a look that changes nothing must cost nothing, and
a look after any change must see it (issue 24): an analysis is named by an :class:`AnalysisKey`, whose
``inputs`` (:func:`inputs_version`, two cheap queries) change with any write the analysis reads, whichever
path (app, CLI, a script) made it.

Two levels:

- **This process** (:func:`cached`, :func:`newest`, :func:`keep`): the results themselves, at most
  ``CACHE_ENTRIES``, only the newest state of a study per slot (issue 37's soak).
- **The database** (:func:`fetch`, :func:`fetch_newest`, :func:`store`, :func:`claim`): the table
  ``analysis_results``, one row per slot (study, settings, condition) with the newest result and the lease
  of the server computing the next one.  A server that needs an analysis another server holds reads it
  (a compressed pickle, a few hundred kB for a study of 1,500 dialogues); a server that needs one another
  server is computing waits for it (``annotate.analysis.analysis_jobs``); so two servers compute an analysis once.
  A lease lasts ``DST_JUDGE_ANALYSIS_LEASE_SECONDS`` (60) and is renewed while its computation runs (:func:`claimed`), so a server
  that died mid-way holds nobody up for longer than that.

The stored payload is only ever plain values (dicts, lists, tuples, numbers, strings, None: what
``exports`` and the pages read): it is written only when it holds nothing else and read by an unpickler
that allows no class and no function, so a row someone wrote into the table cannot run code.  A
payload that does not load is a miss (computed again), never an error.

Nothing here computes or imports the analysis stack: ``annotate.analysis.analysis_jobs`` computes
(``annotate.analysis.study_data.analyse_afresh``) and calls this module; this module calls nothing above it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import pickletools
import socket
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import Engine, case, delete, func, insert, select, true, update
from sqlalchemy.exc import IntegrityError

from annotate.store.db import read_session, write_session
from annotate.store.models import (
    Adjudication,
    AnalysisExclusion,
    AnalysisResult,
    Item,
    Study,
    StudyMember,
    VoteEvent,
)
from formats.settings import settings

if TYPE_CHECKING:
    from metrics.analysis import AnalysisSettings

log = logging.getLogger(__name__)

CACHE_ENTRIES = 32
# Settings the analysis never reads: operational ones that change often (a votes download records
# ``exported_through``; crowd links, their secret and quota; the places' timeout).
NOT_ANALYSED = frozenset({"crowd", "exported_through", "timeout_minutes"})


class Counts(NamedTuple):
    """What :func:`inputs_version` counts of a study's rows (append-only events: count and newest id;
    items: sums, plain and weighted by the item's id)."""

    votes: int
    last_vote: int | None
    adjudications: int
    last_adjudication: int | None
    items: int
    extra: int | None
    included: int | None
    n_pi: int
    pi: float | None
    last_item: int | None
    extra_by_id: int | None
    included_by_id: int | None
    pi_by_id: float | None
    members: int
    member_ids: int | None
    members_added: datetime | None
    left_out: int
    last_left_out: int | None
    k: int | None
    k_by_id: int | None


class Inputs(NamedTuple):
    """A study's inputs as its analysis reads them (:func:`inputs_version`): equal while nothing it
    reads changed."""

    created: datetime
    kind: str
    overlap: int
    fingerprint: str  # the analysed settings and the gold answers, hashed
    counts: Counts


@dataclass(frozen=True)
class AnalysisKey:
    """What names one analysis: the database, the study, the settings, the system (condition) and the
    study's inputs then.  ``slot``: the same analysis whatever the inputs (the cache keeps the newest
    per slot); ``first()``: the key of its first answers (no resamples); ``digest`` and
    ``slot_digest``: the same, as the database's table names them (the database itself left out: the
    table is in it)."""

    url: str
    study_id: int
    settings: AnalysisSettings
    condition: str | None
    inputs: Inputs

    @property
    def study(self) -> tuple[str, int]:
        return (self.url, self.study_id)

    @property
    def slot(self) -> tuple:
        return (self.url, self.study_id, self.settings, self.condition)

    @property
    def has_votes(self) -> bool:
        """Whether the study had any vote event then (nothing to analyse without)."""
        return bool(self.inputs.counts.votes)

    def first(self) -> AnalysisKey:
        """The key of the first answers: the same analysis without its resamples (agreement, majority,
        r per metric, the λ curve; no bootstrap interval, Dawid-Skene fitted once), a small part of its
        cost (``annotate.analysis.analysis_jobs`` computes it first, issue 38)."""
        return replace(self, settings=replace(self.settings, resamples=0))

    @property
    def slot_digest(self) -> str:
        return _sha([code_version(), self.study_id, self.settings.to_dict(), self.condition])

    @property
    def digest(self) -> str:
        return _sha([code_version(), self.study_id, self.settings.to_dict(), self.condition, list(self.inputs)])


_CODE: list[str] = []


def code_version() -> str:
    """A hash of the code that makes an analysis (``metrics``, ``exports``, ``formats``, ``annotate/kinds``,
    ``annotate/analysis/study_data.py``), read once per process: a result stored by another release is never
    served as current (the table outlives a restart and an upgrade; servers mid-deploy differ)."""
    if not _CODE:
        root = Path(__file__).resolve().parent.parent.parent
        files = [*(root / "annotate" / "kinds").rglob("*.py"), root / "annotate" / "analysis" / "study_data.py"]
        for package in ("metrics", "exports", "formats"):
            files += (root / package).rglob("*.py")
        digest = hashlib.sha256()
        for path in sorted(files):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
        _CODE.append(digest.hexdigest()[:16])
    return _CODE[0]


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def inputs_version(session, study_id: int) -> Inputs:
    """A cheap fingerprint of everything a study's analysis reads, in two queries: the study row (its
    kind, overlap and settings but those in ``NOT_ANALYSED``), its vote events and adjudications
    (append-only: count and newest id), its items' capacity (extra places, designed k), draw and inclusion probabilities, their
    gold answers (only the items with gold, few: read whole), its members and the annotators left out of
    its analysis (append-only events: count and newest id).  Any write that changes
    an input changes it, whichever path (app, CLI, a script) made the write.

    The items' numbers are summed twice, plainly and weighted by the item's id, so that a value moved
    from one item to another (π from one dialogue to another: a different weight for each) changes
    the sums too (issue 25).  Float sums are compared to 12 significant digits (the same on every
    look, whatever order the database adds them in)."""

    def aggregate(*columns, join=None, where):
        query = select(*columns)
        if join is not None:
            query = query.join(Item, Item.id == join)
        return query.where(where).subquery()

    votes = aggregate(
        func.count(VoteEvent.id).label("n"),
        func.max(VoteEvent.id).label("last"),
        join=VoteEvent.item_id,
        where=Item.study_id == study_id,
    )
    judged = aggregate(
        func.count(Adjudication.id).label("n"),
        func.max(Adjudication.id).label("last"),
        join=Adjudication.item_id,
        where=Item.study_id == study_id,
    )
    items = aggregate(
        func.count(Item.id).label("n"),
        func.sum(Item.extra_capacity).label("extra"),
        func.sum(case((Item.included == true(), 1), else_=0)).label("included"),
        func.count(Item.pi).label("n_pi"),
        func.sum(Item.pi).label("pi"),
        func.max(Item.id).label("last"),
        func.sum(Item.id * Item.extra_capacity).label("extra_by_id"),
        func.sum(case((Item.included == true(), Item.id), else_=0)).label("included_by_id"),
        func.sum(Item.id * Item.pi).label("pi_by_id"),
        func.sum(Item.k).label("k"),  # the designed votes per item (issue 29)
        func.sum(Item.id * Item.k).label("k_by_id"),
        where=Item.study_id == study_id,
    )
    members = aggregate(
        func.count(StudyMember.annotator_id).label("n"),
        func.sum(StudyMember.annotator_id).label("ids"),
        func.max(StudyMember.added_at).label("added"),
        where=StudyMember.study_id == study_id,
    )
    left_out = aggregate(
        func.count(AnalysisExclusion.id).label("n"),
        func.max(AnalysisExclusion.id).label("last"),
        where=AnalysisExclusion.study_id == study_id,
    )
    row = session.execute(
        select(
            Study.created_at,
            Study.kind,
            Study.overlap,
            Study.settings,
            votes.c.n,
            votes.c.last,
            judged.c.n,
            judged.c.last,
            items.c.n,
            items.c.extra,
            items.c.included,
            items.c.n_pi,
            items.c.pi,
            items.c.last,
            items.c.extra_by_id,
            items.c.included_by_id,
            items.c.pi_by_id,
            members.c.n,
            members.c.ids,
            members.c.added,
            left_out.c.n,
            left_out.c.last,
            items.c.k,
            items.c.k_by_id,
        )
        .select_from(Study)
        .join(votes, true())
        .join(judged, true())
        .join(items, true())
        .join(members, true())
        .join(left_out, true())
        .where(Study.id == study_id)
    ).one_or_none()
    if row is None:
        raise ValueError(f"no study with id {study_id}")
    created, kind, overlap, settings, *numbers = row
    analysed = {k: v for k, v in (settings or {}).items() if k not in NOT_ANALYSED}
    counts = Counts(*numbers)
    counts = counts._replace(**{name: _digits(getattr(counts, name)) for name in ("pi", "pi_by_id")})  # the sums of π
    gold = session.execute(
        select(Item.id, Item.gold).where(Item.study_id == study_id, Item.gold.is_not(None)).order_by(Item.id)
    ).all()
    fingerprint = json.dumps([analysed, [[i, g] for i, g in gold if g]], sort_keys=True, default=str)
    return Inputs(created, kind, overlap, hashlib.sha256(fingerprint.encode()).hexdigest(), counts)


def _digits(value) -> float | None:
    """A float sum to 12 significant digits: the same on every look, whatever order the database adds in."""
    return None if value is None else float(f"{float(value):.12g}")


def analysis_key(engine: Engine, study_id: int, settings: AnalysisSettings, condition: str | None) -> AnalysisKey:
    """The cache's key: the database, the study, the analysis settings and condition, and the
    study's :func:`inputs_version`."""
    with read_session(engine) as session:
        version = inputs_version(session, study_id)
    return AnalysisKey(engine.url.render_as_string(hide_password=False), study_id, settings, condition, version)


# --- in this process ---------------------------------------------------------------------------

_CACHE: OrderedDict[AnalysisKey, dict] = OrderedDict()
_NEWEST: dict[tuple, dict] = {}  # AnalysisKey.slot (database, study, settings, condition) -> the newest result, any inputs
_STAMPS: OrderedDict[int, tuple[dict, float, str]] = OrderedDict()  # id(result) -> (result, when computed, where)
_LOCK = threading.Lock()


def cached(key: AnalysisKey) -> dict | None:
    """The analysis under ``key`` (:func:`analysis_key`) if this process holds it."""
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    return None


def newest(key: AnalysisKey) -> dict | None:
    """The newest analysis this process holds for ``key``'s study, settings and condition, whatever the
    study's inputs were then (its ``n_votes`` says on how many votes): what the Analysis page shows while
    the current one is computed (``annotate.analysis.analysis_jobs``)."""
    with _LOCK:
        return _NEWEST.get(key.slot)


def computed_at(result: dict | None) -> float | None:
    """When (``time.time()``) ``result`` was computed, here or by another server (None: unknown)."""
    with _LOCK:
        found = _STAMPS.get(id(result))
    return found[1] if found is not None and found[0] is result else None


def origin(result: dict | None) -> str | None:
    """Where this process got ``result``: ``"computed"`` (here, or in its analysis process) or
    ``"stored"`` (read from the database: another server, or this one before a restart, computed it)."""
    with _LOCK:
        found = _STAMPS.get(id(result))
    return found[2] if found is not None and found[0] is result else None


def keep(key: AnalysisKey, result: dict, *, when: float | None = None, where: str = "computed") -> dict:
    """Keep ``result``, the analysis ``key`` names, in this process (computed ``when``, by default now)."""
    with _LOCK:
        _STAMPS[id(result)] = (result, time.time() if when is None else when, where)
        # Only the newest state of a study is kept per settings (issue 37: the soak's server kept 32
        # analyses of one study at fewer votes, a megabyte or more each): its inputs only move on.
        for older in [k for k in _CACHE if k.slot == key.slot and k != key]:
            del _CACHE[older]
        _CACHE[key] = result
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
        _NEWEST[key.slot] = result  # first answers (``AnalysisKey.first``) have settings of their own: a slot of their own
        while len(_NEWEST) > CACHE_ENTRIES:
            _NEWEST.pop(next(iter(_NEWEST)))
        live = {id(r) for r in _CACHE.values()} | {id(r) for r in _NEWEST.values()}
        for gone in [i for i in _STAMPS if i not in live]:  # a stamp must not keep a dropped result alive
            del _STAMPS[gone]
    return result


def clear(engine: Engine | None = None) -> None:
    """Forget every analysis this process holds; with ``engine``, the database's stored ones too (as if
    nothing had ever been computed: benchmarks of a first look)."""
    with _LOCK:
        _CACHE.clear()
        _NEWEST.clear()
        _STAMPS.clear()
    if engine is not None:
        with write_session(engine) as session:
            session.execute(delete(AnalysisResult))


# --- shared by the app servers of the database ---------------------------------------------------


class _PlainValues(pickle.Unpickler):
    """Loads plain values only: any class or function a payload names is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"a stored analysis names {module}.{name}: refused")


_GLOBALS = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4"}


def _pack(result: dict) -> bytes | None:
    """The stored form of ``result`` (pickle, zlib), or None when it holds anything but plain values."""
    data = pickle.dumps(result, protocol=5)
    if any(op.name in _GLOBALS for op, _, _ in pickletools.genops(data)):
        return None
    return zlib.compress(data, 1)


MAX_UNPACKED = 512 * 2**20  # a stored analysis larger than this once decompressed is refused (a zlib bomb)


def _unpack(payload: bytes) -> dict | None:
    try:
        inflate = zlib.decompressobj()
        data = inflate.decompress(payload, MAX_UNPACKED)
        if inflate.unconsumed_tail:
            raise ValueError(f"over {MAX_UNPACKED // 2**20} MB once decompressed")
        found = _PlainValues(io.BytesIO(data)).load()
    except Exception as error:  # a payload that does not load is a miss, never an error
        log.warning("a stored analysis did not load (%s): computed again", error)
        return None
    return found if isinstance(found, dict) else None


def fetch(engine: Engine, key: AnalysisKey) -> dict | None:
    """The analysis under ``key``: this process's, else the database's (then kept here too), else None.
    The database is asked for the payload only when its row holds this very key."""
    found = cached(key)
    if found is not None:
        return found
    with read_session(engine) as session:
        digest = session.scalar(select(AnalysisResult.digest).where(AnalysisResult.slot == key.slot_digest))
        if digest != key.digest:
            return None
        payload, when = session.execute(
            select(AnalysisResult.payload, AnalysisResult.computed_at).where(
                AnalysisResult.slot == key.slot_digest, AnalysisResult.digest == key.digest
            )
        ).one_or_none() or (None, None)
    result = _unpack(payload) if payload is not None else None
    return None if result is None else keep(key, result, when=when, where="stored")


def held(engine: Engine, key: AnalysisKey) -> bool:
    """Whether the analysis ``key`` names is held here or in the database (its payload not read)."""
    if cached(key) is not None:
        return True
    with read_session(engine) as session:
        return session.scalar(select(AnalysisResult.digest).where(AnalysisResult.slot == key.slot_digest)) == key.digest


def fetch_newest(engine: Engine, key: AnalysisKey) -> dict | None:
    """The newest analysis of ``key``'s slot on fewer votes: this process's, else the database's (read
    once, then kept here as the slot's newest)."""
    found = newest(key)
    if found is not None:
        return found
    with read_session(engine) as session:
        row = session.execute(
            select(AnalysisResult.payload, AnalysisResult.computed_at).where(AnalysisResult.slot == key.slot_digest)
        ).one_or_none()
    if row is None or row.payload is None:
        return None
    result = _unpack(row.payload)
    if result is None:
        return None
    with _LOCK:
        if key.slot not in _NEWEST:
            _STAMPS[id(result)] = (result, row.computed_at, "stored")
            _NEWEST[key.slot] = result
        return _NEWEST[key.slot]


_HOLDER = uuid.uuid4().hex[:12]  # this process, whatever host name and pid another process shares


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_HOLDER}"


def store(engine: Engine, key: AnalysisKey, result: dict) -> dict:
    """Keep ``result`` here and in the database (the slot's row now holds it; this server's lease on it
    ends).  A result that is not plain values, or a database that refuses the write, is kept here only."""
    keep(key, result)
    payload = _pack(result)
    if payload is None:
        log.warning("analysis of study %s holds more than plain values: not shared", key.study_id)
        try:  # the other servers compute it themselves, at once: never wait for a lease on nothing
            release(engine, key)
        except Exception:
            log.warning("analysis lease of study %s not ended", key.study_id, exc_info=True)
        return result
    values = {
        "digest": key.digest,
        "payload": payload,
        "votes": result.get("n_votes"),
        "computed_at": computed_at(result) or time.time(),
    }
    try:
        with write_session(engine) as session:
            changed = session.execute(
                update(AnalysisResult)
                .where(AnalysisResult.slot == key.slot_digest)
                .values(
                    **values,
                    running_digest=case((AnalysisResult.running_digest == key.digest, None), else_=AnalysisResult.running_digest),
                    running_until=case((AnalysisResult.running_digest == key.digest, None), else_=AnalysisResult.running_until),
                )
            ).rowcount
            if not changed:
                session.execute(
                    insert(AnalysisResult).values(slot=key.slot_digest, study_id=key.study_id, running_by="", **values)
                )
    except Exception:  # only a cache: the page has its result
        log.warning("analysis of study %s not stored for the other servers", key.study_id, exc_info=True)
        try:  # and nobody waits for it: the other servers compute it themselves
            release(engine, key)
        except Exception:
            log.warning("analysis lease of study %s not ended", key.study_id, exc_info=True)
    return result


def claim(engine: Engine, key: AnalysisKey, *, now: float | None = None) -> bool:
    """Take the lease to compute ``key`` (one conditional write): True when this server should compute it
    now; False when the database holds it already or another server's lease on it is live (then wait
    for :func:`fetch`)."""
    now = time.time() if now is None else now
    until = now + settings().analysis_lease_seconds
    slot = AnalysisResult.slot == key.slot_digest
    free = (AnalysisResult.digest.is_(None) | (AnalysisResult.digest != key.digest)) & (
        AnalysisResult.running_until.is_(None) | (AnalysisResult.running_until < now) | (AnalysisResult.running_by == _me())
    )
    for _ in range(2):
        try:
            with write_session(engine) as session:
                taken = session.execute(
                    update(AnalysisResult)
                    .where(slot, free)
                    .values(running_digest=key.digest, running_until=until, running_by=_me())
                ).rowcount
                if taken:
                    return True
                if session.scalar(select(AnalysisResult.slot).where(slot)) is not None:
                    return False
                session.execute(
                    insert(AnalysisResult).values(
                        slot=key.slot_digest,
                        study_id=key.study_id,
                        running_digest=key.digest,
                        running_until=until,
                        running_by=_me(),
                    )
                )
                return True
        except IntegrityError:  # another server made the slot's row at the same moment: look again
            continue
    return False


def release(engine: Engine, key: AnalysisKey) -> None:
    """End this server's lease on ``key`` (its computation failed): another server may take it at once."""
    with write_session(engine) as session:
        session.execute(
            update(AnalysisResult)
            .where(
                AnalysisResult.slot == key.slot_digest,
                AnalysisResult.running_by == _me(),
                AnalysisResult.running_digest == key.digest,
            )
            .values(running_digest=None, running_until=None)
        )


def lease_lapsed(engine: Engine, key: AnalysisKey, *, now: float | None = None) -> bool:
    """Whether nobody holds a live lease on ``key``'s slot (the server computing it died, or ended)."""
    now = time.time() if now is None else now
    with read_session(engine) as session:
        until = session.scalar(select(AnalysisResult.running_until).where(AnalysisResult.slot == key.slot_digest))
    return until is None or until < now


@contextmanager
def claimed(engine: Engine, key: AnalysisKey):
    """While the block computes ``key``, renew this server's lease every third of its length;
    when it fails, end the lease so that another server can take it at once."""
    stop = threading.Event()
    lease = settings().analysis_lease_seconds

    def renew() -> None:
        while not stop.wait(lease / 3):
            try:
                with write_session(engine) as session:
                    session.execute(
                        update(AnalysisResult)
                        .where(AnalysisResult.slot == key.slot_digest, AnalysisResult.running_digest == key.digest)
                        .values(running_until=time.time() + lease)
                    )
            except Exception:  # a database away for a moment: the next round tries again
                log.warning("analysis lease of study %s not renewed", key.study_id, exc_info=True)

    renewer = threading.Thread(target=renew, name="dst-judge-analysis-lease", daemon=True)
    renewer.start()
    try:
        yield
    except BaseException:
        try:
            release(engine, key)
        except Exception:
            log.warning("analysis lease of study %s not ended", key.study_id, exc_info=True)
        raise
    finally:
        stop.set()
