"""First run: demo studies of all three kinds from the sample data shipped in the package, and demo accounts.

``ensure_demo`` runs when the app starts.  On an empty database (no annotators, no
studies) and unless ``DST_JUDGE_DEMO=0``, it creates an admin and three annotators and
one study per kind, in one transaction, and prints the accounts.

Never behind a proxy: when trusted proxies are configured (annotate.people.proxy) the demo, whose
passwords are printed here and in the README, is not created, and ``python -m annotate serve``
refuses to start while a demo account still has its demo password (``demo_refusal``).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, func, select

from formats.settings import settings

DEMO_ACCOUNTS = (
    ("admin", "demo-admin-pw", "admin"),
    ("ann1", "demo-ann1-pw", "annotator"),
    ("ann2", "demo-ann2-pw", "annotator"),
    ("ann3", "demo-ann3-pw", "annotator"),
)
# The demo's passwords are published (README, the login page), so their bcrypt hashes at the default cost
# (12) may be too: made once here instead of at every first start, where four hashes cost ~1.5 s of CPU
# before the login form.  Another cost (``DST_JUDGE_BCRYPT_ROUNDS``) hashes them as usual.
DEMO_HASHES = {
    "admin": "$2b$12$oOHLz.vvawNKrgxPaOXVnuNIGOHctNi8EsJdux8YNU4R5CawON5gC",
    "ann1": "$2b$12$VCxAzmpv..cE.ac8UN2haec6OXG/0VjvSQcp.qL6J7NxcrsFFnVzK",
    "ann2": "$2b$12$QdoTX9dC//Kxv5egNWk3YuhvI1fPhd6vKsGT9GXjvCuyUywC4ZHOO",
    "ann3": "$2b$12$EIwJH/lN9.X1lXTTFHQ60.LXqd0yI3uJSDeqahtRL7QRICagrICge",
}
DEMO_STUDIES = ("Demo: dialogue satisfaction", "Demo: CoCo turns", "Demo: DSTC2 SLU labels")


def fixtures_dir() -> Path:
    """The demo's data: ``DST_JUDGE_FIXTURES``, else the sample inside the package (``annotate/sample_data``,
    found wherever the package is installed; its README names each file's source and licence)."""
    return settings().fixtures


def ensure_demo(engine: Engine, *, announce: bool = True) -> bool:
    """Create the demo on an empty database; True if it was created now."""
    from annotate.kinds import KINDS
    from annotate.people.auth import add_annotator
    from annotate.store.db import write_session
    from annotate.store.models import Annotator, Study
    from annotate.studies import create_study

    if not settings().demo:
        return False
    if _behind_proxy():
        print(f"DST Judge: {BEHIND_PROXY}", flush=True)
        return False
    fixtures = fixtures_dir()
    with write_session(engine) as session:
        if session.scalar(select(func.count()).select_from(Annotator)) or session.scalar(select(func.count()).select_from(Study)):
            return False
        if not fixtures.is_dir():
            print(f"DST Judge: {missing_fixtures_message(fixtures)}", flush=True)
            return False
        for name, password, role in DEMO_ACCOUNTS:
            if settings().bcrypt_rounds == 12:
                add_annotator(session, name, None, role).password_hash = DEMO_HASHES[name]
            else:
                add_annotator(session, name, password, role)
        guideline_path = fixtures / "dst_evaluation_guideline.txt"
        guideline = guideline_path.read_text(encoding="utf-8") if guideline_path.is_file() else ""
        create_study(
            session, DEMO_STUDIES[0], "satisfaction", [fixtures / "fga_human_eval"], condition="som-dst", guideline=guideline
        )
        create_study(session, DEMO_STUDIES[1], "coco", [fixtures / "coco"], condition="coco", guideline=KINDS["coco"].guideline)
        create_study(session, DEMO_STUDIES[2], "slu", [fixtures / "dstc2"], guideline=KINDS["slu"].guideline)
    if announce:
        print("DST Judge demo created.", flush=True)
        print_accounts()
    return True


def print_accounts() -> None:
    print("Demo accounts (name / password / role); change them before a real study:", flush=True)
    for name, password, role in DEMO_ACCOUNTS:
        print(f"  {name} / {password} / {role}", flush=True)


def missing_fixtures_message(fixtures: Path) -> str:
    return f"No demo data at {fixtures} (DST_JUDGE_FIXTURES names a folder that does not exist); starting without the demo."


BEHIND_PROXY = (
    "a reverse proxy is configured (DST_JUDGE_TRUSTED_PROXIES / DST_JUDGE_TRUST_PROXY), so the demo and "
    "its published passwords are not made; set DST_JUDGE_DEMO=0 and create an admin"
)


def _behind_proxy() -> bool:
    from annotate.people.proxy import ProxyConfigError, proxy_configured

    try:
        return proxy_configured()
    except ProxyConfigError:  # a setting was meant, even if malformed: no demo either
        return True


def demo_pending(engine: Engine) -> bool:
    """Whether ``ensure_demo`` would make the demo now if no proxy were configured."""
    from annotate.store.db import read_session
    from annotate.store.models import Annotator, Study

    if not settings().demo or not fixtures_dir().is_dir():
        return False
    with read_session(engine) as session:
        return not (
            session.scalar(select(func.count()).select_from(Annotator)) or session.scalar(select(func.count()).select_from(Study))
        )


def demo_passwords_in_use(engine: Engine) -> list[str]:
    """The demo accounts that still have their published password."""
    from annotate.people.auth import find_annotator, password_matches
    from annotate.store.db import read_session

    with read_session(engine) as session:
        people = {name: (password, find_annotator(session, name)) for name, password, _ in DEMO_ACCOUNTS}
        return [
            name
            for name, (password, person) in people.items()
            if person is not None and password_matches(password, person.password_hash)
        ]


def demo_refusal(engine: Engine) -> str | None:
    """Why ``serve`` must not start (a proxy is configured and the demo would be made, or a demo
    account still has its published password), else None."""
    if not _behind_proxy():
        return None
    if demo_pending(engine):
        return (
            "a reverse proxy is configured (DST_JUDGE_TRUSTED_PROXIES / DST_JUDGE_TRUST_PROXY) and this empty database "
            "would get the demo, whose passwords are published: set DST_JUDGE_DEMO=0 and create an admin with "
            f"{FIRST_ADMIN}"
        )
    in_use = demo_passwords_in_use(engine)
    if in_use:
        return (
            f"a reverse proxy is configured and the demo account(s) {', '.join(in_use)} still have their published "
            "password: change them (dst-judge annotator password NAME) before serving behind a proxy"
        )
    return None


# the command a stranger types for the first admin, shown on the login page: no option flag in it
FIRST_ADMIN = "DST_JUDGE_PASSWORD='a long password' dst-judge admin add NAME"


def setup_hint(engine: Engine) -> str | None:
    """What the login page says when nobody can log in as an admin yet (None once an admin with a
    password exists): how to make the first one, and why there is no demo."""
    from annotate.store.db import read_session
    from annotate.store.models import Annotator

    with read_session(engine) as session:
        admins = session.scalar(
            select(func.count()).select_from(Annotator).where(Annotator.role == "admin", Annotator.password_hash.is_not(None))
        )
    if admins:
        return None
    if not settings().demo:
        why = "The demo is off (DST_JUDGE_DEMO=0)."
    elif _behind_proxy():
        why = "The demo is off behind a reverse proxy (DST_JUDGE_TRUSTED_PROXIES)."
    elif not fixtures_dir().is_dir():
        why = missing_fixtures_message(fixtures_dir())
    else:
        why = "The database already held data, so no demo was made."
    return (
        f"{why}\nCreate the first admin account in a terminal, on the same database "
        f"(DST_JUDGE_DB), then log in here:\n\n    {FIRST_ADMIN}"
    )


def demo_accounts_active(engine: Engine) -> bool:
    """Whether the demo admin still has the demo password (so the login page may show it)."""
    from annotate.people.auth import find_annotator, password_matches
    from annotate.store.db import read_session

    with read_session(engine) as session:
        admin = find_annotator(session, DEMO_ACCOUNTS[0][0])
        if admin is not None and admin.password_hash == DEMO_HASHES["admin"]:
            return True  # the shipped hash: no bcrypt work on every start and login page
        return admin is not None and password_matches(DEMO_ACCOUNTS[0][1], admin.password_hash)
