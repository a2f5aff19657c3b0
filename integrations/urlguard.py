"""The outbound URL guard (DESIGN.md, Security): where integrations and webhooks may send traces.

Cloud metadata endpoints are refused always: a webhook aimed at 169.254.169.254 would hand
the instance's credentials to whoever can read the delivery log. Private, loopback and other
non-public ranges are refused unless ``TRACERELAY_ALLOW_PRIVATE_DESTINATIONS`` is on (the
self-hosting default, where Phoenix or a collector usually runs next door).

`check_url` is the one save-time guard: every place a URL enters (integrations, rules' ad-hoc
webhook urls from the API, the SDK, the dashboard and the dry run, upstreams, alert webhooks) calls
it the same way, so what one accepts the others accept. Numeric hosts are read as the resolver and
browsers read them (`http://2852039166/`, `http://0xa9fea9fe/`, `http://0251.0376.0251.0376/`,
`http://169.254.43518/` and `http://0/` are IPv4 addresses, inet_aton's forms), without DNS.

Checked when a config is saved (literal addresses and names that resolve now), before every send,
and where the connection is made: `connect_addresses` resolves a host once (`resolve_addresses`,
the one DNS look-up of every outbound connection), checks every answer, and the connection goes
to those checked addresses and no others (exporters: `integrations.outbound`; the proxy:
`traces.proxy.outbound`). A name re-pointed after it was saved, or a DNS answer that changes
between the check and the connect, therefore never reaches a refused address. Answers are kept
``ADDRESS_TTL_S`` per host; the verdict is taken again on every use (so the setting applies at once).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from urllib.parse import urlsplit

import idna
from django.conf import settings

METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "fd00:ec2::254",  # AWS IPv6 IMDS
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS resolver / Azure wire server neighbour
        "168.63.129.16",  # Azure wire server
        "100.100.100.200",  # Alibaba Cloud
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")  # the deprecated ::a.b.c.d form
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # "this host on this network": Linux connects 0.0.0.0 to itself
# A host whose last label is a number (decimal, 0-octal, 0x-hex) is an IPv4 address in one of
# inet_aton's forms (what getaddrinfo, curl and browsers make of it) or no host at all, never a
# name: no top-level domain is numeric (the WHATWG URL standard's "ends in a number" rule).
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_SPACE_OR_BACKSLASH = re.compile(r"[\s\\]")
ADDRESS_TTL_S = 30.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeDestination(ValueError):
    """The URL may not be used as a destination; the message says why."""


def _embedded_v4(ip: IPAddress) -> IPAddress:
    """The IPv4 address hiding in an IPv4-mapped, NAT64, IPv4-compatible or 6to4 IPv6 address,
    else the address itself (judged as that IPv4 address: whatever it would refuse, they do too)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64 or (ip in _V4_COMPATIBLE and int(ip) > 1):  # (not :: and ::1)
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


def _refusal(ip: IPAddress, *, allow_private: bool) -> str | None:
    """What this address is, when that makes it refused; None when it is fine."""
    ip = _embedded_v4(ip)
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_multicast or ip.is_unspecified or ip in _THIS_NETWORK:
        return "not a unicast address"
    if ip.is_link_local:
        # 169.254/16 and fe80::/10 hold metadata services on most clouds: never.
        return "a link-local address"
    if not allow_private and not ip.is_global:
        return "a private, loopback or reserved address (TRACERELAY_ALLOW_PRIVATE_DESTINATIONS is off)"
    return None


def address_problem(ip: IPAddress, *, allow_private: bool) -> str | None:
    """Why this address is refused, or None when it is fine."""
    refusal = _refusal(ip, allow_private=allow_private)
    return f"{_embedded_v4(ip)} is {refusal}" if refusal else None


_addresses: dict[str, tuple[float, tuple[IPAddress, ...]]] = {}


def resolve_addresses(host: str) -> list[IPAddress]:
    """Every address ``host`` resolves to: the one DNS look-up outbound connections make."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


def cached_addresses(host: str) -> tuple[IPAddress, ...] | None:
    """``host``'s addresses when resolved less than ``ADDRESS_TTL_S`` ago, else None."""
    hit = _addresses.get(host)
    return hit[1] if hit is not None and hit[0] > time.monotonic() else None


def host_addresses(host: str) -> tuple[IPAddress, ...]:
    """``host``'s addresses, resolved at most once per ``ADDRESS_TTL_S``; `OSError` (or
    `UnicodeError`) when it does not resolve, which is not cached."""
    found = cached_addresses(host)
    if found is None:
        found = tuple(dict.fromkeys(resolve_addresses(host)))
        if not found:
            raise OSError(f"{host} resolves to no address")
        if len(_addresses) >= 4096:
            _addresses.clear()
        _addresses[host] = (time.monotonic() + ADDRESS_TTL_S, found)
    return found


def _problem_of(host: str, addresses: tuple[IPAddress, ...], allow_private: bool) -> str | None:
    # One refused answer refuses the name: a name that mixes a public address with a metadata one
    # is a rebinding set-up, not a misconfiguration to work around.
    for address in addresses:
        problem = address_problem(address, allow_private=allow_private)
        if problem:
            return f"{host} resolves to {problem}"
    return None


def _host_name(host: str) -> str:
    """The host as the resolver gets it: lower case, no trailing dot, no IPv6 brackets, and a
    non-ASCII name mapped as IDNA does (full-width digits and dots are an address in disguise)."""
    name = host.strip("[]").rstrip(".").lower()
    if not name.isascii():
        try:
            name = idna.encode(name, uts46=True).decode("ascii").rstrip(".")
        except idna.IDNAError as exc:
            raise UnsafeDestination(f"{host} is not a valid host name: {exc}")
    return name


def literal_address(host: str) -> IPAddress | None:
    """The address a host names without DNS: an IPv4 or IPv6 literal, or a numeric IPv4 form
    (``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``, ``169.254.43518``, ``0``).
    None for a name; `UnsafeDestination` for a number that is no address (``1.2.3.4.5``, ``08``)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        raise UnsafeDestination(f"{host} ends in a number but is not an IPv4 address")


def _static_checks(host: str, allow_private: bool) -> IPAddress | None:
    """The checks that need no DNS; the host's address when it is a literal one."""
    if host in METADATA_HOSTS:
        raise UnsafeDestination(f"{host} is a cloud metadata host")
    literal = literal_address(host)
    if literal is not None:
        refusal = _refusal(literal, allow_private=allow_private)
        if refusal:
            inner = _embedded_v4(literal)
            shown = host if str(inner) == host else f"{host} (= {inner})"
            raise UnsafeDestination(f"{shown} is {refusal}")
        return literal
    if not allow_private and (host == "localhost" or host.endswith(".localhost")):
        raise UnsafeDestination(f"{host} is a loopback name (TRACERELAY_ALLOW_PRIVATE_DESTINATIONS is off)")
    return None


def connect_addresses(host: str) -> tuple[IPAddress, ...]:
    """The checked addresses an outbound connection to ``host`` may go to.

    Raises `UnsafeDestination` when the host or any address it resolves to is refused, and
    `OSError` when it does not resolve.
    """
    allow_private = bool(settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS)
    name = _host_name(host)
    literal = _static_checks(name, allow_private)
    if literal is not None:
        return (literal,)
    addresses = host_addresses(name)
    problem = _problem_of(name, addresses, allow_private)
    if problem:
        raise UnsafeDestination(problem)
    return addresses


def check_url(url: str) -> None:
    """Raise `UnsafeDestination` unless ``url`` is an http(s) URL the guard lets us send to.

    The one check of every entry point, at save and before each send: the URL's form, its host
    (metadata names, literal and numeric addresses), and every address the name resolves to now
    (hosts-file names included). A name that does not resolve passes (the DNS may not be there
    yet; a send fails on its own, and the connection is checked again where it is made).
    """
    allow_private = bool(settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS)
    if not url.isprintable() or _SPACE_OR_BACKSLASH.search(url):
        # Parsers disagree about these (a backslash is a slash to a browser, not to urlsplit).
        raise UnsafeDestination("a URL has no spaces, backslashes or control characters (percent-encode them)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
        host = _host_name(parts.hostname or "")
    except ValueError as exc:
        raise UnsafeDestination(f"not a valid URL: {exc}")
    if parts.scheme not in ("http", "https"):
        raise UnsafeDestination("only http and https URLs are allowed")
    if not host:
        raise UnsafeDestination("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeDestination("credentials in the URL are not allowed; use headers or the secret fields")
    if _static_checks(host, allow_private) is not None:
        return
    try:
        addresses = host_addresses(host)
    except (OSError, UnicodeError):
        return
    problem = _problem_of(host, addresses, allow_private)
    if problem:
        raise UnsafeDestination(problem)


def url_refusal(url: str) -> str | None:
    """`check_url` as a field's error message (every entry point shows the same one), or None."""
    try:
        check_url(url)
    except UnsafeDestination as exc:
        return f"This URL may not be used: {exc}."
    return None


DEFAULT_PORTS = {"http": 80, "https": 443}
# A stored secret only goes to the address it was saved with: a change of address must give each
# one again (integrations' config, proxy upstreams). The message on each secret not given.
ADDRESS_CHANGED = "Give the secret again: the address changed"


def comparable_url(url: str) -> str:
    """``url`` with its cosmetic differences taken out, to tell whether an address changed: the
    scheme and host in lower case (IDNA-mapped, no trailing dot, an address literal in its
    canonical form), no default port, no trailing slash, no fragment. Anything else counts (the
    path too: two paths of one host can be two receivers). Text that is no URL is only stripped."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
        host = _host_name(parts.hostname or "")
        literal = literal_address(host) if host else None
    except (ValueError, UnsafeDestination):
        return text
    if not parts.scheme or not host:
        return text
    scheme = parts.scheme.lower()
    if literal is not None:
        host = f"[{literal}]" if literal.version == 6 else str(literal)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}" if userinfo else host
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}{query}"


def same_address(first: str | None, second: str | None) -> bool:
    """Whether two URLs name the same address once normalised (`comparable_url`); None is no address."""
    if first is None or second is None:
        return first is second
    return comparable_url(first) == comparable_url(second)


def forget_resolutions() -> None:
    """Drop cached resolutions (tests; a re-pointed name is then looked up again at once)."""
    _addresses.clear()
