"""Score dialogues: every metric at corpus, dialogue and domain level, with a signature.

The result is the ``python -m metrics score --json`` contract::

    {"signature": str,
     "corpus": {"turns", "exact_matches", "turn_matches", "jga", "sa", "aga", "rsa", "f1",
                "fga": {"<λ>": value}},
     "dialogues": [{"id", ...same keys}],     # filled with per_dialogue=True
     "domains": {"<domain>": {...same keys}}}  # filled with by_domain=True

Rates are fractions in [0, 1]; a rate with no turn to count (AGA without any
non-empty gold state) is ``None``.

Per-domain scores restrict every state to one domain's triplets and count the
turns where that domain appears in the gold or the predicted state; |S| for a
MultiWOZ domain is its number of slots in the ontology (hotel 10, train 6, ...),
for any other domain the number of its distinct slots seen in the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from formats.dialogue import MULTIWOZ_SLOT_COUNT, MULTIWOZ_SLOTS, Dialogue, bare_slot
from metrics.registry import METRICS, SCORE_TABLE, names
from metrics.scores import RSA_AGGREGATIONS, score_table
from metrics.signature import Signature
from metrics.turnstats import TurnStatistics, extract, project_domain

# The score JSON's keys, from the registry: counts, rates, then the metrics keyed per λ.
COUNT_KEYS = ("turns", *(m.count[0] for m in METRICS if m.count is not None))
RATE_KEYS = tuple(m.name for m in SCORE_TABLE if not m.takes_lambda)
LAMBDA_KEYS = tuple(m.name for m in SCORE_TABLE if m.takes_lambda)


@dataclass(frozen=True)
class ScoreSettings:
    """Everything a number depends on; :meth:`signature` prints it in one line."""

    lambdas: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    lambda_labels: tuple[str, ...] = ("0.25", "0.5", "0.75", "1")
    slot_count: int = MULTIWOZ_SLOT_COUNT
    rsa: str = "macro"
    normalise: bool = False

    def __post_init__(self) -> None:
        if self.rsa not in RSA_AGGREGATIONS:
            raise ValueError(f"RSA aggregation must be one of {', '.join(RSA_AGGREGATIONS)}")
        if self.slot_count <= 0:
            raise ValueError("the number of slots |S| must be positive")
        if len(self.lambdas) != len(self.lambda_labels):
            raise ValueError("one label per λ")
        if any(lam < 0 or math.isnan(lam) for lam in self.lambdas):
            raise ValueError("λ must be >= 0")

    def lambda_text(self) -> str:
        """The λ values as listed, or ``linspace:START:STOP:NUM`` for a long even grid."""
        values = np.asarray(self.lambdas)
        if values.size > 8 and np.allclose(np.diff(values), values[1] - values[0]):
            return f"linspace:{values[0]:g}:{values[-1]:g}:{values.size}"
        return ",".join(self.lambda_labels)

    def as_signature(self, **analysis: Any) -> Signature:
        """This scoring's :class:`~metrics.signature.Signature` with every registry metric, plus the
        analysis settings given (``rating``, ``resamples``, ...).

        >>> signature = ScoreSettings().as_signature(analysis_unit="system")
        >>> signature.metrics, signature.analysis_unit
        (('jga', 'm2', 'fga', 'sa', 'aga', 'rsa', 'f1'), 'system')
        >>> str(signature).split("|")[:3], str(signature).endswith("|t_err0:-1|version:0.1.0|unit:system")
        (['metrics:jga+m2+fga+sa+aga+rsa+f1', 'lambda:0.25,0.5,0.75,1', 'slots:30'], True)
        """
        return Signature(
            metrics=names(),
            lambdas=self.lambda_text(),
            slots=self.slot_count,
            rsa=self.rsa,
            normalise=self.normalise,
            **analysis,
        )

    def signature(self) -> str:
        """The scoring signature in its one-line form (``score``'s ``"signature"``)."""
        return str(self.as_signature())


def parse_lambdas(text: str) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """``"0.25,0.5"`` (labels as written) or ``"START:STOP:NUM"`` (like numpy.linspace, labels %g).

    >>> parse_lambdas("0.25,1")
    ((0.25, 1.0), ('0.25', '1'))
    >>> parse_lambdas("0:1:3")
    ((0.0, 0.5, 1.0), ('0', '0.5', '1'))
    """
    text = text.strip()
    try:
        if ":" in text:
            start, stop, num = text.split(":")
            count = int(num)
            if count < 1:
                raise ValueError
            values = tuple(float(v) for v in np.linspace(float(start), float(stop), count))
            labels = tuple(f"{v:g}" for v in values)
        else:
            labels = tuple(part.strip() for part in text.split(",") if part.strip())
            values = tuple(float(label) for label in labels)
    except ValueError:
        raise ValueError(f"cannot read λ values {text!r}: give a list like 0.25,0.5 or a range START:STOP:NUM") from None
    if not values:
        raise ValueError("no λ values given")
    if any(v < 0 or math.isnan(v) for v in values):
        raise ValueError(f"λ must be >= 0 (got {text!r})")
    if len(set(labels)) != len(labels):
        raise ValueError(f"λ values repeat in {text!r}")
    return values, labels


def _rows(table: dict[str, np.ndarray], labels: Sequence[str], index: int | None = None) -> dict[str, Any]:
    pick: Callable[[np.ndarray], Any] = (lambda a: a) if index is None else (lambda a: a[index])
    row: dict[str, Any] = {key: int(pick(table[key])) for key in COUNT_KEYS}
    for key in RATE_KEYS:
        value = float(pick(table[key]))
        row[key] = None if math.isnan(value) else value
    for key in LAMBDA_KEYS:
        row[key] = {label: float(v) for label, v in zip(labels, pick(table[key]))}
    return row


def domain_slot_count(domain: str, dialogues: Sequence[Dialogue], settings: ScoreSettings) -> int:
    if settings.slot_count == MULTIWOZ_SLOT_COUNT and domain in MULTIWOZ_SLOTS:
        return len(MULTIWOZ_SLOTS[domain])
    seen = {
        bare_slot(s)
        for dialogue in dialogues
        for turn in dialogue.turns
        for state in (turn.gold, turn.pred or frozenset())
        for d, s, _ in state
        if d == domain
    }
    return max(len(seen), 1)


def score_statistics(stats: TurnStatistics, settings: ScoreSettings, *, per_dialogue: bool = False) -> dict[str, Any]:
    corpus = score_table(stats, settings.lambdas, slot_count=settings.slot_count, rsa=settings.rsa)
    result: dict[str, Any] = {
        "signature": settings.signature(),
        "corpus": _rows(corpus, settings.lambda_labels),
        "dialogues": [],
        "domains": {},
    }
    if per_dialogue:
        table = score_table(stats, settings.lambdas, slot_count=settings.slot_count, rsa=settings.rsa, per_dialogue=True)
        result["dialogues"] = [
            {"id": dialogue_id, **_rows(table, settings.lambda_labels, i)} for i, dialogue_id in enumerate(stats.dialogue_ids)
        ]
    return result


def score_dialogues(
    dialogues: Sequence[Dialogue], settings: ScoreSettings, *, per_dialogue: bool = False, by_domain: bool = False
) -> dict[str, Any]:
    """Every metric for the dialogues (see the module docstring for the layout)."""
    stats = extract(dialogues, normalise=settings.normalise)
    result = score_statistics(stats, settings, per_dialogue=per_dialogue)
    if by_domain:
        domains = sorted({t[0] for d in dialogues for turn in d.turns for t in (*turn.gold, *(turn.pred or ()))})
        for domain in domains:
            projected = extract(project_domain(dialogues, domain), normalise=settings.normalise)
            active = (projected.tp + projected.fp + projected.fn) > 0
            slots = domain_slot_count(domain, dialogues, settings)
            table = score_table(projected.subset(active), settings.lambdas, slot_count=slots, rsa=settings.rsa)
            result["domains"][domain] = {**_rows(table, settings.lambda_labels), "slots": slots}
    return result
