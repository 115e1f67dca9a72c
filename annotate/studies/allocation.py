"""How a study spends its judgements (issue 17): the uniform design or the adaptive one.

* ``uniform`` (the default, what every study did before): every item is judged by ``overlap``
  annotators (+ what an admin re-opens).
* ``adaptive`` (satisfaction studies): before any vote, each dialogue gets an inclusion probability
  π from the metrics alone (``metrics.adaptive``: where FGA and JGA disagree for the question
  ``fga_vs_jga``, where FGA moves with λ for ``lambda``), sized so that the expected judgements fit
  the budget, and one seeded draw decides which dialogues are judged (``Item.included``, ``Item.pi``).
  Left-out items are never offered.  The analysis weights each judged dialogue by 1/π
  (``metrics.analysis.design_summary``), so the estimates are for the whole pool.  Optionally
  (``max_k`` above the overlap) a dialogue whose votes are split gets further votes, one at a time,
  up to ``max_k``; one whose votes agree is settled at ``overlap``.

* ``designed`` (issue 29: the designer's proposal, ``metrics.design``): n dialogues of the pool drawn
  at random (π = n / pool each, ``Item.pi``), of them a random overlap subset of m (probability
  m / n, recorded as ``pi_overlap``) gets ``k_overlap`` votes and the others one (``Item.k``, every
  capacity ``coalesce(k, overlap) + extra``): the draw of ``metrics.design.Design.votes_per_dialogue``
  over the study's items in their order, seeded.  A designed k is no extra place: it is fixed before
  any vote, so no optional-stopping rule applies to it.

Budget and stopping rule (every design): with ``budget`` the study closes (is archived) once that many
judgements are done; with ``target_width`` the Progress page shows the current 95% interval width of
the study's main question, the judgements projected to reach the target (width shrinks as 1/√n), and
closes the study when it is reached (:func:`close_when_reached`).

This module decides and stores the design (the draw's numbers are ``metrics.adaptive``'s); where a
study stands against it, in numbers and in prose, is ``annotate.analysis.reports``'s.

The design must be chosen before the first vote: probabilities that depended on votes would no longer
be known in advance, and the 1/π weights would not correct the selection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from annotate.kinds import StudyError, get_kind
from annotate.store.models import JUDGE, Annotator, Assignment, Item, Study, VoteEvent
from annotate.studies import record
from annotate.studies.assignment import DONE, lock_study, release_study, study_row

# metrics.adaptive (numpy) is imported by the functions that draw or grow a design: the login page and an
# annotator's uniform study never need it (issue 36).
DESIGN_KEYS = ("n", "m", "k_overlap")  # what a designed study needs of the designer's proposal (and ``seed``)
WEIGHTINGS = ("lambda",)  # a designed study's optional ``weighting``: π per dialogue from its λ score
QUESTIONS = {"fga_vs_jga": "r(FGA) - r(JGA)", "lambda": "λ* (the FGA λ that tracks people best)"}
SETTLED_WIDTH = 0.5  # a dialogue's mean rating is settled when its 95% interval is narrower than this
MAIN_QUESTION = "satisfied"


def design_of(settings: dict | None) -> dict:
    """The study's allocation settings, defaults filled in."""
    chosen = dict((settings or {}).get("allocation") or {})
    return {
        "policy": "uniform",
        "question": "fga_vs_jga",
        "lambda": 0.5,
        "budget": None,
        "target_width": None,
        "max_k": None,
        **chosen,
    }


def _scores(study: Study, items: list[Item], question: str, lam: float) -> dict[int, float]:
    """Each item's informativeness for the question, from its dialogue's metrics, per condition
    (``metrics.adaptive.question_scores``)."""
    from metrics import adaptive
    from metrics.analysis import per_dialogue_metrics
    from metrics.corpus import ScoreSettings

    kind = get_kind(study.kind)
    grid = adaptive.SCORE_GRID if question == "lambda" else (lam,)
    scores: dict[int, float] = {}
    for condition in dict.fromkeys(i.condition for i in items):
        group = [i for i in items if i.condition == condition]
        dialogues = kind.dialogues(group)[condition]
        _, values = per_dialogue_metrics(dialogues, ScoreSettings(grid, tuple(f"{v:g}" for v in grid)))
        score = adaptive.question_scores(question, values, lam)
        scores.update({item.id: float(s) for item, s in zip(group, score, strict=True)})
    return scores


@dataclass(frozen=True)
class Drawn:
    """What choosing a design drew: the policy, the study's items and how many of them will be judged;
    an adaptive design also says how many dialogues it expects to judge.  ``as_json`` is what
    ``python -m annotate study design --policy ... --json`` prints."""

    policy: str
    items: int
    included: int
    expected_dialogues: float | None = None  # adaptive only
    judgements: int | None = None  # designed only: the places the design has

    def as_json(self) -> dict:
        """The fields as a dict, ``expected_dialogues`` and ``judgements`` only when there is one."""
        optional = ("expected_dialogues", "judgements")
        return {k: v for k, v in asdict(self).items() if k not in optional or v is not None}


def set_allocation(
    session: Session,
    study: Study,
    by: Annotator | str,
    *,
    policy: str,
    question: str = "fga_vs_jga",
    budget: int | None = None,
    target_width: float | None = None,
    max_k: int | None = None,
    lam: float = 0.5,
    design: dict | None = None,
) -> Drawn:
    """Choose the study's design (before any vote); returns what was drawn.  The study's row is locked
    (and read again) here, as every settings write does.  ``design`` (policy ``designed`` only): the
    designer's proposal, ``n``, ``m``, ``k_overlap`` and optionally ``seed`` (else the study's).
    Places held now (no vote yet) are given back: a held place must not outlast a draw that leaves its
    item out or gives it fewer places."""
    from metrics import adaptive

    study = lock_study(session, study.id)

    policies = (*adaptive.POLICIES, "designed")
    if policy not in policies:
        raise StudyError(f"allocation policy must be one of {', '.join(policies)}, not {policy!r}")
    if question not in QUESTIONS:
        raise StudyError(f"the study's question must be one of {', '.join(QUESTIONS)}, not {question!r}")
    voted = session.scalar(
        select(func.count(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study.id)
    )
    if voted:
        raise StudyError(
            "the design is chosen before the first vote (this study has votes): its probabilities must not depend on them"
        )
    if budget is not None and budget < (1 if policy == "designed" else study.overlap):  # designed: k = 1 dialogues
        raise StudyError(f"a budget of {budget} judgements does not cover one dialogue ({study.overlap} votes)")
    if target_width is not None and not target_width > 0:
        raise StudyError("the target interval width must be positive")
    if max_k is not None and max_k < study.overlap:
        raise StudyError(f"max k ({max_k}) is below the overlap ({study.overlap})")
    if policy == "designed":
        if max_k is not None:
            raise StudyError("max k grows the adaptive design only: a designed study's k is fixed by its design")
        chosen_design = _check_design(design, study)
        if chosen_design.get("weighting") == "lambda":
            question = "lambda"  # the design answers λ*: the analysis leads with it
    elif design is not None:
        raise StudyError(f"a design (n, m, k_overlap) is for the policy 'designed', not {policy!r}")
    items = list(session.scalars(select(Item).where(Item.study_id == study.id).order_by(Item.position, Item.id)))
    if policy == "designed":
        if chosen_design.pop("pool", len(items)) != len(items):
            raise StudyError(f"the design was made for another pool of dialogues: the study's pool has {len(items)}")
        if chosen_design["n"] > len(items):
            raise StudyError(f"the design judges {chosen_design['n']} dialogues, the study's pool has {len(items)}")
    drawn = Drawn(policy, len(items), len(items))
    release_study(session, study.id)
    if policy == "designed":
        chosen_design, drawn = _draw_design(items, chosen_design, study, lam)
    elif policy == "adaptive":
        if not get_kind(study.kind).rates_metrics:
            raise StudyError("adaptive allocation chooses dialogues by their metric scores: satisfaction studies only")
        if budget is None:
            raise StudyError("an adaptive study needs a budget (judgements): it sets how many dialogues are drawn")
        scores = _scores(study, items, question, lam)
        conditions = list(dict.fromkeys(i.condition for i in items))
        groups = [[i for i in items if i.condition == condition] for condition in conditions]
        # planned votes per dialogue: max k when split dialogues may get more (the draw then fits the
        # budget even if every dialogue needs max k), else the overlap
        per_condition = budget / (max_k or study.overlap) / len(conditions)
        taken = adaptive.draw([[scores[i.id] for i in group] for group in groups], per_condition, study.settings.get("seed", 0))
        included = 0
        for group, (pi, take) in zip(groups, taken, strict=True):
            for item, p, t in zip(group, pi, take, strict=True):
                item.pi, item.included, item.k = float(p), bool(t), None
            included += int(take.sum())
        drawn = Drawn(policy, len(items), included, round(per_condition * len(conditions), 1))
    else:
        session.execute(update(Item).where(Item.study_id == study.id).values(pi=None, included=True, k=None))
    chosen = {
        "policy": policy,
        "question": question,
        "lambda": lam,
        "budget": budget,
        "target_width": target_width,
        "max_k": max_k,
    }
    if policy == "designed":
        chosen["design"] = chosen_design
    old = design_of(study.settings)
    study.settings = {**(study.settings or {}), "allocation": chosen}
    record(
        session,
        study.id,
        by,
        "allocation",
        _describe(old),
        _describe(chosen) + f"; {drawn.included} of {drawn.items} items judged",
    )
    return drawn


def _check_design(design: dict | None, study: Study) -> dict:
    """The designer's proposal as stored, checked: ``n`` ≥ 1 dialogues, an overlap subset of
    0 ≤ ``m`` ≤ n with ``k_overlap`` ≥ 2 votes, a ``seed`` (the study's when left out)."""
    design = dict(design or {})
    missing = [key for key in DESIGN_KEYS if design.get(key) is None]
    if missing:
        raise StudyError(f"a design needs {', '.join(DESIGN_KEYS)} (missing: {', '.join(missing)})")
    unknown = sorted(set(design) - {*DESIGN_KEYS, "seed", "pool", "weighting"})
    if unknown:
        raise StudyError(f"a design has {', '.join(DESIGN_KEYS)}, seed, pool and weighting only, not {', '.join(unknown)}")
    weighting = design.get("weighting")
    if weighting is not None and weighting not in WEIGHTINGS:
        raise StudyError(f"a design's weighting is {' or '.join(WEIGHTINGS)} (or none), not {weighting!r}")
    if weighting is not None and not get_kind(study.kind).rates_metrics:
        raise StudyError("a design weighted by λ scores draws dialogues by their metrics: satisfaction studies only")
    try:
        n, m, k_overlap = (int(design[key]) for key in DESIGN_KEYS)
        seed = int(design["seed"]) if design.get("seed") is not None else int((study.settings or {}).get("seed", 0))
    except (TypeError, ValueError) as error:
        raise StudyError(f"a design's n, m, k_overlap and seed are whole numbers ({error})") from None
    if n < 1:
        raise StudyError("a design judges at least one dialogue (n ≥ 1)")
    if not 0 <= m <= n:
        raise StudyError(f"the overlap subset (m = {m}) must be between 0 and the n = {n} dialogues judged")
    if k_overlap < 2:
        raise StudyError(f"k_overlap ({k_overlap}) must be at least 2: the overlap subset is what measures agreement")
    checked = {"n": n, "m": m, "k_overlap": k_overlap, "seed": seed, **({"weighting": weighting} if weighting else {})}
    return checked if design.get("pool") is None else {**checked, "pool": int(design["pool"])}


def _draw_design(items: list[Item], chosen: dict, study: Study, lam: float) -> tuple[dict, Drawn]:
    """The design drawn over the study's items (in their order): ``included``, ``pi`` and ``k``
    (k_overlap or 1; None for those left out) set on each; the design as stored (with the pool, both
    probabilities and the judgements) and what was drawn.  Unweighted: n dialogues at random, π = n / pool
    each (``metrics.design.Design.votes_per_dialogue``).  ``weighting`` ``lambda``: each dialogue's π from
    its λ score (``metrics.adaptive``, n expected in all, spread over the conditions), one seeded Poisson
    draw, then a random m of the drawn dialogues (m / drawn each) get k_overlap votes; the analysis weights
    each judged dialogue by 1/π (``metrics.analysis.design_summary``)."""
    from metrics import adaptive
    from metrics.design import Design

    n, m, k_overlap, seed = chosen["n"], chosen["m"], chosen["k_overlap"], chosen["seed"]
    if chosen.get("weighting") == "lambda":
        import numpy as np

        conditions = list(dict.fromkeys(i.condition for i in items))
        if len(conditions) > 1:  # the designer scores one system's dialogues, and the analysis reads one
            raise StudyError(
                f"a design weighted by λ scores draws one system's dialogues; this study shows {len(conditions)} systems"
            )
        scores = _scores(study, items, "lambda", lam)
        groups = [[i for i in items if i.condition == condition] for condition in conditions]
        taken = adaptive.draw([[scores[i.id] for i in group] for group in groups], n / len(conditions), seed)
        drawn_items = []
        for group, (pi, take) in zip(groups, taken, strict=True):
            for item, p, t in zip(group, pi, take, strict=True):
                item.pi, item.included, item.k = float(p), bool(t), (1 if t else None)
                if t:
                    drawn_items.append(item)
        overlap = min(m, len(drawn_items))
        rng = np.random.default_rng([int(seed), 29])
        for index in rng.choice(len(drawn_items), size=overlap, replace=False).tolist():
            drawn_items[index].k = k_overlap
        judgements = len(drawn_items) - overlap + overlap * k_overlap
        stored = {
            **chosen,
            "m": overlap,
            "pool": len(items),
            "drawn": len(drawn_items),
            "pi_dialogue": n / len(items),
            "pi_overlap": overlap / len(drawn_items) if drawn_items else 0.0,
            "judgements": judgements,
        }
        return stored, Drawn("designed", len(items), len(drawn_items), judgements=judgements)
    judgements = n - m + m * k_overlap
    design = Design("designed", n, m, k_overlap, judgements, None, len(items))
    for item, k in zip(items, design.votes_per_dialogue(seed).tolist(), strict=True):
        item.included, item.pi, item.k = k > 0, design.pi_dialogue, (k or None)
    stored = {**chosen, "pool": len(items), "pi_dialogue": design.pi_dialogue, "pi_overlap": design.pi_overlap}
    stored["judgements"] = judgements
    return stored, Drawn("designed", len(items), n, judgements=judgements)


def _describe(design: dict) -> str:
    parts = [design["policy"]]
    if design["policy"] == "adaptive":
        parts.append(f"question {design['question']}")
    if design["policy"] == "designed" and design.get("design"):
        d = design["design"]
        drawn = (
            f"{d['drawn']} of {d['pool']} dialogues (π by λ score, {d['n']} expected)"
            if d.get("weighting")
            else f"{d['n']} of {d['pool']} dialogues"
        )
        parts.append(
            f"{drawn}, {d['m']} of them (π {d['pi_overlap']:.3g}) with k {d['k_overlap']}, the others k 1, seed {d['seed']}"
        )
    for key in ("budget", "target_width", "max_k"):
        if design.get(key) is not None:
            parts.append(f"{key} {design[key]:g}")
    return ", ".join(parts)


def judgements_done(session: Session, study_id: int) -> int:
    return int(session.scalar(select(func.count()).where(Assignment.study_id == study_id, Assignment.status == DONE)) or 0)


def _grows(design: dict, overlap: int) -> bool:
    return design["policy"] == "adaptive" and bool(design["max_k"]) and design["max_k"] > overlap


def before_judgement(session: Session, study_id: int, item_id: int) -> None:
    """In the judgement's transaction, before the vote: a study whose split dialogues get more votes
    locks the item first (items before assignments, the order every transaction takes them in), so
    of judgements committing at once the last sees every vote when it decides."""
    row = study_row(session, study_id)
    if _grows(design_of(row.settings), row.overlap):
        session.execute(select(Item.id).where(Item.id == item_id).with_for_update())


def after_judgement(session: Session, study_id: int, item_id: int) -> bool:
    """In the judgement's transaction: a split dialogue of an adaptive study with ``max_k`` gets one
    more place; a study whose budget is spent closes.  True when this judgement closed the study."""
    row = study_row(session, study_id)
    design = design_of(row.settings)
    if not _grows(design, row.overlap) and design["budget"] is None:
        return False
    study = session.get(Study, study_id)
    if _grows(design, study.overlap):  # the item was locked by before_judgement
        item = session.get(Item, item_id)
        latest = (  # the humans' votes: an automatic judge's place is never one of the k (issue 28)
            select(func.max(VoteEvent.id))
            .join(Annotator, Annotator.id == VoteEvent.annotator_id)
            .where(VoteEvent.item_id == item_id, VoteEvent.question == MAIN_QUESTION, Annotator.kind != JUDGE)
            .group_by(VoteEvent.annotator_id)
        )
        values = [float(v) for v in session.scalars(select(VoteEvent.value).where(VoteEvent.id.in_(latest)))]
        capacity = (study.overlap if item.k is None else item.k) + item.extra_capacity
        if len(values) >= capacity and capacity < design["max_k"]:
            from metrics import adaptive

            if not adaptive.settled(values, study.overlap, design["max_k"], SETTLED_WIDTH):
                session.execute(update(Item).where(Item.id == item_id).values(extra_capacity=Item.extra_capacity + 1))
    if design["budget"] is not None and not study.archived and judgements_done(session, study_id) >= design["budget"]:
        close(session, study, "budget spent")
        return True
    return False


def close(session: Session, study: Study, why: str) -> None:
    """The study stops taking judgements (archived, places given back), recorded with the reason."""
    record(session, study.id, "allocation", "archived", str(study.archived), f"True ({why})")
    study.archived = True
    release_study(session, study.id)


def close_when_reached(session: Session, study: Study, reached: bool, target_width: float | None) -> bool:
    """Close the study (locked by the caller) if its target interval width is ``reached`` (as
    ``annotate.analysis.reports.allocation_status`` found) and it is still open: True when closed now."""
    if not reached or study.archived:
        return False
    close(session, study, f"target interval width {target_width:g} reached")
    return True


def judgements_total(design: dict, needed: int) -> int:
    """What a study's progress is measured against: its places (the judged items times k, plus the
    re-opened ones), or its budget when that is smaller, since the study closes once the budget is
    spent (issue 24: the Progress page, the Analysis page and the annotator's progress line)."""
    budget = design.get("budget")
    return min(int(budget), int(needed)) if budget else int(needed)
