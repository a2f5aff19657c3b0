"""The outbound URL guard (DESIGN.md, Security): where integrations and webhooks may send traces.

Cloud metadata endpoints are refused always: a webhook aimed at 169.254.169.254 would hand
the instance's credentials to whoever can read the delivery log. Private, loopback and other
non-public ranges are refused unless ``TRACERELAY_ALLOW_PRIVATE_DESTINATIONS`` is on (the
self-hosting default, where Phoenix or a collector usually runs next door).

Checked twice: when a config is saved (literal addresses and names that resolve now) and before
every send (the exporter resolves the host again, so a name later re-pointed is still caught;
a cached verdict lives ``RESOLVE_TTL_S``).
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
RESOLVE_TTL_S = 60.0

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


_verdicts: dict[tuple[str, bool], tuple[float, str | None]] = {}


def _resolve(host: str) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


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
        return
    if not allow_private and (host == "localhost" or host.endswith(".localhost")):
        raise UnsafeDestination(f"{host} is a loopback name (TRACERELAY_ALLOW_PRIVATE_DESTINATIONS is off)")
    if not resolve:
        return

    now = time.monotonic()
    cached = _verdicts.get((host, allow_private))
    if cached is not None and cached[0] > now:
        problem = cached[1]
    else:
        try:
            addresses = _resolve(host)
        except (OSError, UnicodeError):
            if require_resolvable:
                raise UnsafeDestination(f"{host} does not resolve")
            return
        problem = next(
            (p for p in (address_problem(a, allow_private=allow_private) for a in addresses) if p),
            None,
        )
        if problem:
            problem = f"{host} resolves to {problem}"
        _verdicts[(host, allow_private)] = (now + RESOLVE_TTL_S, problem)
    if problem:
        raise UnsafeDestination(problem)


def forget_verdicts() -> None:
    """Drop cached resolutions (tests flip the setting; a re-pointed name is re-checked at once)."""
    _verdicts.clear()
