"""Who is asking, for which team, and may they: every dashboard view goes through `team_view`.

The current team is kept in the session; a user in several teams switches it (`team_switch`).
Objects are always looked up within ``request.team``, so a URL naming another team's object is a
404. A signed-in member whose role lacks the permission gets a 403 (they can see the page exists;
they may not do this).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django_htmx.middleware import HtmxDetails

from .models import Membership, Team
from .roles import Permission

SESSION_TEAM = "team_id"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class DashboardRequest(HttpRequest):
    """What a view decorated with `team_view` receives."""

    htmx: HtmxDetails
    team: Team
    membership: Membership


def request_actor(request: HttpRequest) -> str:
    """Who the audit log names for a signed-in user's action in the dashboard."""
    return f"user:{request.user.get_username()}"


def current_membership(request: HttpRequest) -> Membership | None:
    """The signed-in user's membership in the session's team (or their first team), cached per request."""
    if not request.user.is_authenticated:
        return None
    cached = getattr(request, "_current_membership", False)
    if cached is not False:
        return cast(Membership | None, cached)
    memberships = Membership.objects.select_related("team", "user").filter(user=request.user)
    team_id = request.session.get(SESSION_TEAM)
    membership = memberships.filter(team_id=team_id).first() if team_id else None
    if membership is None:
        membership = memberships.order_by("created_at", "id").first()
        if membership is not None:
            request.session[SESSION_TEAM] = membership.team_id
    request._current_membership = membership  # type: ignore[attr-defined]
    return membership


def user_memberships(request: HttpRequest) -> list[Membership]:
    if not request.user.is_authenticated:
        return []
    return list(Membership.objects.select_related("team").filter(user=request.user).order_by("team__name"))


def switch_team(request: HttpRequest, team_id: int) -> Membership | None:
    user = cast(Any, request.user)
    membership = Membership.objects.select_related("team").filter(user=user, team_id=team_id).first()
    if membership is not None:
        request.session[SESSION_TEAM] = membership.team_id
        request._current_membership = membership  # type: ignore[attr-defined]
    return membership


def _admit(request: HttpRequest, permission: Permission, write: Permission | None) -> HttpResponse | None:
    """None when the request may go on (``request.team``/``.membership`` set), else the response."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    membership = current_membership(request)
    if membership is None:
        return redirect("team-new")  # in no team (removed from the last one): make one
    needed = permission if request.method in SAFE_METHODS else (write or permission)
    if not membership.allows(needed):
        raise PermissionDenied(f"Your role ({membership.role}) may not do this.")
    request.team = membership.team  # type: ignore[attr-defined]
    request.membership = membership  # type: ignore[attr-defined]
    return None


V = TypeVar("V", bound=Callable[..., HttpResponse])


def team_view(permission: Permission = Permission.READ, *, write: Permission | None = None) -> Callable[[V], V]:
    """Decorate a dashboard view: signed in, in a team, and the role allows ``permission`` (for
    GET/HEAD) or ``write`` (for other methods; default ``permission``)."""

    def decorate(view: V) -> V:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            refused = _admit(request, permission, write)
            return refused if refused is not None else view(request, *args, **kwargs)

        return cast(V, wrapper)

    return decorate


class TeamViewMixin:
    """`team_view` for class-based views: set ``permission`` and, for POST and others, ``write_permission``."""

    permission: Permission = Permission.READ
    write_permission: Permission | None = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refused = _admit(request, self.permission, self.write_permission)
        if refused is not None:
            return refused
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
