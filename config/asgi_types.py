"""ASGI callable types for the lean paths (the proxy, single-trace ingest) that bypass Django."""

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

AsgiScope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[AsgiScope, Receive, Send], Awaitable[None]]
