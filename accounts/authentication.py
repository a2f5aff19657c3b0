from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from config.problems import BEARER_CHALLENGE, Problem

from .principals import KeyPrincipal
from .selectors import principal_for_key


def bearer_token(request: Any) -> str | None:
    return token_from_header(get_authorization_header(request).decode("latin-1"))


def token_from_header(header: str) -> str | None:
    """The key in an `Authorization: Bearer <key>` header; None when there is no header."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(401, "unauthorized", "Authorization must be 'Bearer <API key>'.")
    return token.strip()


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer tr_<env>_…`. Missing, malformed, unknown and revoked keys are all 401."""

    def authenticate(self, request: Request) -> tuple[KeyPrincipal, KeyPrincipal] | None:
        token = bearer_token(request)
        if token is None:
            return None
        principal = principal_for_key(token)
        if principal is None:
            raise Problem(401, "invalid-key", "The API key is malformed, unknown or revoked.")
        return principal, principal

    def authenticate_header(self, request: Request) -> str:
        return BEARER_CHALLENGE


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "tr_<prod|dev|ci>_<36 characters>",
            "description": "A team API key. production: everything; development: ingest, reads, rule tests; "
            "ci: ingest and trace reads.",
        }
