"""The account API a person uses (the CLI): sign up, log in and out, who am I, my teams, a team's keys.

Authentication is a *user token* (``tru_…``, from signup or login), never an API key: keys belong
to a team and act for software; these endpoints act for a person. A team's keys are managed with
the same services as the dashboard's keys page (accounts/services.py), and the same role rules
(accounts/roles.py): every member lists them, only admins and owners create and revoke.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate, get_user_model, password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.problems import InvalidInput, Problem, json_object, problem_responses, validation_problem

from . import selectors, services, throttle
from .models import ApiKey, Environment, Membership, UserToken
from .permissions import HasUserToken, token_user_of
from .principals import TokenUser
from .roles import Permission

TAG = "Accounts (user token)"

# --- Bodies -----------------------------------------------------------------------------------------


class SignupInSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=150)
    password = serializers.CharField(trim_whitespace=False, max_length=1024)
    team_name = serializers.CharField(
        required=False, allow_blank=True, max_length=90, help_text="The new team's name (default: <name>'s team)."
    )
    token_name = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="Where the token is used, e.g. 'cli on laptop'."
    )


class LoginInSerializer(serializers.Serializer):
    # Text, not an e-mail field: the operator's bootstrap account ("admin") logs in too.
    # No NUL character in either (DRF refuses one; the pattern says so in the OpenAPI document).
    email = serializers.RegexField(
        r"^[^\x00]*$",
        max_length=150,
        help_text="The account's e-mail, or its username (the bootstrap login is `admin`).",
    )
    password = serializers.RegexField(r"^[^\x00]*$", trim_whitespace=False, max_length=1024)
    token_name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class KeyCreateInSerializer(serializers.Serializer):
    environment = serializers.ChoiceField(choices=Environment.values)
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class AccountUserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField()


class AccountTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="What X-Team takes.")
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=["owner", "admin", "member", "viewer"])
    created_at = serializers.DateTimeField()


class AccountTokenSerializer(serializers.Serializer):
    prefix = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class LoginOutSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Shown once: send it as 'Authorization: Bearer <token>'.")
    token_info = AccountTokenSerializer()
    user = AccountUserSerializer()
    teams = AccountTeamSerializer(many=True)


class MeSerializer(serializers.Serializer):
    user = AccountUserSerializer()
    token = AccountTokenSerializer()
    teams = AccountTeamSerializer(many=True)


TeamListSerializer = inline_serializer("AccountTeamList", {"data": AccountTeamSerializer(many=True)})


class TeamApiKeySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    environment = serializers.ChoiceField(choices=Environment.values)
    prefix = serializers.CharField(help_text="The first characters only: a full key is never shown again.")
    scopes = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


TeamApiKeyListSerializer = inline_serializer("TeamApiKeyList", {"data": TeamApiKeySerializer(many=True)})


class TeamApiKeyCreatedSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The full key, shown in this response only.")
    api_key = TeamApiKeySerializer()


# --- JSON ---------------------------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def user_json(user: Any) -> dict[str, Any]:
    return {"id": user.pk, "email": user.email or user.get_username()}


def team_json(m: Membership) -> dict[str, Any]:
    return {"id": m.team_id, "name": m.team.name, "role": m.role, "created_at": _iso(m.team.created_at)}


def token_json(token: UserToken) -> dict[str, Any]:
    return {
        "prefix": token.prefix,
        "name": token.name,
        "created_at": _iso(token.created_at),
        "expires_at": _iso(token.expires_at),
    }


def key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.pk,
        "name": key.name,
        "environment": key.environment,
        "prefix": key.prefix,
        "scopes": sorted(key.scopes),
        "active": key.is_active,
        "created_at": _iso(key.created_at),
        "created_by": key.created_by.get_username() if key.created_by is not None else None,
        "last_used_at": _iso(key.last_used_at),
        "revoked_at": _iso(key.revoked_at),
    }


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=json_object(request))
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _login_answer(user: Any, token: UserToken, raw: str, status: int) -> Response:
    teams = [team_json(m) for m in selectors.user_memberships(user.pk)]
    return Response(
        {"token": raw, "token_info": token_json(token), "user": user_json(user), "teams": teams}, status=status
    )


# --- Sign up, log in, log out, me ---------------------------------------------------------------------


class SignupView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=[TAG],
        operation_id="auth_signup",
        summary="Sign up (a new account, its own team, and a user token)",
        description="Makes the account (the e-mail is the login), a team it owns, and a user token for it "
        "(shown once). The password must pass the server's password rules (8+ characters, not common, not "
        "like the e-mail): a 400 names what is wrong. An e-mail with an account already is a 400 too.",
        request=SignupInSerializer,
        responses={201: LoginOutSerializer, **problem_responses(400, 415)},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        data = _valid(SignupInSerializer, request)
        email = data["email"].strip().lower()
        User = get_user_model()
        try:
            password_validation.validate_password(data["password"], User(username=email, email=email))
        except DjangoValidationError as error:
            raise validation_problem({"password": list(error.messages)}) from None
        try:
            user = services.user_signup(email=email, password=data["password"], team_name=data.get("team_name", ""))
        except InvalidInput as error:
            raise validation_problem(error.errors) from None
        token, raw = services.user_token_issue(user=user, name=data.get("token_name", ""))
        return _login_answer(user, token, raw, 201)


class LoginView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=[TAG],
        operation_id="auth_login",
        summary="Log in (a new user token)",
        description="Exchanges an e-mail and password for a user token (shown once; it expires after "
        "`TRACERELAY_USER_TOKEN_TTL_S`, 30 days by default). Failed attempts are throttled like the "
        "dashboard's log-in (per client IP and e-mail): past the limit a 429 with `Retry-After`.",
        request=LoginInSerializer,
        responses={200: LoginOutSerializer, **problem_responses(400, 401, 415, 429)},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        data = _valid(LoginInSerializer, request)
        email = data["email"].strip().lower()
        ip = throttle.client_ip(request._request)
        wait = throttle.retry_after(ip, email)
        if wait:
            raise Problem(
                429,
                "throttled",
                f"Too many failed attempts. Try again in {throttle.describe_wait(wait)}.",
                headers={"Retry-After": str(wait)},
                retry_after=wait,
            )
        user = authenticate(request._request, username=email, password=data["password"])
        if user is None:
            throttle.record_failure(ip, email)
            raise Problem(401, "invalid-credentials", "That e-mail and password do not match an account.")
        throttle.clear(ip, email)
        token, raw = services.user_token_issue(user=user, name=data.get("token_name", ""))
        return _login_answer(user, token, raw, 200)


class LogoutView(APIView):
    permission_classes = [HasUserToken]

    @extend_schema(
        tags=[TAG],
        operation_id="auth_logout",
        summary="Log out (revoke this user token)",
        description="The token of this request is revoked at once: every later request with it is a 401.",
        request=None,
        responses={204: None, **problem_responses(401)},
    )
    def post(self, request: Request) -> Response:
        services.user_token_revoke(token_id=token_user_of(request).token_id)
        return Response(status=204)


class MeView(APIView):
    permission_classes = [HasUserToken]

    @extend_schema(
        tags=[TAG],
        operation_id="auth_me",
        summary="Who am I: the user, this token, and my teams with my role in each",
        responses={200: MeSerializer, **problem_responses(401)},
    )
    def get(self, request: Request) -> Response:
        who = token_user_of(request)
        token = selectors.user_token_get(who.token_id)
        user = get_user_model().objects.get(pk=who.user_id)
        assert token is not None  # authenticated with it a moment ago
        teams = [team_json(m) for m in selectors.user_memberships(who.user_id)]
        return Response({"user": user_json(user), "token": token_json(token), "teams": teams})


# --- Teams and their keys -------------------------------------------------------------------------------


class TeamListView(APIView):
    permission_classes = [HasUserToken]

    @extend_schema(
        tags=[TAG],
        operation_id="teams_list",
        summary="My teams, with my role in each",
        description="A team's `id` is what the team endpoints take in the `X-Team` header with a user token.",
        responses={200: TeamListSerializer, **problem_responses(401)},
    )
    def get(self, request: Request) -> Response:
        who = token_user_of(request)
        return Response({"data": [team_json(m) for m in selectors.user_memberships(who.user_id)]})


def _membership(who: TokenUser, team_id: int, permission: Permission) -> Membership:
    membership = Membership.objects.select_related("team", "user").filter(user_id=who.user_id, team_id=team_id).first()
    if membership is None:
        raise Problem(404, "not-found", f"No team {team_id} of yours.")
    if not membership.allows(permission):
        raise Problem(
            403, "forbidden", f"Your role in this team ({membership.role}) may not do this.", role=membership.role
        )
    return membership


class TeamKeysView(APIView):
    permission_classes = [HasUserToken]

    @extend_schema(
        tags=[TAG],
        operation_id="team_keys_list",
        summary="A team's API keys (prefixes only, never a full key)",
        description="Every member may list them; active keys first, newest first.",
        responses={200: TeamApiKeyListSerializer, **problem_responses(401, 404)},
    )
    def get(self, request: Request, team_id: int) -> Response:
        membership = _membership(token_user_of(request), team_id, Permission.READ)
        rows = (
            ApiKey.objects.filter(team_id=membership.team_id)
            .select_related("created_by")
            .order_by("revoked_at", "-created_at")
        )
        return Response({"data": [key_json(k) for k in rows]})

    @extend_schema(
        tags=[TAG],
        operation_id="team_keys_create",
        summary="Create an API key (shown once)",
        description="Admins and owners only (a member or viewer gets a 403). The full key is in this "
        "response and nowhere else: only its digest is stored.",
        request=KeyCreateInSerializer,
        responses={201: TeamApiKeyCreatedSerializer, **problem_responses(400, 401, 403, 404, 415)},
        examples=[OpenApiExample("A CI key", value={"environment": "ci", "name": "github actions"}, request_only=True)],
    )
    def post(self, request: Request, team_id: int) -> Response:
        who = token_user_of(request)
        membership = _membership(who, team_id, Permission.MANAGE_KEYS)
        data = _valid(KeyCreateInSerializer, request)
        key, raw = services.api_key_create(
            team=membership.team, environment=data["environment"], name=data.get("name", ""), created_by=membership.user
        )
        return Response({"key": raw, "api_key": key_json(key)}, status=201)


class TeamKeyView(APIView):
    permission_classes = [HasUserToken]

    @extend_schema(
        tags=[TAG],
        operation_id="team_keys_revoke",
        summary="Revoke an API key",
        description="Admins and owners only. Requests with the key are refused from then on (401); revoking "
        "a revoked key again changes nothing. Answers with the key as it now is.",
        request=None,
        responses={200: TeamApiKeySerializer, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, team_id: int, key_id: int) -> Response:
        who = token_user_of(request)
        membership = _membership(who, team_id, Permission.MANAGE_KEYS)
        key = ApiKey.objects.select_related("team", "created_by").filter(pk=key_id, team_id=membership.team_id).first()
        if key is None:
            raise Problem(404, "not-found", f"No key {key_id} in this team.")
        services.api_key_revoke(key=key, actor=f"user:{who.username}")
        return Response(key_json(key))
