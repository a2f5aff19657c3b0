"""tracerelay: traces of the application's LLM calls, sent to a tracerelay server in the background.

    import tracerelay
    tracerelay.init(service_name="checkout")   # api_key from TRACERELAY_API_KEY

From then on every call made with `openai`, `anthropic`, `mistralai` or `google-genai` (sync or async,
streamed or not) becomes one trace. Nothing here raises into the application once `init` has returned, and no
call waits on the network: see docs/sdk.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

import atexit
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from . import _state
from ._client import Client
from ._config import Config
from ._records import Span
from ._scores import score
from ._spans import TraceBlock, trace

__all__ = [
    "init",
    "flush",
    "shutdown",
    "stats",
    "trace",
    "current_span",
    "score",
    "Span",
    "TraceBlock",
    "__version__",
]

log = logging.getLogger("tracerelay")
_init_lock = threading.Lock()


def init(
    api_key: str | None = None,
    *,
    service_name: str | None = None,
    environment: str | None = None,
    debug: bool = False,
    sampling_rate: float = 1.0,
    routing_rules: Sequence[dict[str, Any]] | None = None,
    batch: bool = False,
    base_url: str | None = None,
    batch_size: int | None = None,
    flush_interval: float | None = None,
    max_queue_size: int | None = None,
    compress: bool = True,
    timeout: float | None = None,
    max_retries: int | None = None,
    shutdown_timeout: float | None = None,
    capture_content: bool = True,
    inject_stream_usage: bool = True,
    tags: Sequence[str] | None = None,
    instrument: bool = True,
    transport: Any = None,
) -> None:
    """Start sending traces. Raises ValueError for a missing key or a bad option (the only time we raise).

    Calling it again replaces the running client (the old one is flushed first).
    """
    config = Config.resolve(
        api_key=api_key,
        base_url=base_url,
        routing_rules=routing_rules,
        tags=tags,
        service_name=service_name,
        environment=environment,
        debug=bool(debug),
        sampling_rate=float(sampling_rate),
        batch=bool(batch),
        batch_size=batch_size,
        flush_interval=flush_interval,
        max_queue_size=max_queue_size,
        compress=bool(compress),
        timeout=timeout,
        max_retries=max_retries,
        shutdown_timeout=shutdown_timeout,
        capture_content=bool(capture_content),
        inject_stream_usage=bool(inject_stream_usage),
    )
    if debug:
        _debug_logging()
    with _init_lock:
        old = _state.client
        _state.client = Client(config, transport)
        if old is not None:
            old.shutdown(old.config.shutdown_timeout)
    if instrument:
        from . import instrument as _instrument

        _instrument.install()
    log.debug(
        "tracerelay: sending to %s with key %s (%s mode, sampling %.3g)",
        config.base_url,
        config.masked_key(),
        "batch" if config.batch else "immediate",
        config.sampling_rate,
    )


def flush(timeout: float = 5.0) -> bool:
    """Send everything recorded so far; True when done within `timeout` seconds. Never raises."""
    client = _state.client
    if client is None:
        return True
    try:
        return client.flush(timeout)
    except Exception:
        log.debug("tracerelay: flush failed", exc_info=True)
        return False


def shutdown(timeout: float | None = None) -> bool:
    """Flush (at most `timeout` seconds, default `shutdown_timeout`) and stop; calls then pass through."""
    with _init_lock:
        client, _state.client = _state.client, None
    if client is None:
        return True
    _last_stats["client"] = client
    try:
        return client.shutdown(client.config.shutdown_timeout if timeout is None else timeout)
    except Exception:
        log.debug("tracerelay: shutdown failed", exc_info=True)
        return False


def stats() -> dict[str, Any]:
    """Counters: captured, sent, dropped (queue full), sampled_out, failed, rejected, retries, requests, queued."""
    client = _state.client or _last_stats.get("client")
    return client.stats() if client is not None else {}


def current_span() -> Span | None:
    """The innermost `trace()` block running here, to add output, metadata or tags to it."""
    from ._records import current_span as var

    return var.get()


_last_stats: dict[str, Client] = {}


def _debug_logging() -> None:
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.DEBUG)


def _at_exit() -> None:
    if _state.client is not None:
        shutdown()


def _after_fork_in_child() -> None:
    client = _state.client
    if client is not None:
        client.after_fork()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
