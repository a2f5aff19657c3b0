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

    def refusal(self, scope: str) -> str:
        return f"A {self.environment} key may not do this (needs scope '{scope}')."


@dataclass(frozen=True, slots=True)
class UserPrincipal(KeyPrincipal):
    """A person with a user token acting in one of their teams (X-Team): the team API's views see a
    principal like a key's, whose scopes are those of the user's role there (accounts.models.role_scopes).
    ``key_id`` is 0: a user token never ingests (no ingest scope), so no trace ever names it."""

    user_id: int = 0
    username: str = ""
    role: str = ""
    token_id: int = 0

    @property
    def actor(self) -> str:
        return f"user:{self.username}"

    def refusal(self, scope: str) -> str:
        return f"Your role in this team ({self.role}) may not do this (needs scope '{scope}')."


@dataclass(frozen=True, slots=True)
class TokenUser:
    """A user token without a team: enough for /auth/* and /teams (the account's own endpoints)."""

    user_id: int
    username: str
    token_id: int

    is_authenticated = True
