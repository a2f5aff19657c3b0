"""The outbound URL guard (DESIGN.md, Security): where integrations and webhooks may send traces.

Cloud metadata endpoints are refused always: a webhook aimed at 169.254.169.254 would hand
the instance's credentials to whoever can read the delivery log. Private, loopback and other
non-public ranges are refused unless ``TRACERELAY_ALLOW_PRIVATE_DESTINATIONS`` is on (the
self-hosting default, where Phoenix or a collector usually runs next door).

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
import socket
import time
from urllib.parse import urlsplit

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
ADDRESS_TTL_S = 30.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeDestination(ValueError):
    """The URL may not be used as a destination; the message says why."""


def _embedded_v4(ip: IPAddress) -> IPAddress:
    """The IPv4 address hiding in an IPv4-mapped or NAT64 IPv6 address, else the address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_problem(ip: IPAddress, *, allow_private: bool) -> str | None:
    """Why this address is refused, or None when it is fine."""
    ip = _embedded_v4(ip)
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    if ip.is_multicast or ip.is_unspecified:
        return f"{ip} is not a unicast address"
    if ip.is_link_local:
        # 169.254/16 and fe80::/10 hold metadata services on most clouds: never.
        return f"{ip} is a link-local address"
    if not allow_private and not ip.is_global:
        return f"{ip} is a private, loopback or reserved address (TRACERELAY_ALLOW_PRIVATE_DESTINATIONS is off)"
    return None


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


def _static_checks(host: str, allow_private: bool) -> IPAddress | None:
    """The checks that need no DNS; the host's address when it is a literal one."""
    if host in METADATA_HOSTS:
        raise UnsafeDestination(f"{host} is a cloud metadata host")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        problem = address_problem(literal, allow_private=allow_private)
        if problem:
            raise UnsafeDestination(problem)
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
    name = host.strip("[]").rstrip(".").lower()
    literal = _static_checks(name, allow_private)
    if literal is not None:
        return (literal,)
    addresses = host_addresses(name)
    problem = _problem_of(name, addresses, allow_private)
    if problem:
        raise UnsafeDestination(problem)
    return addresses


def check_url(url: str, *, resolve: bool = True, require_resolvable: bool = False) -> None:
    """Raise `UnsafeDestination` unless ``url`` is an http(s) URL the guard lets us send to.

    ``resolve`` also checks every address the host name resolves to. A name that does not resolve
    passes unless ``require_resolvable`` (config time: the DNS may not be there yet; send time
    fails on its own).
    """
    allow_private = bool(settings.TRACERELAY_ALLOW_PRIVATE_DESTINATIONS)
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".").lower()
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise UnsafeDestination(f"not a valid URL: {exc}")
    if parts.scheme not in ("http", "https"):
        raise UnsafeDestination("only http and https URLs are allowed")
    if not host:
        raise UnsafeDestination("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeDestination("credentials in the URL are not allowed; use headers or the secret fields")
    if _static_checks(host, allow_private) is not None or not resolve:
        return
    try:
        addresses = host_addresses(host)
    except (OSError, UnicodeError):
        if require_resolvable:
            raise UnsafeDestination(f"{host} does not resolve")
        return
    problem = _problem_of(host, addresses, allow_private)
    if problem:
        raise UnsafeDestination(problem)


def forget_resolutions() -> None:
    """Drop cached resolutions (tests; a re-pointed name is then looked up again at once)."""
    _addresses.clear()
