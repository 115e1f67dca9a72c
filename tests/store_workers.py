"""Workers for the concurrency tests: each plays annotators who judge and change votes.

Used from threads and from separate processes (so it takes a URL, not an engine).
"""

from __future__ import annotations

import random
import time

from sqlalchemy.exc import OperationalError

from annotate.judging.votes import cast_vote
from annotate.store.db import make_engine, write_session
from annotate.store.models import Annotator
from tests.store_helpers import next_item


def with_retry(function, attempts: int = 20):
    """Retry a transaction that lost a serialisation race (PostgreSQL deadlock / lock timeout)."""
    for attempt in range(attempts):
        try:
            return function()
        except OperationalError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.01 * (attempt + 1))


def annotate_session(engine, study_id: int, annotator: Annotator, judgements: int, seed: int) -> list[tuple]:
    """Judge up to ``judgements`` items, changing an earlier vote now and then.

    Returns every vote sent as (annotator, item_id, value), in the order sent.
    """
    rng = random.Random(seed)
    sent: list[tuple] = []
    judged: list[int] = []
    for _ in range(judgements):

        def judge():
            with write_session(engine) as session:
                item = next_item(session, study_id, annotator)
                if item is None:
                    return None
                value = rng.choice("01")
                cast_vote(session, annotator, item.id, "satisfied", value, seconds=rng.random() * 30)
                return item.id, value

        result = with_retry(judge)
        if result is None:
            break
        sent.append((annotator.name, *result))
        judged.append(result[0])
        if judged and rng.random() < 0.3:  # go back and change an earlier vote
            item_id, value = rng.choice(judged), rng.choice("01")

            def change(item_id=item_id, value=value):
                with write_session(engine) as session:
                    cast_vote(session, annotator, item_id, "satisfied", value)

            with_retry(change)
            sent.append((annotator.name, item_id, value))
    return sent


def process_worker(url: str, study_id: int, annotators: list[tuple[int, str]], judgements: int, seed: int) -> list[tuple]:
    engine = make_engine(url, pool_size=2)
    sent = []
    for i, (annotator_id, name) in enumerate(annotators):
        annotator = Annotator(id=annotator_id, name=name)
        sent.extend(annotate_session(engine, study_id, annotator, judgements, seed + i))
    engine.dispose()
    return sent
