"""The HTTP transport of every exporter: connections go only to addresses the URL guard checked.

httpx resolves a host on its own when it opens a connection, so a check made before the request
(`urlguard.check_url`) could pass on one DNS answer while the connection used another. Here the
connection step itself resolves once (`urlguard.connect_addresses`), refuses the host when an
answer is a metadata, link-local or (with the setting off) private address, and connects to the
checked address. The pool is still keyed by host name and TLS still sends the name as SNI and
verifies the certificate against it: only the socket's address is pinned.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from . import urlguard
from .urlguard import UnsafeDestination


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, with the host resolved and checked here rather than by the OS."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self.inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = urlguard.connect_addresses(host)  # raises UnsafeDestination: passed on as is
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"{host} does not resolve: {exc}") from exc
        error: Exception | None = None
        for address in addresses:  # in resolver order, like socket.create_connection
            try:
                return self.inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        assert error is not None
        raise error

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise UnsafeDestination("unix sockets are not an outbound destination")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def guarded_transport(*, limits: httpx.Limits, verify: ssl.SSLContext | bool = True) -> httpx.HTTPTransport:
    """An `httpx.HTTPTransport` whose connections go through `GuardedBackend`.

    httpx takes no network backend; its transport's pool (httpcore's, which does) is replaced by
    one with the same settings and ours. Environment proxies are not used (a client given a
    transport ignores them): through a proxy, the address connected to would be the proxy's.
    """
    transport = httpx.HTTPTransport(limits=limits, verify=verify)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=GuardedBackend(),
    )
    return transport
