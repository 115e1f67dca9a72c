"""Login throttling that a stranger cannot turn into a lockout (issue 23, item 2), on SQLite and
PostgreSQL, with a simulated clock.

Today's attacks, reproduced for a simulated hour each: a guesser polling once a second from the
victim's own address (one client: a shared NAT, or every browser behind a proxy that is not
trusted); six addresses polling once a second each; and a guesser sending made-up
``X-Forwarded-For`` / ``X-Real-IP`` headers from a peer that is not a proxy.  In each the victim,
from their own browser, gets in with the right password - at once, or after waiting as told when
they mistyped - while the guessers stay slowed down.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from annotate.people.auth import add_annotator, set_password
from annotate.people.proxy import client_address, parse_trusted
from annotate.people.sessions import (
    FREE_FAILURES,
    NAME_FREE_FAILURES,
    LoginRefused,
    device_cookie,
    known_device,
    log_in,
    session_user,
)
from annotate.store.db import write_session

T0 = datetime(2026, 3, 2, 9, 0, 0)
VICTIM, PASSWORD = "ann2", "ann2-password"
VICTIM_ADDRESS = "198.51.100.7"
HOUR = 3600
CHECKPOINTS = (60, 5 * 60, 20 * 60, 40 * 60, 59 * 60)  # seconds into the attack when the victim logs in
TYPO_AT = 30 * 60  # the victim mistypes until told to wait, waits as told, and gets in


@pytest.fixture
def victim(engine):
    """ann2 has logged in once from her browser before the attack: the browser holds a device cookie."""
    with write_session(engine) as session:
        add_annotator(session, VICTIM, PASSWORD)
    user, token = log_in(engine, VICTIM, PASSWORD, client=VICTIM_ADDRESS, now=T0 - timedelta(days=2))
    assert session_user(engine, token, now=T0 - timedelta(days=2)).name == VICTIM
    return device_cookie(user, None, T0 - timedelta(days=2))


def _attempt(engine, password, client, now, device=None) -> str:
    """'in', 'wrong' (the password was checked) or 'wait N' (refused before the check)."""
    try:
        log_in(engine, VICTIM, password, client=client, device=device, now=now)
        return "in"
    except LoginRefused as err:
        waited = re.search(r"try again in (\d+) s", str(err))
        return f"wait {waited.group(1)}" if waited else "wrong"


class Victim:
    """The victim's side of a simulated hour: logs in at the checkpoints; at TYPO_AT mistypes until told
    to wait, then comes back exactly when told, with the right password."""

    def __init__(self, engine, device, client):
        self.engine, self.device, self.client = engine, device, client
        self.results: list[tuple[int, str]] = []
        self.come_back: int | None = None

    def tick(self, second: int) -> None:
        now = T0 + timedelta(seconds=second)
        if second in CHECKPOINTS:
            self.results.append((second, _attempt(self.engine, PASSWORD, self.client, now, self.device)))
        if second == TYPO_AT:
            for _ in range(FREE_FAILURES):
                assert _attempt(self.engine, "typo-" + PASSWORD, self.client, now, self.device) == "wrong"
            told = _attempt(self.engine, PASSWORD, self.client, now, self.device)  # the right one, too soon
            assert told.startswith("wait "), told
            self.come_back = second + int(told.split()[1])
        if second == self.come_back:
            self.results.append((second, _attempt(self.engine, PASSWORD, self.client, now, self.device)))


def _run_hour(engine, victim: Victim, attackers) -> dict[str, int]:
    """Every attacker client tries a wrong password once a second for an hour; counts of outcomes."""
    outcomes = {"wrong": 0, "wait": 0, "in": 0}
    for second in range(HOUR):
        now = T0 + timedelta(seconds=second)
        for client in attackers(second):
            outcome = _attempt(engine, f"guess-{second}", client, now)
            outcomes[outcome.split()[0]] += 1
        victim.tick(second)
    return outcomes


def _assert_victim_got_in(victim: Victim) -> None:
    assert victim.come_back == TYPO_AT + 30  # her own typos: the first delay, 30 s
    assert victim.results == [(second, "in") for second in sorted((*CHECKPOINTS, TYPO_AT + 30))]


def test_one_client_polling_cannot_lock_out_a_known_browser(engine, victim):
    """The guesser shares the victim's address (a NAT, or everyone behind an untrusted proxy)."""
    person = Victim(engine, victim, VICTIM_ADDRESS)
    outcomes = _run_hour(engine, person, lambda second: [VICTIM_ADDRESS])
    _assert_victim_got_in(person)
    # the guesser: 5 free, then 30 s, 60 s, ... 15 min after each failure: 12 checked guesses in the hour
    assert outcomes["in"] == 0 and outcomes["wrong"] == 12 and outcomes["wait"] == HOUR - 12


def test_six_addresses_polling_cannot_lock_out_a_known_browser(engine, victim):
    addresses = [f"203.0.113.{i}" for i in range(1, 7)]
    person = Victim(engine, victim, "192.0.2.50")  # her own address this time (at home)
    outcomes = _run_hour(engine, person, lambda second: addresses)
    _assert_victim_got_in(person)
    # six addresses get at most 12 checked guesses each, and the name's limit holds them to far fewer
    assert outcomes["in"] == 0 and NAME_FREE_FAILURES <= outcomes["wrong"] <= 6 * 12


def test_spoofed_forwarding_headers_from_a_non_proxy_peer_are_ignored(engine, victim):
    """The guesser connects directly (not through the trusted nginx) and sends made-up X-Forwarded-For
    / X-Real-IP headers, a new address each second and sometimes the victim's own.  Every attempt
    counts under its real peer, so the victim - behind the trusted nginx, even from a browser that
    never logged in before - gets in."""
    trusted = parse_trusted("127.0.0.1,::1")
    peer = "203.0.113.66"

    def spoofed(second: int) -> list[str]:
        fake = VICTIM_ADDRESS if second % 2 else f"10.{second // 256 % 256}.{second % 256}.1"
        headers = {"X-Forwarded-For": fake, "X-Real-IP": fake, "Forwarded": f"for={fake}"}
        return [client_address(peer, headers, trusted)]

    victim_client = client_address(None, {"X-Forwarded-For": VICTIM_ADDRESS, "X-Real-IP": VICTIM_ADDRESS}, trusted)
    assert victim_client == VICTIM_ADDRESS and spoofed(1) == spoofed(2) == [peer]
    fresh_browser = Victim(engine, None, victim_client)  # no device cookie: counted by her address
    outcomes = _run_hour(engine, fresh_browser, spoofed)
    _assert_victim_got_in(fresh_browser)
    assert outcomes["in"] == 0 and outcomes["wrong"] == 12


def test_unknown_browsers_share_the_names_limit_but_a_known_one_does_not(engine, victim):
    """Guessing from many addresses slows every unknown browser (at most 60 s after the name's last
    failure); the victim's known browser is not slowed at all."""
    now = T0
    for i in range(NAME_FREE_FAILURES):
        assert _attempt(engine, "guess", f"203.0.113.{i}", now) == "wrong"
    assert _attempt(engine, PASSWORD, "192.0.2.99", now) == "wait 5"  # a new browser, new address
    assert _attempt(engine, PASSWORD, "192.0.2.99", now, victim) == "in"
    assert _attempt(engine, PASSWORD, "192.0.2.99", now + timedelta(seconds=5)) == "in"  # waited as told


def test_device_tokens_are_bound_to_name_password_and_age(engine, victim):
    with write_session(engine) as session:
        add_annotator(session, "ann3", "ann3-password")
    ann2 = log_in(engine, VICTIM, PASSWORD, now=T0)[0]
    ann3 = log_in(engine, "ann3", "ann3-password", now=T0)[0]
    assert known_device(ann2, victim, T0) is not None
    assert known_device(ann3, victim, T0) is None  # another name's token does not count
    assert known_device(ann2, victim[:-4] + ("AAAA" if victim[-4:] != "AAAA" else "BBBB"), T0) is None  # forged MAC
    assert known_device(ann2, victim, T0 + timedelta(days=40)) is None  # expired (30 days)
    both = device_cookie(ann3, victim, T0)  # a shared computer keeps both names
    assert known_device(ann2, both, T0) and known_device(ann3, both, T0)
    assert device_cookie(ann2, both, T0).count("~") == 1  # ann2's old token replaced, not added
    with write_session(engine) as session:
        set_password(session, VICTIM, "a-new-password")
    assert known_device(log_in(engine, VICTIM, "a-new-password", now=T0)[0], victim, T0) is None  # reset voids them


def test_a_burst_of_parallel_guesses_gets_no_more_password_checks_than_one_after_another(engine, victim):
    """Twenty wrong passwords at once from one client: each attempt's write phase re-checks the
    throttle under a per-name lock (PostgreSQL: an advisory lock), so only the free failures and the
    one that starts the delay are recorded; the rest are refused as waiting."""
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import func, select

    from annotate.store.db import read_session
    from annotate.store.models import LoginFailure

    def guess(i):
        return _attempt(engine, f"guess-{i}", "203.0.113.9", T0)

    with ThreadPoolExecutor(max_workers=20) as pool:
        outcomes = list(pool.map(guess, range(20)))
    with read_session(engine) as session:
        recorded = session.scalar(select(func.count()).select_from(LoginFailure).where(LoginFailure.name == VICTIM))
    assert recorded <= FREE_FAILURES + 1, (recorded, outcomes)
    assert outcomes.count("wrong") == recorded
