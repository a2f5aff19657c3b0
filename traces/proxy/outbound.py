"""The proxy's upstream connections go only to addresses the URL guard checked.

An upstream URL is checked when it is saved, but its host name is resolved again whenever a
connection is opened, and the answer may have changed (a re-pointed name, DNS rebinding). So the
resolving happens here, in the connector: `GuardedResolver` resolves through the guard
(`urlguard.connect_addresses`), refuses metadata and link-local answers (and private ones when
``TRACERELAY_ALLOW_PRIVATE_DESTINATIONS`` is off), and aiohttp connects to exactly the addresses
it returns; `GuardedConnector` applies the same verdict to literal IP hosts, which aiohttp never
hands to a resolver. TLS still uses the host name for SNI and certificate checks.

Cost: only opening a connection resolves (a kept-alive connection is reused without it), and
answers are kept ``urlguard.ADDRESS_TTL_S`` per host, so a cached host costs a dict look-up and the
DNS look-up itself (on a miss) runs in a thread, as aiohttp's default resolver does.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Sequence
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.helpers import is_ip_address

from integrations import urlguard
from integrations.urlguard import UnsafeDestination

_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class RefusedAddress(OSError):
    """The guard refused the upstream's address; aiohttp reports it as a connection error (502)."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EACCES, f"refused by the outbound address guard: {reason}")


def _checked(host: str) -> tuple[urlguard.IPAddress, ...]:
    try:
        return urlguard.connect_addresses(host)
    except UnsafeDestination as exc:
        raise RefusedAddress(str(exc)) from None


class GuardedResolver(AbstractResolver):
    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[ResolveResult]:
        name = host.rstrip(".").lower()
        if urlguard.cached_addresses(name) is None:
            # The blocking DNS look-up, in a thread; the check below then finds its answer cached.
            await asyncio.get_running_loop().run_in_executor(None, urlguard.host_addresses, name)
        results: list[ResolveResult] = []
        for address in _checked(host):
            address_family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            if family in (socket.AF_UNSPEC, address_family):
                results.append(
                    ResolveResult(
                        hostname=host, host=str(address), port=port, family=address_family, proto=0, flags=_NUMERIC
                    )
                )
        if not results:
            raise OSError(errno.EADDRNOTAVAIL, f"{host} has no address of the family asked for")
        return results

    async def close(self) -> None:
        return None


class GuardedConnector(aiohttp.TCPConnector):
    """A TCP connector that resolves through `GuardedResolver` (no DNS cache of its own: the
    guard keeps answers briefly and takes its verdict on every new connection)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(resolver=GuardedResolver(), use_dns_cache=False, **kwargs)

    async def _resolve_host(self, host: str, port: int, traces: Sequence[Any] | None = None) -> list[ResolveResult]:
        if is_ip_address(host):  # aiohttp connects to a literal address without asking the resolver
            _checked(host)
        return await super()._resolve_host(host, port, traces=traces)
