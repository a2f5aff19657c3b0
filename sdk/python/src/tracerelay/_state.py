"""The one live client, read by every instrumented call (None: calls pass straight through)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._client import Client

client: Client | None = None
