from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from config.problems import Problem

from .authentication import TEAM_HEADER
from .principals import KeyPrincipal, TokenUser, UserPrincipal


def principal_of(request: Request) -> KeyPrincipal:
    """The key behind a request that passed `HasApiKey` (or a `scoped` permission)."""
    principal = request.auth
    assert isinstance(principal, KeyPrincipal)  # the permission class ran first
    return principal


class HasApiKey(BasePermission):
    """An API key, or a user token naming one of the user's teams (``X-Team``)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if isinstance(request.auth, TokenUser):
            raise Problem(
                400,
                "team-required",
                f"With a user token, name the team: '{TEAM_HEADER}: <team id>' (GET /api/v1/teams lists yours).",
            )
        if not isinstance(request.auth, KeyPrincipal):
            raise Problem(401, "unauthorized", "Send 'Authorization: Bearer <API key>'.")
        return True


class HasUserToken(BasePermission):
    """The account endpoints (/auth/me, /teams…): a person's token from `tracerelay login`, not a key."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if isinstance(request.auth, TokenUser | UserPrincipal):
            return True
        if isinstance(request.auth, KeyPrincipal):
            raise Problem(
                401, "user-token-required", "This endpoint takes a user token (tracerelay login), not an API key."
            )
        raise Problem(401, "unauthorized", "Send 'Authorization: Bearer <user token>' (tracerelay login).")


def token_user_of(request: Request) -> TokenUser:
    """The person behind a request that passed `HasUserToken`, with or without X-Team."""
    auth = request.auth
    if isinstance(auth, UserPrincipal):
        return TokenUser(auth.user_id, auth.username, auth.token_id)
    assert isinstance(auth, TokenUser)  # HasUserToken ran first
    return auth


def scoped(read: str, write: str | None = None) -> type[BasePermission]:
    """A permission class: ``read`` scope for safe methods, ``write`` (default: read) for the rest."""

    class ScopePermission(HasApiKey):
        def has_permission(self, request: Request, view: Any) -> bool:
            super().has_permission(request, view)
            needed = read if request.method in ("GET", "HEAD", "OPTIONS") else (write or read)
            principal: KeyPrincipal = request.auth  # type: ignore[assignment]  # HasApiKey checked it
            if not principal.has_scope(needed):
                raise Problem(403, "insufficient-scope", principal.refusal(needed), required_scope=needed)
            return True

    ScopePermission.__name__ = f"Scope_{read}_{write or read}".replace(":", "_")
    return ScopePermission
