"""One HTTP client per worker process (connection pooling across tasks), connecting only to
addresses the URL guard checked (`integrations.outbound`)."""

from __future__ import annotations

import os
import threading

import httpx

from integrations.outbound import guarded_transport

_client: httpx.Client | None = None
_client_pid: int | None = None
_client_lock = threading.Lock()


def http_client() -> httpx.Client:
    """The process's shared client. Recreated after a fork: sockets must not cross processes."""
    global _client, _client_pid
    pid = os.getpid()
    if _client is None or _client_pid != pid:
        with _client_lock:
            if _client is None or _client_pid != pid:
                limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
                _client = httpx.Client(
                    timeout=httpx.Timeout(10.0),
                    transport=guarded_transport(limits=limits),
                    follow_redirects=False,
                    headers={"User-Agent": "tracerelay-delivery/1"},
                )
                _client_pid = pid
    return _client


def close_http_client() -> None:
    global _client
    if _client is not None:
        _client.close()
        _client = None
