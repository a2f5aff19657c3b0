from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """The caller behind an API key: what the API and the proxy need, cacheable as plain data."""

    key_id: int
    team_id: int
    environment: str
    prefix: str
    scopes: frozenset[str]

    is_authenticated = True

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def actor(self) -> str:
        return f"key:{self.prefix}"
