"""Dashboard pages of traces.

`/`: the dashboard's home. A visitor is sent to log in; a team without traces sees how to send the
first one (with this server's own URL); a team with traces goes to the feed (`/traces`): there is
no separate overview page, so nothing is called one.

`POST /start/key` makes a key from that page (`accounts.services.api_key_create`, as the keys page
does) and shows the page again with step 1 ticked and the new key in every snippet: rendered in
this response only, never stored or redirected through the session, so it is shown once.
"""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from accounts import services as account_services
from accounts.access import DashboardRequest, current_membership, team_view
from accounts.forms import ApiKeyForm
from accounts.models import ApiKey
from accounts.roles import Permission
from traces.selectors import traces_for_team

KEY_PLACEHOLDER = "YOUR_TRACERELAY_KEY"


def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect("login")
    if current_membership(request) is None:
        return redirect("team-new")
    return _team_home(cast(DashboardRequest, request))


@team_view()
def _team_home(request: DashboardRequest) -> HttpResponse:
    traces = traces_for_team(request.team.pk)
    if request.htmx.target == "first-trace-wait":
        # The "send your first trace" page polls: nothing to do until one arrives, then the feed. Not a
        # reload: after a key was made there the page is a POST's answer, which a reload would repeat.
        return HttpResponseClientRedirect(reverse("trace-feed")) if traces.exists() else HttpResponse(status=204)
    if traces.exists():
        return redirect("trace-feed")
    return _first_trace_page(request)


def _first_trace_page(request: DashboardRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    new_key = extra.get("new_key")
    active_keys = ApiKey.objects.filter(team=request.team, revoked_at__isnull=True).count()
    context = {
        "base_url": request.build_absolute_uri("/").rstrip("/"),
        "active_keys": active_keys,
        "key_done": bool(new_key or active_keys),  # step 1 is ticked
        "form": ApiKeyForm(),
        "key_text": new_key["raw"] if new_key else KEY_PLACEHOLDER,
        **extra,
    }
    return render(request, "home.html", context, status=status)


@require_POST
@team_view(Permission.MANAGE_KEYS)
def home_key_create(request: DashboardRequest) -> HttpResponse:
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _first_trace_page(request, status=400, form=form)
    key, raw = account_services.api_key_create(
        team=request.team,
        environment=form.cleaned_data["environment"],
        name=form.cleaned_data["name"],
        created_by=request.user,
    )
    return _first_trace_page(request, status=201, new_key={"key": key, "raw": raw})
