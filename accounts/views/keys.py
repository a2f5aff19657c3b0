"""`/settings/api-keys`: create (the raw key shown once), list, revoke. The same services as
`manage.py apikey` and the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from .. import services
from ..access import DashboardRequest, request_actor, team_view
from ..forms import ApiKeyForm
from ..models import ApiKey
from ..roles import Permission


def _page(request: DashboardRequest, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "keys": ApiKey.objects.filter(team=request.team)
        .select_related("created_by")
        .order_by("revoked_at", "-created_at"),
        "form": ApiKeyForm(),
        **extra,
    }
    # htmx posts swap only the keys panel (the form, the new key, the list): "page.html#fragment".
    template = "accounts/api_keys.html#keys-panel" if request.htmx else "accounts/api_keys.html"
    return render(request, template, context, status=status)


@team_view()
def api_keys(request: DashboardRequest) -> HttpResponse:
    return _page(request)


@require_POST
@team_view(Permission.MANAGE_KEYS)
def api_key_create(request: DashboardRequest) -> HttpResponse:
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, form=form)
    key, raw = services.api_key_create(
        team=request.team,
        environment=form.cleaned_data["environment"],
        name=form.cleaned_data["name"],
        created_by=request.user,
    )
    # Rendered in this response, never stored or redirected through the session: it is shown once.
    return _page(request, status=201, new_key={"key": key, "raw": raw})


@require_POST
@team_view(Permission.MANAGE_KEYS)
def api_key_revoke(request: DashboardRequest, key_id: int) -> HttpResponse:
    key = get_object_or_404(ApiKey, pk=key_id, team=request.team)
    services.api_key_revoke(key=key, actor=request_actor(request))
    messages.success(request, f"Key {key.prefix}… revoked. Requests with it are refused from now on.")
    return redirect("settings-api-keys")
