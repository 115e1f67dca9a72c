"""Who is asking, behind a reverse proxy: the decisions, without Streamlit.

A page passes in the WebSocket peer's address (``st.context.ip_address``; Streamlit reports
127.0.0.1 and ::1 as ``None``) and the request headers; these functions decide.

- **Trusted proxies** are ``DST_JUDGE_TRUSTED_PROXIES`` (comma-separated addresses or CIDR
  networks, e.g. ``127.0.0.1,::1`` for nginx on the same host, ``10.0.0.0/24`` for a proxy tier).
  ``DST_JUDGE_TRUST_PROXY=1`` (the older switch) means the loopback proxies ``127.0.0.1,::1``.
  Forwarding headers (``X-Forwarded-For``, ``X-Real-IP``, ``X-Forwarded-Proto``) are believed only
  when the peer is one of them; from anyone else they are ignored, so a client cannot pick the
  address it is throttled under.
- **The client's address** behind trusted proxies is the rightmost ``X-Forwarded-For`` entry that is
  not itself a trusted proxy (each proxy appends its peer), else ``X-Real-IP``; an entry that is not
  an IP address ends the walk at the last trusted hop (never a free-form name the client chose).
  IPv6 clients are counted per /64 network, the block one subscriber normally gets.
- **Demo passwords** are shown only to a request from loopback that carries no proxy header at all
  (``Forwarded``, ``X-Forwarded-*``, ``X-Real-IP``, ``Via``) while no proxy is configured: behind nginx
  on the same host the peer is loopback too, and the headers are what tells the two apart.
- **HTTPS** (for the cookie's ``Secure``): the page's own URL is https, or a trusted proxy says
  ``X-Forwarded-Proto: https``.

Note that Streamlit's web server (uvicorn) already rewrites the peer address from ``X-Forwarded-For``
when the peer is in ``FORWARDED_ALLOW_IPS`` (its default: ``127.0.0.1,::1``); ``python -m annotate
serve`` sets that variable to the trusted proxies so both layers agree (docs/deployment.md, *Proxy settings*).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from formats.settings import load

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = "127.0.0.1,::1"
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "via")
MAX_FORWARDED_HOPS = 20  # a longer X-Forwarded-For is cut (the walk starts at the right)


class ProxyConfigError(ValueError):
    """A malformed trusted-proxy setting; the message names the entry."""


def parse_trusted(spec: str) -> tuple[Network, ...]:
    """Comma-separated addresses / CIDR networks.

    >>> [str(n) for n in parse_trusted(" 127.0.0.1, ::1 ,10.0.0.0/24")]
    ['127.0.0.1/32', '::1/128', '10.0.0.0/24']
    """
    networks = []
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ProxyConfigError(
                f"DST_JUDGE_TRUSTED_PROXIES: {entry!r} is not an IP address or network (e.g. 127.0.0.1 or 10.0.0.0/24)"
            ) from None
    return tuple(networks)


def trusted_proxies(environ: Mapping[str, str] | None = None) -> tuple[Network, ...]:
    """The configured proxies (empty: none; forwarding headers are then never believed)."""
    current = load(environ)
    spec = current.trusted_proxies
    if not spec and current.trust_proxy:
        spec = LOOPBACK
    return parse_trusted(spec)


def proxy_configured(environ: Mapping[str, str] | None = None) -> bool:
    return bool(trusted_proxies(environ))


def forwarded_allow_ips(trusted: tuple[Network, ...]) -> str:
    """The value for uvicorn's ``FORWARDED_ALLOW_IPS`` that trusts exactly ``trusted`` ("" trusts nobody)."""
    return ",".join(str(net.network_address) if net.num_addresses == 1 else str(net) for net in trusted)


def _ip(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def peer_ip(peer: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The peer as an address; Streamlit's ``None`` is loopback (it hides 127.0.0.1 and ::1)."""
    return _ip(peer) or ipaddress.ip_address("127.0.0.1")


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            return value if isinstance(value, str) else None
    return None


def _trusted(address, trusted: tuple[Network, ...]) -> bool:
    return any(address.version == net.version and address in net for net in trusted)


def _bucket(address) -> str:
    """IPv4 as it is; IPv6 by its /64 (one subscriber's block)."""
    if isinstance(address, ipaddress.IPv6Address) and not address.is_loopback:
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def client_address(peer: str | None, headers: Mapping[str, str] | None, trusted: tuple[Network, ...]) -> str:
    """The address a login attempt is counted under (see the module docstring).

    >>> lo = parse_trusted("127.0.0.1")
    >>> client_address("203.0.113.9", {"X-Forwarded-For": "198.51.100.1"}, lo)  # not a proxy: header ignored
    '203.0.113.9'
    >>> client_address(None, {"X-Forwarded-For": "6.6.6.6, 198.51.100.1"}, lo)  # nginx appended its peer
    '198.51.100.1'
    >>> client_address(None, {"X-Real-IP": "198.51.100.2"}, lo)
    '198.51.100.2'
    >>> client_address(None, {}, ())
    '127.0.0.1'
    """
    address = peer_ip(peer)
    if not _trusted(address, trusted):
        return _bucket(address)
    forwarded = _header(headers, "x-forwarded-for")
    if forwarded:
        for hop in reversed([part.strip() for part in forwarded.split(",")][-MAX_FORWARDED_HOPS:]):
            hop_ip = _ip(hop)
            if hop_ip is None:
                break  # not an address: keep the last trusted hop
            address = hop_ip
            if not _trusted(hop_ip, trusted):
                break
        return _bucket(address)
    real = _ip(_header(headers, "x-real-ip"))
    return _bucket(real if real is not None else address)


def has_proxy_headers(headers: Mapping[str, str] | None) -> bool:
    return any(_header(headers, name) is not None for name in PROXY_HEADERS)


def may_show_demo_passwords(peer: str | None, headers: Mapping[str, str] | None, trusted: tuple[Network, ...]) -> bool:
    """Only to a browser on this host talking to the app directly: a loopback peer, no proxy header,
    and no proxy configured.

    >>> may_show_demo_passwords(None, {"Host": "localhost:8501"}, ())
    True
    >>> may_show_demo_passwords(None, {"Host": "judge.example.org", "X-Forwarded-For": "203.0.113.9"}, ())
    False
    >>> may_show_demo_passwords("203.0.113.9", {}, ())
    False
    """
    return not trusted and peer_ip(peer).is_loopback and not has_proxy_headers(headers)


def is_https(url: str | None, peer: str | None, headers: Mapping[str, str] | None, trusted: tuple[Network, ...]) -> bool:
    """Whether the browser reached us over HTTPS: the page's URL says so, or a trusted proxy does.

    >>> is_https("https://judge.example.org/", None, {}, ())
    True
    >>> is_https("http://127.0.0.1:8501/", None, {"X-Forwarded-Proto": "https"}, ())  # nobody trusted
    False
    >>> is_https("http://127.0.0.1:8501/", None, {"X-Forwarded-Proto": "https"}, parse_trusted("127.0.0.1"))
    True
    """
    if isinstance(url, str) and url.lower().startswith("https://"):
        return True
    if not _trusted(peer_ip(peer), trusted):
        return False
    proto = _header(headers, "x-forwarded-proto") or ""
    return proto.split(",")[0].strip().lower() == "https"
