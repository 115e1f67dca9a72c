"""A study designer: k and the dialogues chosen together, for an estimand that does not depend on k
(issue 29).

**The estimand.** r(metric, mean of k votes) shrinks as k falls, since the mean of fewer votes is
less reliable; a k = 1 design and a k = 3 design would estimate different quantities.  The target here
is the correlation of the metric with the dialogue's *expected* rating over the rater population,

    ρ(metric, T) = r(metric, dialogue mean rating) / √R,   R = ICC / (ICC + (1 − ICC)·mean(1/k)),

R the reliability of the dialogue means (the human ceiling's, ``metrics.correlation.mean_reliability``),
ICC = ICC(1,1) estimated on the dialogues with two or more votes (the overlap subset), mean(1/k) over
every rated dialogue.  With equal k on every dialogue this is r / r_max, today's r scaled by the ceiling.
Its interval is a jackknife over dialogues that re-estimates the ICC in each leave-one-out, so the
correction's uncertainty enters (:func:`corrected_r`, :func:`corrected_difference`).

**The designer.** For a budget of judgements (or a target interval width), :func:`design` searches
n dialogues with one vote each except a random overlap subset of m dialogues with k_o ∈ {2, 3} votes,
and predicts each design's 95% interval width for the question:

* ``comparison``: ρ(A, T) − ρ(B, T).  The difference of the observed correlations has Olkin & Finn's
  (1990; Steiger 1980) large-sample variance at the attenuated correlations ρ·√R; divided by R, plus
  the delta-method term of 1/√R̂ with the ICC's sampling variance on the overlap subset (Fisher 1925:
  2(1 − ρ)²(1 + (k − 1)ρ)² / (k(k − 1)(m − 1))).
* ``agreement``: ICC(1,1) itself; only the overlap subset matters.
* ``lambda``: not supported yet (a clear ValueError).

It refuses designs whose estimate is not identified: fewer than ``MIN_OVERLAP`` dialogues with two or
more votes, or an ICC whose predicted standard error leaves a non-positive estimate likely
(ICC / SE < ``MIN_ICC_Z``), or a budget that covers no such design.

>>> round(predicted_width("comparison", 0.4, 0.3, 0.8, icc=0.3, n=300, m=300, k_o=3), 3)
0.185
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from metrics.correlation import _jack_var, leave_one_out_pearson

QUESTIONS = ("comparison", "lambda", "agreement")
MIN_OVERLAP = 10  # dialogues with two or more votes, at least, for the ICC (and so the estimand) to be identified
MIN_ICC_Z = 3.0  # predicted ICC / SE(ICC) at least this: a non-positive ICC estimate (no correction) stays unlikely
K_OVERLAP = (2, 3)
UNIT = "dialogues"


@dataclass(frozen=True)
class Estimate:
    """One estimate with its interval; ``unit`` is what the interval resamples (dialogues)."""

    estimate: float
    low: float | None
    high: float | None
    n: int
    method: str
    unit: str = UNIT

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low


# ---------------------------------------------------------------- the estimand


def rating_matrix(ratings_by_dialogue) -> np.ndarray:
    """Dialogues × votes (NaN: none) from a 2-D array or a sequence of per-dialogue vote sequences."""
    if isinstance(ratings_by_dialogue, np.ndarray) and ratings_by_dialogue.ndim == 2:
        return ratings_by_dialogue.astype(float)
    rows = [np.asarray(list(r), dtype=float) for r in ratings_by_dialogue]
    width = max((r.size for r in rows), default=0)
    out = np.full((len(rows), max(width, 1)), np.nan)
    for i, r in enumerate(rows):
        out[i, : r.size] = r
    return out


def _sums(matrix: np.ndarray):
    k = np.isfinite(matrix).sum(axis=1).astype(float)
    s = np.nansum(matrix, axis=1)
    q = np.nansum(matrix**2, axis=1)
    return k, s, q


def _icc_from_totals(units, total, total_k2, sum_s, between_raw, within):
    """ICC(1,1) of the one-way ANOVA (k0 for unequal counts) from totals over the overlap dialogues;
    arrays broadcast (the leave-one-out totals at once)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        grand = sum_s / total
        msb = (between_raw - total * grand**2) / (units - 1)
        msw = within / (total - units)
        k0 = (total - total_k2 / total) / (units - 1)
        single = (msb - msw) / (msb + (k0 - 1) * msw)
    return np.where((units >= 2) & (msb + msw > 0), single, np.nan)


def _reliability(single, inv_k_mean):
    """Spearman-Brown at the harmonic k: ICC / (ICC + (1 − ICC)·mean(1/k)); NaN when ICC ≤ 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = single / (single + (1 - single) * inv_k_mean)
    return np.where(np.isfinite(single) & (single > 0), r, np.nan)


def reliability_parts(matrix: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """ICC(1,1) (overlap dialogues), the reliability of the means, and both with each rated dialogue
    left out in turn (for the jackknife)."""
    k, s, q = _sums(matrix)
    if np.any(k < 1):
        raise ValueError("every dialogue passed needs at least one vote")
    rep = k >= 2
    kr, sr, qr = np.where(rep, k, 0.0), np.where(rep, s, 0.0), np.where(rep, q, 0.0)
    ratio = np.where(rep, s**2 / k, 0.0)
    totals = (rep.sum(), kr.sum(), (kr**2).sum(), sr.sum(), ratio.sum(), (qr - ratio).sum())
    single = float(_icc_from_totals(*map(np.float64, totals)))
    loo = [t - part for t, part in zip(totals, (rep.astype(float), kr, kr**2, sr, ratio, qr - ratio), strict=True)]
    single_loo = _icc_from_totals(*loo)
    inv = 1.0 / k
    d = k.size
    inv_mean = inv.mean()
    inv_loo = (inv.sum() - inv) / (d - 1)
    return single, float(_reliability(single, inv_mean)), single_loo, _reliability(single_loo, inv_loo)


def _check_overlap(matrix: np.ndarray) -> None:
    overlap = int((np.isfinite(matrix).sum(axis=1) >= 2).sum())
    if overlap < MIN_OVERLAP:
        raise ValueError(
            f"the corrected correlation is not identified: {overlap} dialogues with 2 or more votes, "
            f"at least {MIN_OVERLAP} are needed to estimate the ICC"
        )


def _t(n: int, confidence: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + confidence / 2, max(n - 1, 1)))


def corrected_r(metric, ratings_by_dialogue, *, confidence: float = 0.95) -> Estimate:
    """ρ(metric, T) = r(metric, dialogue mean rating) / √(reliability of the means), with a jackknife-t
    interval over dialogues on Fisher's z (the ICC and mean(1/k) re-estimated without each dialogue)."""
    x = np.asarray(metric, dtype=float)
    matrix = rating_matrix(ratings_by_dialogue)
    _check_overlap(matrix)
    y = np.nanmean(matrix, axis=1)
    r = float(np.corrcoef(x, y)[0, 1])
    single, rel, _, rel_loo = reliability_parts(matrix)
    if not rel > 0:
        raise ValueError(f"the corrected correlation is not identified: ICC(1,1) = {single:.3f} is not positive")
    value = r / math.sqrt(rel)
    with np.errstate(invalid="ignore"):
        loo = leave_one_out_pearson(x, y) / np.sqrt(rel_loo)
    method = "r(metric, mean rating) / sqrt(reliability of the means), ICC(1,1) on the overlap dialogues"
    low = high = None
    finite = loo[np.isfinite(loo)]
    if abs(value) < 1 and finite.size >= 4 and np.all(np.abs(finite) < 1):
        half = _t(finite.size, confidence) * math.sqrt(_jack_var(finite))
        low, high = math.tanh(math.atanh(value) - half), math.tanh(math.atanh(value) + half)
        method += "; jackknife-t over dialogues on Fisher's z"
    elif finite.size >= 4:
        half = _t(finite.size, confidence) * math.sqrt(_raw_var(finite))
        low, high = value - half, value + half
        method += "; jackknife-t over dialogues (raw scale: |estimate| near 1)"
    return Estimate(value, low, high, int(x.size), method)


def _raw_var(values: np.ndarray) -> float:
    m = values.size
    return float((m - 1) / m * np.sum((values - values.mean()) ** 2))


def corrected_difference(metric_a, metric_b, ratings_by_dialogue, *, confidence: float = 0.95) -> Estimate:
    """ρ(A, T) − ρ(B, T) = (r_a − r_b) / √R, with a jackknife-t interval over dialogues (raw scale; the
    ICC and mean(1/k) re-estimated without each dialogue, so the correction's uncertainty enters)."""
    xa, xb = np.asarray(metric_a, dtype=float), np.asarray(metric_b, dtype=float)
    matrix = rating_matrix(ratings_by_dialogue)
    _check_overlap(matrix)
    y = np.nanmean(matrix, axis=1)
    single, rel, _, rel_loo = reliability_parts(matrix)
    if not rel > 0:
        raise ValueError(f"the corrected difference is not identified: ICC(1,1) = {single:.3f} is not positive")
    diff = (float(np.corrcoef(xa, y)[0, 1]) - float(np.corrcoef(xb, y)[0, 1])) / math.sqrt(rel)
    with np.errstate(invalid="ignore"):
        loo = (leave_one_out_pearson(xa, y) - leave_one_out_pearson(xb, y)) / np.sqrt(rel_loo)
    finite = loo[np.isfinite(loo)]
    low = high = None
    if finite.size >= 4:
        half = _t(finite.size, confidence) * math.sqrt(_raw_var(finite))
        low, high = diff - half, diff + half
    method = "(r_a - r_b) / sqrt(reliability of the means); jackknife-t over dialogues, ICC re-estimated in each"
    return Estimate(diff, low, high, int(y.size), method)


# ---------------------------------------------------------------- predicted widths


def icc_variance(icc: float, k: float, m: int) -> float:
    """Large-sample variance of ICC(1,1) from m dialogues with k votes each (Fisher 1925)."""
    if m < 2 or k < 2:
        return math.inf
    return 2 * (1 - icc) ** 2 * (1 + (k - 1) * icc) ** 2 / (k * (k - 1) * (m - 1))


def _var_diff_r(r_a, r_b, r_ab, n):
    """n·Var(r_a − r_b) of two correlations sharing a variable (Olkin & Finn 1990; Steiger 1980, eq. 3)."""
    cov = 0.5 * (2 * r_ab - r_a * r_b) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3
    return ((1 - r_a**2) ** 2 + (1 - r_b**2) ** 2 - 2 * cov) / n


def predicted_width(question: str, r_a: float, r_b: float, r_ab: float, *, icc: float, n, m, k_o, confidence: float = 0.95):
    """Predicted interval width (arrays broadcast over n, m) for n dialogues, m of them with k_o votes and
    the rest one; ``r_a``, ``r_b`` are the corrected (k-free) correlations, ``r_ab`` the metrics'."""
    n, m = np.asarray(n, dtype=float), np.asarray(m, dtype=float)
    var_icc = 2 * (1 - icc) ** 2 * (1 + (k_o - 1) * icc) ** 2 / (k_o * (k_o - 1) * np.maximum(m - 1, 1e-9))
    if question == "agreement":
        var = var_icc
        df = m
    elif question == "comparison":
        h = ((n - m) + m / k_o) / n  # mean(1/k)
        rel = icc / (icc + (1 - icc) * h)
        a, b = r_a * np.sqrt(rel), r_b * np.sqrt(rel)
        d_rel = h / (icc + (1 - icc) * h) ** 2  # dR / dICC
        var = _var_diff_r(a, b, r_ab, n) / rel + 0.25 * (a - b) ** 2 * rel**-3 * d_rel**2 * var_icc
        df = n
    else:
        raise ValueError(_unsupported(question))
    from scipy.stats import t as student_t

    width = 2 * student_t.ppf(0.5 + confidence / 2, np.maximum(df - 1, 1)) * np.sqrt(var)
    return float(width) if np.ndim(width) == 0 else width


def _unsupported(question: str) -> str:
    if question == "lambda":
        return "question 'lambda' is not supported by the designer yet: use 'comparison' or 'agreement'"
    return f"question must be one of {', '.join(QUESTIONS)}, got {question!r}"


# ---------------------------------------------------------------- the designer


@dataclass(frozen=True)
class Design:
    """n dialogues from a pool of ``pool``: m of them (a random subset, probability m/n each) get
    ``k_overlap`` votes, the rest one.  ``pi_dialogue`` is each pool dialogue's chance to be judged."""

    label: str
    n: int
    m: int
    k_overlap: int
    judgements: int
    width: float | None
    pool: int
    pi_dialogue: float = field(init=False)
    pi_overlap: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "pi_dialogue", self.n / self.pool if self.pool else 0.0)
        object.__setattr__(self, "pi_overlap", self.m / self.n if self.n else 0.0)

    def votes_per_dialogue(self, seed: int) -> np.ndarray:
        """The design drawn over the pool: votes per pool dialogue (0: not judged), seeded."""
        rng = np.random.default_rng([int(seed), 29])
        chosen = rng.choice(self.pool, size=self.n, replace=False)
        k = np.zeros(self.pool, dtype=int)
        k[chosen] = 1
        k[rng.choice(chosen, size=self.m, replace=False)] = self.k_overlap
        return k

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Proposal:
    question: str
    proposal: Design
    uniform_k3: Design | None
    fga_11x100: Design | None
    icc: float
    r_a: float
    r_b: float
    r_ab: float
    notes: tuple[str, ...] = ()
    uniform_needed: int | None = None

    def saving_vs_uniform(self) -> float | None:
        """1 − the proposal's judgements / uniform k = 3's for the same width (None: uniform cannot reach it)."""
        return None if self.uniform_needed is None else 1 - self.proposal.judgements / self.uniform_needed

    def as_dict(self) -> dict:
        out = {
            "question": self.question,
            "icc": self.icc,
            "r_a": self.r_a,
            "r_b": self.r_b,
            "r_ab": self.r_ab,
            "proposal": self.proposal.as_dict(),
            "uniform_k3": None if self.uniform_k3 is None else self.uniform_k3.as_dict(),
            "fga_11x100": None if self.fga_11x100 is None else self.fga_11x100.as_dict(),
            "uniform_k3_judgements_for_same_width": self.uniform_needed,
            "saving_vs_uniform_k3": self.saving_vs_uniform(),
            "notes": list(self.notes),
        }
        return out


def pool_correlation(metric_scores: Mapping[str, Sequence[float]], a: str, b: str) -> tuple[float, int]:
    """r(A, B) over the pool's dialogues where both are defined, and the pool size."""
    if a not in metric_scores or b not in metric_scores:
        raise ValueError(f"metric scores need {a!r} and {b!r} (have: {', '.join(metric_scores)})")
    xa, xb = np.asarray(metric_scores[a], dtype=float), np.asarray(metric_scores[b], dtype=float)
    ok = np.isfinite(xa) & np.isfinite(xb)
    if ok.sum() < 3 or np.ptp(xa[ok]) == 0 or np.ptp(xb[ok]) == 0:
        raise ValueError(f"r({a}, {b}) is undefined on the pool")
    return float(np.corrcoef(xa[ok], xb[ok])[0, 1]), int(xa.size)


def _identified(icc, k_o, m):
    se = np.sqrt(2 * (1 - icc) ** 2 * (1 + (k_o - 1) * icc) ** 2 / (k_o * (k_o - 1) * np.maximum(m - 1, 1e-9)))
    return (m >= MIN_OVERLAP) & (icc / se >= MIN_ICC_Z)


def _width(question, r_a, r_b, r_ab, icc, n, m, k_o, confidence):
    return predicted_width(question, r_a, r_b, r_ab, icc=icc, n=n, m=m, k_o=k_o, confidence=confidence)


def _candidates(question, pool, icc, k_options):
    """Every (n, m, k_o) on a grid: n all of 1..pool (agreement: n = m), m all up to 2000 then geometric."""
    dense = np.arange(MIN_OVERLAP, min(pool, 2000) + 1)
    m_grid = np.unique(np.concatenate([dense, np.geomspace(2000, max(pool, 2000), 200).astype(int)]))
    m_grid = m_grid[(m_grid >= MIN_OVERLAP) & (m_grid <= pool)]
    for k_o in k_options:
        ms = m_grid[_identified(icc, k_o, m_grid)]
        if question == "agreement":
            yield k_o, ms, ms
        else:
            yield k_o, ms, None


def design(
    question: str,
    metric_scores: Mapping[str, Sequence[float]],
    budget: int | None = None,
    target_width: float | None = None,
    *,
    icc: float,
    r_a: float = 0.4,
    r_b: float = 0.3,
    metric_a: str = "fga_0.5",
    metric_b: str = "jga",
    k_options: Sequence[int] = K_OVERLAP,
    confidence: float = 0.95,
) -> Proposal:
    """The design with the narrowest predicted interval for ``budget`` judgements (or the fewest
    judgements whose predicted width is at most ``target_width``), beside uniform k = 3 and the FGA
    study's 11 × 100.  ``r_a``, ``r_b``: prior corrected correlations of the two metrics with the
    expected rating; ``icc``: a pilot's or prior single-rating ICC(1,1).  ValueError when no identified
    design fits."""
    if question not in ("comparison", "agreement"):
        raise ValueError(_unsupported(question))
    if (budget is None) == (target_width is None):
        raise ValueError("give a budget of judgements or a target width, one of them")
    if not 0 < icc < 1:
        raise ValueError(f"the single-rating ICC must lie in (0, 1), got {icc}")
    r_ab, pool = pool_correlation(metric_scores, metric_a, metric_b)
    from metrics.planning import check

    check(r_a, r_b, r_ab)
    best: tuple | None = None  # (key, n, m, k_o, width, judgements)
    for k_o, ms, fixed_n in _candidates(question, pool, icc, k_options):
        if ms.size == 0:
            continue
        if fixed_n is not None:  # agreement: only the overlap dialogues are needed
            ns = fixed_n
            widths = _width(question, r_a, r_b, r_ab, icc, ns, ms, k_o, confidence)
            cost = ms * k_o
            mm = ms
        elif budget is not None:  # spend the budget: n = budget − m (k_o − 1), at most the pool
            ns = np.minimum(budget - ms * (k_o - 1), pool)
            ok = ns >= ms
            ns, mm = ns[ok], ms[ok]
            if ns.size == 0:
                continue
            widths = _width(question, r_a, r_b, r_ab, icc, ns, mm, k_o, confidence)
            cost = ns + mm * (k_o - 1)
        else:  # the fewest judgements: for each m, the smallest n reaching the target
            n_all = np.arange(1, pool + 1)
            ns_list, mm_list = [], []
            for m in ms:
                n_try = n_all[n_all >= max(m, 4)]
                w = _width(question, r_a, r_b, r_ab, icc, n_try, np.full(n_try.size, m), k_o, confidence)
                hit = np.nonzero(w <= target_width)[0]
                if hit.size:
                    ns_list.append(n_try[hit[0]])
                    mm_list.append(m)
            if not ns_list:
                continue
            ns, mm = np.array(ns_list), np.array(mm_list)
            widths = _width(question, r_a, r_b, r_ab, icc, ns, mm, k_o, confidence)
            cost = ns + mm * (k_o - 1)
        keep = (cost <= budget) if budget is not None else (widths <= target_width)
        if not keep.any():
            continue
        ns, mm, widths, cost = ns[keep], mm[keep], widths[keep], cost[keep]
        order = np.lexsort((cost, widths)) if budget is not None else np.lexsort((widths, cost))
        i = order[0]
        key = (widths[i], cost[i]) if budget is not None else (cost[i], widths[i])
        if best is None or key < best[0]:
            best = (key, int(ns[i]), int(mm[i]), k_o, float(widths[i]), int(cost[i]))
    if best is None:
        need = f"a budget of {budget} judgements" if budget is not None else f"a width of {target_width}"
        raise ValueError(
            f"no identified design for {need} on a pool of {pool} dialogues at ICC {icc}: the overlap subset needs at "
            f"least {MIN_OVERLAP} dialogues with 2-3 votes and an ICC estimate with ICC/SE >= {MIN_ICC_Z:g} "
            f"(at k = 2, at least {_min_overlap(icc, 2)} dialogues)"
        )
    _, n, m, k_o, width, cost = best
    proposal = Design("designer", n, m, k_o, cost, width, pool)
    uniform = _uniform(question, r_a, r_b, r_ab, icc, pool, budget, target_width, confidence)
    fga = _fixed(question, r_a, r_b, r_ab, icc, pool, 100, 11, "FGA study 11 x 100", confidence)
    needed = _uniform_judgements(question, r_a, r_b, r_ab, icc, pool, width, confidence)
    notes = [f"r_a, r_b: corrected correlations with the expected rating (prior {r_a}, {r_b}); r_ab from the pool"]
    if question == "comparison":
        notes.append("the overlap subset: a simple random sample of the judged dialogues, probability m / n each")
    return Proposal(question, proposal, uniform, fga, icc, r_a, r_b, r_ab, tuple(notes), needed)


def _min_overlap(icc: float, k_o: int) -> int:
    m = np.arange(MIN_OVERLAP, 100_000)
    ok = np.nonzero(_identified(icc, k_o, m))[0]
    return int(m[ok[0]]) if ok.size else -1


def _fixed(question, r_a, r_b, r_ab, icc, pool, n, k, label, confidence) -> Design | None:
    n = min(n, pool)
    if n < max(MIN_OVERLAP, 4):
        return None
    width = _width(question, r_a, r_b, r_ab, icc, n, n, k, confidence)
    return Design(label, n, n, k, n * k, float(width), pool)


def _uniform(question, r_a, r_b, r_ab, icc, pool, budget, target_width, confidence) -> Design | None:
    if budget is not None:
        return _fixed(question, r_a, r_b, r_ab, icc, pool, budget // 3, 3, "uniform k = 3", confidence)
    needed = _uniform_judgements(question, r_a, r_b, r_ab, icc, pool, target_width, confidence)
    return None if needed is None else _fixed(question, r_a, r_b, r_ab, icc, pool, needed // 3, 3, "uniform k = 3", confidence)


def _uniform_judgements(question, r_a, r_b, r_ab, icc, pool, width, confidence) -> int | None:
    """Judgements uniform k = 3 needs for ``width`` (None: not within the pool)."""
    ns = np.arange(MIN_OVERLAP, pool + 1)
    if ns.size == 0:
        return None
    w = _width(question, r_a, r_b, r_ab, icc, ns, ns, 3, confidence)
    hit = np.nonzero(w <= width * (1 + 1e-12))[0]
    return None if hit.size == 0 else int(3 * ns[hit[0]])
