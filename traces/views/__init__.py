"""Dashboard pages of traces.

`/`: the dashboard's home. A visitor is sent to log in; a team without traces sees how to send the
first one (with this server's own URL); a team with traces goes to the feed (`/traces`): there is
no separate overview page, so nothing is called one.
"""

from __future__ import annotations

from typing import cast

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRefresh

from accounts.access import DashboardRequest, current_membership, team_view
from traces.selectors import traces_for_team


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
        # The "send your first trace" page polls: nothing to do until one arrives, then reload.
        return HttpResponseClientRefresh() if traces.exists() else HttpResponse(status=204)
    if traces.exists():
        return redirect("trace-feed")
    return render(request, "home.html", {"base_url": request.build_absolute_uri("/").rstrip("/")})
