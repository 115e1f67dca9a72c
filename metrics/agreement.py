"""Inter-annotator agreement from a :class:`~metrics.aggregate.UnitTable`.

Coefficients (each from the per-unit category counts, so a bootstrap resample of units is
just a resample of rows):

- percent agreement: mean over units with ≥ 2 votes of the share of agreeing vote pairs;
- Krippendorff's α through the ``krippendorff`` package, level always passed explicitly;
- Fleiss' κ: statsmodels' ``fleiss_kappa`` when every voted unit has the same number of
  votes, else the usual generalisation to unequal counts (irrCAC's ``fleiss.kappa.raw``):
  chance agreement Σ π_k² with π_k the mean over voted units of each unit's share of k;
- Gwet's AC1 with the same π_k: chance agreement Σ π_k (1 − π_k) / (q − 1);
- pairwise Cohen's κ through statsmodels' ``cohens_kappa`` on each pair's shared units.

A coefficient that cannot be computed is ``None`` with a note saying why — never NaN.

The answers are the question's, not the data's: given ``categories`` (the study's declared answers,
``--categories`` / ``--scale``), every coefficient uses that set; without them the set is inferred from
the votes (:func:`metrics.aggregate.unit_table`: a 0/1 question always has both).  What the declared set
changes, by definition of each coefficient:

- Gwet's AC1 and AC2: their chance agreement divides by the number of answers q (and AC2's weights span
  the declared scale's min..max), so an answer nobody chose still counts;
- the order of non-numeric answers (declared order, not alphabetical): AC2's and weighted Cohen κ's ranks
  (ordinal and interval α still need numeric answers);
- not percent agreement, Fleiss' κ (an unused answer has π = 0), Krippendorff's α at any level (its
  metrics weigh values by how often they were used; ``krippendorff``'s ``value_domain`` with unused values
  gives the same α) or unweighted Cohen κ.

Krippendorff's (2011) example, observers A–D on 12 units:

>>> from formats.tidy import votes_from_rows
>>> data = {"A": "1 2 3 3 2 1 4 1 2 . . .", "B": "1 2 3 3 2 2 4 1 2 5 . 3",
...         "C": ". 3 3 3 2 3 4 2 2 5 1 .", "D": "1 2 3 3 2 4 4 1 2 5 1 ."}
>>> rows = [(str(u), a, "q", v) for a, line in data.items() for u, v in enumerate(line.split()) if v != "."]
>>> table = unit_table(votes_from_rows(rows).votes)
>>> [round(krippendorff_alpha(table, level), 3) for level in ("nominal", "ordinal", "interval", "ratio")]
[0.743, 0.815, 0.849, 0.797]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from formats.settings import settings
from formats.tidy import Vote
from metrics.aggregate import UnitTable, canonical_number, majority_from_counts, unit_table
from metrics.correlation import bca_interval

LEVELS = ("nominal", "ordinal", "interval", "ratio")
# krippendorff builds a units × values² array; above this we switch or refuse (see alpha).
ALPHA_MAX_BYTES = int(settings().alpha_max_mb * 1024 * 1024)


class Undefined(ValueError):
    """A coefficient that cannot be computed for this data; the message says why."""


SAME_ALPHA = "all pairable votes have the same answer, so expected disagreement is 0"
SAME_KAPPA = "every vote has the same answer, so chance agreement is 1 and κ is 0/0"
# Every vote one answer: one note for all the coefficients (it replaces α's and κ's own), saying why κ and
# α are undefined while AC1 is 1, on any scale (issue 26)
IDENTICAL = (
    "all ratings identical: chance agreement is 1 for κ and α, so they are undefined (0/0); AC1 is 1, as its "
    "chance agreement Σπ(1−π)/(q−1) is 0 whatever the number of answers q"
)
IDENTICAL_AC2 = (
    "all ratings identical: chance agreement is 1 for κ and α, so they are undefined (0/0); AC1 and AC2 are 1, as "
    "their chance agreement, a multiple of Σπ(1−π), is 0 whatever the number of answers q"
)


def answer_table(votes: Sequence[Vote], categories: Sequence[str] | None = None) -> UnitTable:
    """The unit table over the declared answers ``categories``, or over the answers voted when none are
    declared.  Declared numbers are put in numeric order and spelled once ("4.0" is "4"), and a vote
    spelled as another number counts as that number; other labels keep the declared order (their ranks).
    A vote outside the declared answers is a ValueError naming it.

    >>> from formats.tidy import Vote
    >>> answer_table([Vote("a", "x", "q", "2.0")], ["3", "1", "2"]).categories
    ['1', '2', '3']
    """
    if categories is None:
        return unit_table(votes)
    if isinstance(categories, str):
        raise TypeError("categories is a list of answers, not one string")
    declared = list(dict.fromkeys(str(c).strip() for c in categories))
    if not declared or "" in declared:
        raise ValueError(f"declared answers must be non-empty labels, got {list(categories)}")
    if all(_is_number(c) for c in declared):
        declared = sorted(dict.fromkeys(canonical_number(c) for c in declared), key=float)
        votes = [replace(v, value=canonical_number(v.value)) if _is_number(v.value) else v for v in votes]
    return unit_table(votes, declared)


def scale_answers(text: str) -> list[str]:
    """The answers of an integer scale ``START-END`` (or ``START..END``), the CLI's ``--scale``.

    >>> scale_answers("1-5"), scale_answers("-2..2")
    (['1', '2', '3', '4', '5'], ['-2', '-1', '0', '1', '2'])
    """
    import re

    found = re.fullmatch(r"\s*(-?\d+)\s*(?:-|\.\.)\s*(-?\d+)\s*", text)
    if found is None or int(found[2]) <= int(found[1]):
        raise ValueError(f"--scale is START-END with whole numbers START < END (1-5, 0-10, -2..2), got {text!r}")
    return [str(v) for v in range(int(found[1]), int(found[2]) + 1)]


def _is_number(text: str) -> bool:
    try:
        return bool(np.isfinite(float(text)))
    except ValueError:
        return False


def _percent_per_unit(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = counts.sum(axis=1)
    pairable = m >= 2
    agree = (counts * (counts - 1)).sum(axis=1)
    return agree[pairable] / (m[pairable] * (m[pairable] - 1)), pairable


def percent_agreement(counts: np.ndarray) -> float:
    per_unit, _ = _percent_per_unit(counts)
    if per_unit.size == 0:
        raise Undefined("no item has two or more votes")
    return float(per_unit.mean())


def _prevalence(counts: np.ndarray) -> np.ndarray:
    m = counts.sum(axis=1)
    rated = m >= 1
    return np.asarray((counts[rated] / m[rated, None]).mean(axis=0))


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ (generalised to unequal vote counts; statsmodels' when they are equal).

    >>> wiki = [[0,0,0,0,14],[0,2,6,4,2],[0,0,3,5,6],[0,3,9,2,0],[2,2,8,1,1],
    ...         [7,7,0,0,0],[3,2,6,3,0],[2,5,3,2,2],[6,5,2,1,0],[0,2,2,3,7]]
    >>> round(fleiss_kappa(np.array(wiki, dtype=float)), 3)
    0.21
    """
    pa = percent_agreement(counts)
    m = counts.sum(axis=1)
    voted = counts[m >= 1]
    pi = _prevalence(counts)
    pe = float((pi**2).sum())
    if np.isclose(pe, 1.0):
        raise Undefined(SAME_KAPPA)
    if np.all(voted.sum(axis=1) == voted[0].sum()):
        from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

        return float(statsmodels_fleiss(voted, method="fleiss"))
    return (pa - pe) / (1.0 - pe)


def gwet_ac1(counts: np.ndarray) -> float:
    """Gwet's AC1; meaningful when one answer dominates (κ's paradox).

    When every vote has one answer its chance agreement Σπ_k(1 − π_k)/(q − 1) is 0 for every q ≥ 2, so AC1
    is the percent agreement, 1, whether the table has that one column (answers inferred from the votes) or
    the question's q: a question has at least two answers (issue 26: all "4" on 1-5 as all "1" on 0/1)."""
    q = counts.shape[1]
    pa = percent_agreement(counts)
    if q < 2:  # only the one answer was voted: chance agreement is 0 whatever the question's q ≥ 2
        return pa
    pi = _prevalence(counts)
    pe = float((pi * (1 - pi)).sum() / (q - 1))
    return (pa - pe) / (1.0 - pe)


WEIGHTINGS = ("none", "linear", "quadratic")


def agreement_weights(values: np.ndarray, scheme: str) -> np.ndarray | None:
    """q × q agreement weights over the categories' values (their ranks when not numbers), as Gwet (2014)
    and irrCAC: linear 1 − |x_k − x_l| / (max − min), quadratic 1 − (x_k − x_l)² / (max − min)²; None
    for ``none``.

    >>> agreement_weights(np.array([1.0, 2.0, 3.0]), "quadratic")[0].tolist()
    [1.0, 0.75, 0.0]
    """
    if scheme not in WEIGHTINGS:
        raise ValueError(f"--weights must be one of {', '.join(WEIGHTINGS)}, got {scheme!r}")
    if scheme == "none":
        return None
    span = float(values.max() - values.min()) or 1.0
    distance = np.abs(values[:, None] - values[None, :]) / span
    return np.asarray(1 - (distance if scheme == "linear" else distance**2))


def gwet_ac2(counts: np.ndarray, weights: np.ndarray) -> float:
    """Gwet's AC2: AC1 with agreement weights between categories (Gwet 2014, ch. 3; irrCAC's
    ``gwet.ac1.raw(..., weights=)``); with identity weights it is AC1."""
    q = counts.shape[1]
    m = counts.sum(axis=1)
    pairable = counts[m >= 2]
    if pairable.shape[0] == 0:
        raise Undefined("no item has two or more votes")
    if q < 2:  # as AC1: one answer voted, chance agreement 0 for any q ≥ 2, AC2 = percent agreement = 1
        return percent_agreement(counts)
    r = pairable.sum(axis=1)
    weighted = pairable @ weights.T  # r*_ik = Σ_l w_kl r_il
    pa = float(((pairable * (weighted - 1)).sum(axis=1) / (r * (r - 1))).mean())
    pi = _prevalence(counts)
    pe = float(weights.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum())
    if np.isclose(pe, 1.0):
        raise Undefined("chance agreement is 1, so AC2 is 0/0")
    return (pa - pe) / (1.0 - pe)


def _interval_alpha(counts: np.ndarray, values: np.ndarray) -> float:
    """Interval α in closed form from sums of squares (no values² array): for many distinct values."""
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    n = m.sum()
    s1 = counts @ values
    s2 = counts @ values**2
    observed = ((2 * m * s2 - 2 * s1**2) / (m - 1)).sum() / n
    expected = (2 * n * s2.sum() - 2 * s1.sum() ** 2) / (n * (n - 1))
    if expected == 0:
        raise Undefined("all pairable votes have the same value, so expected disagreement is 0")
    return float(1.0 - observed / expected)


def alpha_from_counts(counts: np.ndarray, values: np.ndarray | None, level: str) -> float:
    """Krippendorff's α of a units × categories count table at a level of measurement."""
    import krippendorff

    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if level != "nominal" and values is None:
        raise Undefined(f"{level} α needs numeric answers; choose the nominal level of measurement")
    pairable = counts.sum(axis=1) >= 2
    if not pairable.any():
        raise Undefined("no item has two or more votes")
    used = counts[pairable].sum(axis=0) > 0
    if used.sum() < 2:
        raise Undefined(SAME_ALPHA)
    counts = counts[pairable][:, used]
    domain = np.arange(counts.shape[1]) if values is None else values[used]
    if counts.shape[0] * counts.shape[1] ** 2 * 8 > ALPHA_MAX_BYTES:
        if level == "interval":
            return _interval_alpha(counts, domain)
        raise Undefined(
            f"{counts.shape[1]} distinct answers over {counts.shape[0]} items would need "
            f"{counts.shape[0] * counts.shape[1] ** 2 * 8 / 1e6:.0f} MB; "
            "choose the interval level of measurement or fewer categories"
        )
    if level == "nominal":
        domain = np.arange(counts.shape[1])  # category labels need not be numbers
    return float(krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=cast(Any, level)))


def krippendorff_alpha(table: UnitTable, level: str) -> float:
    return alpha_from_counts(table.counts, table.numeric_values, level)


def cohen_kappa(
    codes_a: np.ndarray, codes_b: np.ndarray, n_categories: int, values: np.ndarray | None = None, wt: str | None = None
) -> tuple[float, int]:
    """Cohen's κ on the units both annotators judged (statsmodels); (κ, number of shared units).

    >>> a = np.array([0] * 25 + [1] * 25); b = np.array([0] * 20 + [1] * 5 + [0] * 10 + [1] * 15)
    >>> cohen_kappa(a, b, 2)   # Wikipedia's example: 20 yes/yes, 5, 10, 15 no/no
    (0.4, 50)
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    shared = ~np.isnan(codes_a) & ~np.isnan(codes_b)
    n = int(shared.sum())
    if n < 2:
        raise Undefined(f"only {n} shared item(s)")
    table = np.zeros((n_categories, n_categories))
    np.add.at(table, (codes_a[shared].astype(int), codes_b[shared].astype(int)), 1.0)
    row, col = table.sum(axis=1) / n, table.sum(axis=0) / n
    if np.isclose((row * col).sum(), 1.0):
        raise Undefined("both gave one and the same answer throughout, so κ is 0/0")
    if wt is not None:  # weighted κ over the categories' values (statsmodels: |x_k − x_l| or its square)
        return round(float(cohens_kappa(table, weights=values, wt=wt, return_results=False)), 12), n
    return round(float(cohens_kappa(table, return_results=False)), 12), n


def _safe(compute: Callable[[], Any], notes: list[str], name: str) -> float | None:
    try:
        value = compute()
    except Undefined as why:
        notes.append(f"{name}: {why}")
        return None
    if value is None or not np.isfinite(value):
        notes.append(f"{name}: not defined for this data")
        return None
    return float(value)


def annotator_rows(table: UnitTable, gold: Mapping[tuple[str, str], str] | None = None) -> list[dict[str, Any]]:
    """Each annotator against the majority of the others (ties skipped), and on gold items."""
    from statsmodels.stats.inter_rater import cohens_kappa

    rows = []
    n_categories = len(table.categories)
    for a, name in enumerate(table.annotators):
        mine = table.codes[a]
        voted = ~np.isnan(mine)
        others = table.counts.copy()
        others[np.flatnonzero(voted), mine[voted].astype(int)] -= 1
        majority = majority_from_counts(others, [str(c) for c in range(n_categories)], "none").labels  # category codes
        pairs = [(int(mine[u]), int(label)) for u in np.flatnonzero(voted) if (label := majority[u]) is not None]
        row: dict[str, Any] = {
            "annotator": name,
            "n_votes": int(voted.sum()),
            "n_compared": len(pairs),
            "agree_with_others": None,
            "kappa_with_others": None,
            "gold_accuracy": None,
            "n_gold": 0,
        }
        if pairs:
            row["agree_with_others"] = sum(m == o for m, o in pairs) / len(pairs)
            confusion = np.zeros((n_categories, n_categories))
            np.add.at(confusion, tuple(np.array(pairs).T), 1.0)
            margins = (confusion.sum(axis=1) / len(pairs)) @ (confusion.sum(axis=0) / len(pairs))
            if not np.isclose(margins, 1.0):
                row["kappa_with_others"] = round(float(cohens_kappa(confusion, return_results=False)), 12)
        if gold:
            checked = [
                (table.categories[int(mine[u])], gold[unit]) for u, unit in enumerate(table.units) if voted[u] and unit in gold
            ]
            row["n_gold"] = len(checked)
            if checked:
                row["gold_accuracy"] = sum(mine_value == g for mine_value, g in checked) / len(checked)
        rows.append(row)
    return rows


POINT_COEFFICIENTS = ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1")


def _coefficients(counts: np.ndarray, values: np.ndarray | None, level: str, weights: np.ndarray | None = None) -> dict[str, Any]:
    """The unit-level coefficients (NaN where undefined), for the estimate's items and for bootstrap
    resamples of them; Gwet's AC2 too when ``weights`` are given."""
    out: dict[str, Any] = {}
    computations: list[tuple[str, Callable[[], Any]]] = [
        ("percent_agreement", lambda: percent_agreement(counts)),
        ("krippendorff_alpha", lambda: alpha_from_counts(counts, values, level)),
        ("fleiss_kappa", lambda: fleiss_kappa(counts)),
        ("gwet_ac1", lambda: gwet_ac1(counts)),
    ]
    if weights is not None:
        computations.append(("gwet_ac2", lambda: gwet_ac2(counts, weights)))
    for name, compute in computations:
        try:
            out[name] = compute()
        except Undefined:
            out[name] = np.nan
    return out


class CountStatistics:
    """Every coefficient as a function of sums over items, so the estimate, a jackknife and a bootstrap
    resample of items are one function of ``weights @ features``: a resample is a row of weights (how
    often each item was drawn), B resamples one matrix product, no loop per resample.

    Per item (counts c_k, m votes): pairable [m ≥ 2], its agreeing share of vote pairs, rated [m ≥ 1],
    its answer shares c_k/m, its coincidences c_k (c_l − δ_kl)/(m − 1) (Krippendorff 2011) and, with
    agreement weights, AC2's weighted share.  Percent agreement, Fleiss' κ, Gwet's AC1/AC2 and
    Krippendorff's α at every level are then ratios of those sums (the same values as the functions above:
    ``tests/unit/test_agreement_intervals.py``); a coefficient that is 0/0 is NaN.
    """

    def __init__(self, counts: np.ndarray, values: np.ndarray | None, level: str, weights: np.ndarray | None = None):
        counts = np.asarray(counts, dtype=float)
        self.q = q = counts.shape[1]
        self.values, self.level, self.weights = values, level, weights
        m = counts.sum(axis=1)
        pairable = (m >= 2).astype(float)
        rated = (m >= 1).astype(float)
        pairs = np.where(m >= 2, m * (m - 1), 1.0)
        agree = (counts * (counts - 1)).sum(axis=1) / pairs * pairable
        shares = counts / np.where(m >= 1, m, 1.0)[:, None] * rated[:, None]
        coincidence = counts[:, :, None] * (counts[:, None, :] - np.eye(q)[None]) / np.where(m >= 2, m - 1, 1.0)[:, None, None]
        parts = [
            pairable[:, None],
            agree[:, None],
            rated[:, None],
            shares,
            (coincidence * pairable[:, None, None]).reshape(-1, q * q),
        ]
        if weights is not None:
            weighted = ((counts * (counts @ weights.T - 1)).sum(axis=1) / pairs * pairable)[:, None]
            parts.append(weighted)
        self.features = np.hstack(parts)
        self.names = POINT_COEFFICIENTS + (("gwet_ac2",) if weights is not None else ())

    def _distance(self, n_k: np.ndarray) -> np.ndarray | None:
        q, v = self.q, self.values
        if self.level == "nominal":
            return 1.0 - np.eye(q)
        if v is None:
            return None
        if self.level == "interval":
            return np.asarray((v[:, None] - v[None, :]) ** 2)
        if self.level == "ratio":
            total = v[:, None] + v[None, :]
            return np.where(total == 0, 0.0, (v[:, None] - v[None, :]) / np.where(total == 0, 1.0, total)) ** 2
        # ordinal: (Σ_{g=k..l} n_g − (n_k + n_l)/2)², from the (resampled) marginals
        cumulative = np.concatenate([np.zeros(n_k.shape[:-1] + (1,)), np.cumsum(n_k, axis=-1)], axis=-1)
        low = np.minimum.outer(np.arange(q), np.arange(q))
        high = np.maximum.outer(np.arange(q), np.arange(q))
        between = cumulative[..., high + 1] - cumulative[..., low]
        return np.asarray((between - (n_k[..., :, None] + n_k[..., None, :]) / 2) ** 2)

    def evaluate(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """Each coefficient from sums of the features (any leading shape)."""
        q = self.q
        with np.errstate(divide="ignore", invalid="ignore"):
            pa = sums[..., 1] / sums[..., 0]
            pi = sums[..., 3 : 3 + q] / sums[..., 2:3]
            out = {"percent_agreement": pa}
            pe = (pi**2).sum(axis=-1)
            out["fleiss_kappa"] = np.where(np.isclose(pe, 1.0), np.nan, (pa - pe) / (1 - pe))
            spread = (pi * (1 - pi)).sum(axis=-1)
            out["gwet_ac1"] = pa if q < 2 else (pa - spread / (q - 1)) / (1 - spread / (q - 1))
            o = sums[..., 3 + q : 3 + q + q * q].reshape(sums.shape[:-1] + (q, q))
            n_k = o.sum(axis=-1)
            n = n_k.sum(axis=-1)
            delta = self._distance(n_k)
            if delta is None:
                out["krippendorff_alpha"] = np.full(pa.shape, np.nan)
            else:
                expected = (n_k[..., :, None] * n_k[..., None, :] * delta).sum(axis=(-2, -1))
                observed = (o * delta).sum(axis=(-2, -1))
                tiny = 1e-12 * np.maximum(n, 1.0) ** 2
                out["krippendorff_alpha"] = np.where(expected > tiny, 1 - (n - 1) * observed / expected, np.nan)
            if self.weights is not None:
                if q < 2:
                    out["gwet_ac2"] = pa
                else:
                    pe_w = self.weights.sum() / (q * (q - 1)) * spread
                    pa_w = sums[..., -1] / sums[..., 0]
                    out["gwet_ac2"] = np.where(np.isclose(pe_w, 1.0), np.nan, (pa_w - pe_w) / (1 - pe_w))
        return {name: np.asarray(out[name], dtype=float) for name in self.names}


# The interval families bench/coverage_agreement.py compares (issue 26); DEFAULT_FAMILY is what reports print.
FAMILIES = ("percentile", "bca", "atanh_t", "jackknife_atanh_t", "studentized")
DEFAULT_FAMILY = "jackknife_atanh_t"
CI_WORDS = {  # each family in the words of a table header (the unit of resampling named)
    "percentile": "percentile bootstrap over items",
    "bca": "BCa bootstrap over items",
    "atanh_t": "Fisher z, bootstrap SE over items, t",
    "jackknife_atanh_t": "Fisher z, jackknife SE over items, t",
    "studentized": "studentized bootstrap over items",
}


def _atanh(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.arctanh(np.clip(x, -1 + 1e-9, 1 - 1e-9)))


def interval_families(
    point: float,
    drawn: np.ndarray,
    jackknife: np.ndarray,
    *,
    confidence: float = 0.95,
    studentized: np.ndarray | None = None,
    families: Sequence[str] = FAMILIES,
) -> dict[str, tuple[float, float]]:
    """Intervals for one coefficient from its estimate, its bootstrap draws over items (finite ones) and its
    delete-one-item jackknife values:

    - ``percentile``: the draws' quantiles (Efron 1979);
    - ``bca``: bias-corrected and accelerated, the acceleration from the jackknife over items (Efron 1987;
      Davison & Hinkley 1997, §5.3): :func:`metrics.correlation.bca_interval`, absent from the result
      where it is undefined (every draw on one side of the estimate, too few values);
    - ``atanh_t``: atanh(θ̂) ± t(n − 1) × the bootstrap standard error of atanh(θ*), back-transformed
      (the Fisher-z idea for a coefficient in (−1, 1]);
    - ``jackknife_atanh_t``: the same with the jackknife's standard error (no bootstrap);
    - ``studentized``: bootstrap-t, each draw studentized by its own jackknife standard error
      (``studentized``, the (θ* − θ̂)/se* values; Davison & Hinkley 1997, §5.2).
    """
    from scipy.stats import t

    alpha = (1 - confidence) / 2
    n = jackknife.size
    out: dict[str, tuple[float, float]] = {}
    if "percentile" in families:
        out["percentile"] = (float(np.quantile(drawn, alpha)), float(np.quantile(drawn, 1 - alpha)))
    if "bca" in families:  # the package's one BCa, with its edge rule: no interval where it is undefined
        found = bca_interval(float(point), np.asarray(drawn, dtype=float), np.asarray(jackknife, dtype=float), confidence)
        if found is not None:
            out["bca"] = (found[0], found[1])
    quantile = t.ppf(1 - alpha, max(n - 1, 1))
    for name in ("atanh_t", "jackknife_atanh_t"):
        if name not in families:
            continue
        if name == "atanh_t":
            se = np.std(_atanh(drawn), ddof=1) if drawn.size > 1 else np.nan
        else:
            z = _atanh(jackknife)
            se = np.sqrt((n - 1) / n * ((z - z.mean()) ** 2).sum()) if n > 1 else np.nan
        centre = _atanh(np.array(point))
        out[name] = (float(np.tanh(centre - quantile * se)), float(np.tanh(centre + quantile * se)))
    if "studentized" in families and studentized is not None:
        se = np.sqrt((n - 1) / n * ((jackknife - jackknife.mean()) ** 2).sum())
        finite = studentized[np.isfinite(studentized)]
        high_t, low_t = np.quantile(finite, [1 - alpha, alpha])
        out["studentized"] = (float(point - high_t * se), float(point - low_t * se))
    return out


def jackknife_sums(features: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Sums with one item left out, for every item (n × K), or for every resample (B × n × K) when
    ``weights`` (B × n) are given (an item drawn several times: one copy left out)."""
    if weights is None:
        return np.asarray(features.sum(axis=0)[None, :] - features)
    return np.asarray((weights @ features)[:, None, :] - features[None, :, :])


def bootstrap_cis(
    table: UnitTable,
    level: str,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    weights: np.ndarray | None = None,
    family: str = DEFAULT_FAMILY,
) -> tuple[dict[str, list[float] | None], list[str]]:
    """95 % CIs over items (the unit: every item with a vote, the same items the point estimates use;
    single-vote items count for the answers' prevalence in Fleiss' κ and AC1/AC2, as in irrCAC; agreement
    itself needs two votes).  ``family`` (:data:`FAMILIES`; see :func:`interval_families`): the default,
    ``jackknife_atanh_t``, is atanh(θ̂) ± t(n − 1) × the delete-one-item jackknife standard error of
    atanh θ, back through tanh; of the five families it alone held 0.934-0.973 (46 of 51 cells within two
    Monte-Carlo errors of 0.95) over five designs at 30, 50 and 100 items, where the percentile bootstrap
    went down to 0.867 (docs/statistics/intervals.md; ``bench/coverage_agreement.py``).  The
    bootstrap resamples (rows of weights over the items, :class:`CountStatistics`, the same draws as before
    for a seed) still say which coefficients a resample leaves undefined, and ``resamples`` 0 still means no
    interval.  An interval is a point when every resample gives the same value (complete agreement)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    counts = table.counts[table.votes_per_unit >= 1]
    notes: list[str] = []
    names = POINT_COEFFICIENTS + (("gwet_ac2",) if weights is not None else ())
    if resamples <= 0:
        return {name: None for name in names}, []
    if int((table.votes_per_unit >= 2).sum()) < 2:
        return {name: None for name in names}, ["bootstrap: needs at least two items with two votes"]
    rng = np.random.default_rng(seed)
    n = counts.shape[0]
    draws = rng.integers(0, n, (resamples, n))
    counted = np.zeros((resamples, n))
    np.add.at(counted, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    stats = CountStatistics(counts, table.numeric_values, level, weights)
    point = stats.evaluate(stats.features.sum(axis=0))
    drawn = stats.evaluate(counted @ stats.features)
    jack = stats.evaluate(jackknife_sums(stats.features))
    student = None
    if family == "studentized":
        inner = stats.evaluate(jackknife_sums(stats.features, counted))
        student = {}
        for name in names:
            value = inner[name]
            mean = (counted * np.nan_to_num(value)).sum(axis=1) / n
            se = np.sqrt((n - 1) / n * (counted * (np.nan_to_num(value) - mean[:, None]) ** 2).sum(axis=1))
            with np.errstate(divide="ignore", invalid="ignore"):
                student[name] = (drawn[name] - point[name]) / se
    cis: dict[str, list[float] | None] = {}
    for name in names:
        finite = drawn[name][np.isfinite(drawn[name])]
        if finite.size < resamples / 2 or not np.isfinite(point[name]):
            cis[name] = None
            continue
        if finite.size < resamples:
            notes.append(f"bootstrap {name}: {resamples - finite.size} of {resamples} resamples undefined, left out")
        jackknife = jack[name][np.isfinite(jack[name])]
        if jackknife.size < 2:
            cis[name] = None
            notes.append(f"{name}: undefined without one item or another, so no interval")
            continue
        found = interval_families(
            float(point[name]),
            finite,
            jackknife,
            confidence=confidence,
            studentized=None if student is None else student[name],
            families=(family,),
        ).get(family)
        if np.ptp(finite) == 0:  # every resample the same value (complete agreement): a point, not an interval
            found = (float(finite[0]), float(finite[0]))
        if found is None:  # BCa where it is undefined
            cis[name] = None
            notes.append(f"{name}: no {family} interval here (every resample on one side of the estimate, or too few values)")
            continue
        low, high = found
        if name == "percent_agreement":  # a share: the interval (built on the atanh scale of -1..1) stays in 0..1
            low, high = max(0.0, low), min(1.0, high)
        cis[name] = [float(low), float(high)]
    return cis, notes


def agreement_report(
    votes: list[Vote],
    *,
    level: str = "nominal",
    resamples: int = 1000,
    seed: int = 0,
    gold: Mapping[tuple[str, str], str] | None = None,
    weights: str = "none",
    categories: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every coefficient for one question's votes, with CIs and notes (the CLI's JSON per question).

    Point estimates and their bootstrap use the same items: every item with a vote.  ``level``
    governs Krippendorff's α only; ``weights`` (none, linear, quadratic) the pairwise Cohen κ and Gwet's
    AC2; ``labels`` says what each coefficient used.  ``categories``: the question's declared answers
    (:func:`answer_table`; the module docstring says which coefficients they change), reported under
    ``categories``; a note names them when they are not the set the votes alone imply."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    table = answer_table(votes, categories)
    scale = table.numeric_values if table.numeric_values is not None else np.arange(len(table.categories), dtype=float)
    weight_matrix = agreement_weights(scale, weights)
    notes: list[str] = []
    if resamples <= 0:
        notes.append("no bootstrap resamples (0 asked for): no confidence interval was computed (every ci is null)")
    single = int((table.votes_per_unit == 1).sum())
    if single:
        notes.append(f"{single} item(s) with a single vote: left out of agreement")
    if len(table.annotators) < 2:
        notes.append("only one annotator: agreement is not defined")
    if categories is not None and table.categories != unit_table(votes).categories:
        unused = [c for c, n in zip(table.categories, table.counts.sum(axis=0)) if n == 0]
        notes.append(
            f"declared answers {', '.join(table.categories)}"
            + (f" (never voted: {', '.join(unused)})" if unused else "")
            + f": Gwet's AC1/AC2 count all {len(table.categories)}"
        )
    values = table.numeric_values
    rated = table.counts[table.votes_per_unit >= 1]  # the items every coefficient and its bootstrap use
    result: dict[str, Any] = {
        "n_items": len(table.units),
        "n_annotators": len(table.annotators),
        "n_votes": int(table.counts.sum()),
        "n_pairable_items": int((table.votes_per_unit >= 2).sum()),
        "level": level,
        "categories": table.categories,
        "weights": weights,
        "percent_agreement": _safe(lambda: percent_agreement(rated), notes, "percent agreement"),
        "krippendorff_alpha": _safe(lambda: alpha_from_counts(rated, values, level), notes, "Krippendorff's α"),
        "fleiss_kappa": _safe(lambda: fleiss_kappa(rated), notes, "Fleiss' κ"),
        "gwet_ac1": _safe(lambda: gwet_ac1(rated), notes, "Gwet's AC1"),
        "cohen_kappa_pairwise": [],
        "annotators": annotator_rows(table, gold),
    }
    for a in range(len(table.annotators)):
        for b in range(a + 1, len(table.annotators)):
            pair = {"a": table.annotators[a], "b": table.annotators[b], "n": 0, "kappa": None}
            shared = ~np.isnan(table.codes[a]) & ~np.isnan(table.codes[b])
            pair["n"] = int(shared.sum())
            if pair["n"] == 0:
                continue
            try:
                pair["kappa"], _ = cohen_kappa(
                    table.codes[a], table.codes[b], len(table.categories), scale, None if weights == "none" else weights
                )
            except Undefined as why:
                pair["note"] = str(why)
            result["cohen_kappa_pairwise"].append(pair)
    weighted = "unweighted" if weights == "none" else f"{weights} weights over the answers' values"
    result["labels"] = {
        "percent_agreement": "unweighted",
        "krippendorff_alpha": f"level of measurement {level}",
        "fleiss_kappa": "unweighted",
        "gwet_ac1": "unweighted",
        "cohen_kappa_pairwise": weighted,
    }
    if weight_matrix is not None:
        result["gwet_ac2"] = _safe(lambda: gwet_ac2(rated, weight_matrix), notes, "Gwet's AC2")
        result["labels"]["gwet_ac2"] = weighted
    cis, ci_notes = bootstrap_cis(table, level, resamples=resamples, seed=seed, weights=weight_matrix)
    result["ci"] = {name: cis[name] if result.get(name) is not None else None for name in cis}
    # Every item with two or more votes unanimous: resamples can only repeat it, so an interval is a point,
    # not a measurement.  Only items with two votes can agree: one annotator (or annotators who share no
    # item) is no agreement at all, complete or not, and no interval is computed then (issue 26).
    pairable = rated[rated.sum(axis=1) >= 2]
    unanimous = pairable.shape[0] > 0 and bool(np.all(pairable.max(axis=1) == pairable.sum(axis=1)))
    result["ci_degenerate"] = [n for n, ci in result["ci"].items() if ci is not None and ci[0] == ci[1]]
    if unanimous and int((rated.sum(axis=0) > 0).sum()) == 1:  # every vote one answer: one note says it all
        own = {f"Krippendorff's α: {SAME_ALPHA}", f"Fleiss' κ: {SAME_KAPPA}"}
        notes = [note for note in notes if note not in own] + [IDENTICAL if weight_matrix is None else IDENTICAL_AC2]
    if unanimous and result["ci_degenerate"]:
        ci_notes.append(
            "complete agreement: every item's votes agree, so the bootstrap interval collapses to a point "
            "(ci_degenerate); it does not measure uncertainty: more items would"
        )
    result["bootstrap"] = {"resamples": resamples, "seed": seed, "confidence": 0.95, "ci": DEFAULT_FAMILY}
    result["ci_method"] = CI_WORDS[DEFAULT_FAMILY]
    result["notes"] = notes + ci_notes
    return result


__all__ = ["agreement_report", "unit_table", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1", "cohen_kappa"]
