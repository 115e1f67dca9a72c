"""Who is asking behind a reverse proxy (annotate.people.proxy), and the cookie string (issue 23, items 2, 6, 10):
forwarding headers believed only from configured proxies, demo passwords only to direct loopback
requests, ``Secure`` cookies over HTTPS."""

from __future__ import annotations

import pytest

from annotate.people.proxy import (
    ProxyConfigError,
    client_address,
    forwarded_allow_ips,
    is_https,
    may_show_demo_passwords,
    parse_trusted,
    proxy_configured,
    trusted_proxies,
)
from annotate.people.sessions import COOKIE_NAME, cookie_string

LOOPBACK = parse_trusted("127.0.0.1,::1")
NGINX_TIER = parse_trusted("10.0.0.0/24")


def test_trusted_proxies_setting_and_the_older_switch():
    assert trusted_proxies({}) == ()
    assert trusted_proxies({"DST_JUDGE_TRUST_PROXY": "1"}) == LOOPBACK  # kept: means nginx on this host
    assert trusted_proxies({"DST_JUDGE_TRUSTED_PROXIES": "10.0.0.0/24", "DST_JUDGE_TRUST_PROXY": "1"}) == NGINX_TIER
    assert proxy_configured({"DST_JUDGE_TRUSTED_PROXIES": " 192.0.2.1 "})
    with pytest.raises(ProxyConfigError, match="'nginx.local' is not an IP address"):
        trusted_proxies({"DST_JUDGE_TRUSTED_PROXIES": "127.0.0.1,nginx.local"})
    assert forwarded_allow_ips(parse_trusted("127.0.0.1,::1,10.0.0.0/24")) == "127.0.0.1,::1,10.0.0.0/24"
    assert forwarded_allow_ips(()) == ""


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "198.51.100.7"},
        {"X-Real-IP": "198.51.100.7"},
        {"x-forwarded-for": "198.51.100.7, 10.0.0.1", "x-real-ip": "198.51.100.7"},
        {"Forwarded": "for=198.51.100.7"},
        {"X-Forwarded-For": "not-an-address"},
    ],
)
def test_headers_from_a_peer_that_is_not_a_proxy_are_ignored(headers):
    for trusted in ((), LOOPBACK, NGINX_TIER):
        assert client_address("203.0.113.66", headers, trusted) == "203.0.113.66"
    assert client_address(None, headers, ()) == "127.0.0.1"  # no proxy configured: loopback is just loopback


def test_the_client_behind_trusted_proxies():
    # nginx sets X-Forwarded-For to its peer ($remote_addr): that is the client
    assert client_address(None, {"X-Forwarded-For": "198.51.100.7", "X-Real-IP": "198.51.100.7"}, LOOPBACK) == "198.51.100.7"
    # a client's own header before nginx's entry is skipped: the rightmost untrusted hop counts
    assert client_address("10.0.0.5", {"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 10.0.0.9"}, NGINX_TIER) == "198.51.100.7"
    # garbage where an address belongs: counted under the last trusted hop, never under a chosen name
    assert client_address("10.0.0.5", {"X-Forwarded-For": "198.51.100.7, evil"}, NGINX_TIER) == "10.0.0.5"
    assert client_address("10.0.0.5", {"X-Real-IP": "evil"}, NGINX_TIER) == "10.0.0.5"
    assert client_address("10.0.0.5", {}, NGINX_TIER) == "10.0.0.5"
    # IPv6 clients are counted per /64; v4-mapped addresses as v4
    assert client_address("2001:db8:1:2:aaaa::1", {}, ()) == client_address("2001:db8:1:2:bbbb::9", {}, ()) == "2001:db8:1:2::/64"
    assert client_address("::ffff:198.51.100.7", {}, ()) == "198.51.100.7"


def test_demo_passwords_only_to_direct_loopback_requests():
    assert may_show_demo_passwords(None, {"Host": "127.0.0.1:8501"}, ())
    assert may_show_demo_passwords("127.0.0.2", {}, ())
    for header in ("X-Forwarded-For", "X-Real-IP", "Forwarded", "X-Forwarded-Proto", "X-Forwarded-Host", "Via"):
        assert not may_show_demo_passwords(None, {header: "x"}, ()), header  # nginx on this host: loopback peer
        assert not may_show_demo_passwords(None, {header.lower(): "x"}, ()), header
    assert not may_show_demo_passwords("203.0.113.66", {}, ())
    assert not may_show_demo_passwords(None, {}, LOOPBACK)  # a proxy is configured: never


def test_cookie_secure_over_https():
    token = "abc-DEF_123"
    plain = f"{COOKIE_NAME}={token}; path=/; max-age=43200; samesite=strict"
    assert cookie_string(COOKIE_NAME, token, 12 * 3600, secure=False) == plain
    assert cookie_string(COOKIE_NAME, token, 12 * 3600, secure=True) == plain + "; secure"
    assert is_https("https://judge.example.org/app", None, {}, ())  # the page's own URL
    assert not is_https("http://127.0.0.1:8501/", None, {}, ())
    assert is_https("http://127.0.0.1:8601/", None, {"X-Forwarded-Proto": "https"}, LOOPBACK)  # TLS at nginx
    assert not is_https("http://127.0.0.1:8601/", None, {"X-Forwarded-Proto": "https"}, ())  # nobody trusted
    assert not is_https("http://192.0.2.1:8601/", "203.0.113.66", {"X-Forwarded-Proto": "https"}, LOOPBACK)
    assert is_https(None, "10.0.0.5", {"X-Forwarded-Proto": "https, http"}, NGINX_TIER)


def test_documented_nginx_config_is_the_tested_one():
    """The headers the documented nginx sets (docs/deployment.md: forwarding, framing, CSP) are exactly those
    the scale-out and proxy browser tests run behind (tests/scaleout_harness.py), and the other way round."""
    import re

    from tests.conftest import REPO
    from tests.scaleout_harness import CSP, NGINX_CONF

    def directives(text: str) -> set[str]:
        wanted = r"^ {4,}((?:proxy_set_header|add_header|proxy_read_timeout|proxy_next_upstream|proxy_http_version) [^\n]*;)$"
        return {re.sub(r"\s+", " ", found) for found in re.findall(wanted, text, flags=re.M)}

    page = REPO.joinpath("docs", "deployment.md").read_text(encoding="utf-8")
    start = page.index("## Two app servers behind nginx")
    section = page[start : page.index("\n## ", start + 1)]
    harness = NGINX_CONF.replace("{{", "{").replace("}}", "}").replace("{csp}", CSP)
    tested = {line for line in directives(harness) if "X-Served-By" not in line}  # the harness's own marker
    assert directives(section) == tested
    assert f'add_header Content-Security-Policy "{CSP}" always;' in tested
