from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from config.problems import Problem

from .principals import KeyPrincipal


def principal_of(request: Request) -> KeyPrincipal:
    """The key behind a request that passed `HasApiKey` (or a `scoped` permission)."""
    principal = request.auth
    assert isinstance(principal, KeyPrincipal)  # the permission class ran first
    return principal


class HasApiKey(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.auth, KeyPrincipal):
            raise Problem(401, "unauthorized", "Send 'Authorization: Bearer <API key>'.")
        return True


def scoped(read: str, write: str | None = None) -> type[BasePermission]:
    """A permission class: ``read`` scope for safe methods, ``write`` (default: read) for the rest."""

    class ScopePermission(HasApiKey):
        def has_permission(self, request: Request, view: Any) -> bool:
            super().has_permission(request, view)
            needed = read if request.method in ("GET", "HEAD", "OPTIONS") else (write or read)
            principal: KeyPrincipal = request.auth  # type: ignore[assignment]  # HasApiKey checked it
            if not principal.has_scope(needed):
                raise Problem(
                    403,
                    "insufficient-scope",
                    f"A {principal.environment} key may not do this (needs scope '{needed}').",
                    required_scope=needed,
                )
            return True

    ScopePermission.__name__ = f"Scope_{read}_{write or read}".replace(":", "_")
    return ScopePermission
