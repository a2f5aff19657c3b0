"""ASGI entry point: the proxy's lean path in front of Django.

`/api/v1/proxy/...` goes straight to `traces.proxy.app.ProxyApp`, a plain ASGI app that never
enters Django's request machinery (middleware, URL resolution, sync/async switches: together more
than the proxy's whole 1 ms budget). Single-trace ingest (`POST /api/v1/traces`) is answered by
`traces.ingest` the same way. Everything else is Django's ASGI handler, unchanged.

Django's handler does not speak the lifespan protocol, so it is answered here: startup opens the
proxy's HTTP client session and starts its trace writer thread (one of each per worker process);
shutdown drains the writer, so traces queued at exit are stored or spooled, not lost.

Startup also loads what would otherwise load on the first requests, then `gc.freeze()`s it all:
the ~150,000 objects of a loaded Django, DRF and the price tables live as long as the process,
and without the freeze every full (gen-2) collection walks them, pausing the event loop for
~70-130 ms (measured with bench/proxy_overhead.py: it was the proxy's whole p99 at 500 req/s).
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import MutableMapping
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_handler = get_asgi_application()  # sets Django up: import the proxy after it

from config.asgi_types import Receive, Send  # noqa: E402
from traces.ingest import mount  # noqa: E402
from traces.proxy.app import PREFIX, ProxyApp  # noqa: E402

# POST /api/v1/traces on its own lean path too (group commit; see traces/ingest.py).
django_application = mount(django_handler)  # type: ignore[arg-type]  # Django's stubs type its handler narrowly

log = logging.getLogger(__name__)
proxy = ProxyApp()


async def application(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] == "http" and scope["path"].startswith(PREFIX):
        await proxy(scope, receive, send)
    elif scope["type"] == "lifespan":
        await _lifespan(receive, send)
    else:
        await django_application(scope, receive, send)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                await proxy.startup()
                _load_and_freeze()
            except Exception as exc:
                log.exception("proxy startup failed")
                await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await proxy.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


def _load_and_freeze() -> None:
    # Imported here: this runs after django.setup(), which the URLconf and the traces app need.
    from django.urls import get_resolver

    from traces.normalize import normalize_trace

    get_resolver().url_patterns  # noqa: B018 - imports every URLconf and view module
    normalize_trace({"model": "gpt-4o-mini", "prompt_tokens": 1, "completion_tokens": 1}, team_id=0)  # price tables
    gc.collect()
    gc.freeze()
