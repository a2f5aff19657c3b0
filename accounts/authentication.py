from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from config.problems import BEARER_CHALLENGE, Problem

from . import keys
from .principals import KeyPrincipal, TokenUser
from .selectors import principal_for_key, token_user, user_principal

TEAM_HEADER = "X-Team"


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


class UserTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer tru_…` (a person's token from `tracerelay login`), before the API key check.

    With ``X-Team: <team id>`` the request acts in that team with the user's role there (a
    `UserPrincipal`, which the team API's views take like a key); without it only the account
    endpoints (/auth/me, /teams…) accept it. Unknown, revoked and expired tokens are 401.
    """

    def authenticate(self, request: Request) -> tuple[TokenUser, TokenUser | KeyPrincipal] | None:
        header = get_authorization_header(request).decode("latin-1")
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not keys.is_user_token(raw):
            return None
        user = token_user(raw)
        if user is None:
            raise Problem(
                401, "invalid-token", "The user token is malformed, unknown, revoked or expired: log in again."
            )
        team = request.headers.get(TEAM_HEADER)
        if team is None:
            return user, user
        team = team.strip()
        if not team.isascii() or not team.isdigit() or len(team) > 18:
            raise Problem(400, "invalid-team", f"{TEAM_HEADER} must be a team id (GET /api/v1/teams lists yours).")
        principal = user_principal(user, int(team))
        if principal is None:
            raise Problem(403, "not-a-member", f"You are not a member of team {team}.", team=int(team))
        return user, principal

    def authenticate_header(self, request: Request) -> str:
        return BEARER_CHALLENGE


class UserTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = UserTokenAuthentication
    name = "UserToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "tru_<40 characters>",
            "description": "A person's token (POST /api/v1/auth/login, the CLI's `tracerelay login`). With the "
            "header `X-Team: <team id>` it also works on the team endpoints, with the user's role in that team: "
            "viewer reads; member also tests rules and replays deliveries; admin and owner also write rules, "
            "integrations and PII settings. Never ingest or the proxy: those take an API key.",
        }


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
