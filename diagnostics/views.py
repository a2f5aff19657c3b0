"""`/settings/advanced`: debug mode (every role sees its state; admins and owners switch it) and the
diagnostic bundle download (admins and owners)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from debugmode import selectors as debug_selectors
from debugmode.services import DURATIONS, UnknownDuration, debug_mode_disable, debug_mode_enable, retention_hours

from .bundle import build_bundle

MANAGE = Permission.MANAGE_INTEGRATIONS  # debug mode records what is sent to integrations


def _page(request: DashboardRequest, *, errors: dict[str, list[str]] | None = None, status: int = 200) -> HttpResponse:
    mode = debug_selectors.debug_mode(request.team.pk)
    context: dict[str, Any] = {
        "mode": mode,
        "on": mode.is_on(),
        "minutes_left": debug_selectors.minutes_left(mode),
        "durations": [(key, label) for key, (_, label) in DURATIONS.items()],
        "chosen": request.POST.get("duration", "1h") if errors else "1h",
        "errors": errors or {},
        "record_count": debug_selectors.record_count(request.team.pk),
        "retention_hours": f"{retention_hours():g}",
    }
    return render(request, "diagnostics/advanced.html", context, status=status)


@team_view()
def advanced_settings(request: DashboardRequest) -> HttpResponse:
    return _page(request)


@require_POST
@team_view(MANAGE)
def debug_mode_save(request: DashboardRequest) -> HttpResponse:
    actor = request_actor(request)
    action = request.POST.get("action")
    if action == "off":
        debug_mode_disable(team_id=request.team.pk, actor=actor)
        messages.success(request, "Debug mode is off. Records already made are kept until they expire.")
        return redirect("settings-advanced")
    if action != "on":
        return _page(request, errors={"action": ["Choose to turn debug mode on or off."]}, status=400)
    try:
        debug_mode_enable(team_id=request.team.pk, duration=request.POST.get("duration", ""), actor=actor)
    except UnknownDuration as exc:
        return _page(request, errors={"duration": [str(exc)]}, status=400)
    label = DURATIONS[request.POST["duration"]][1]
    messages.success(
        request,
        f"Debug mode is on for {label}: every trace ingested from now on records its routing steps and "
        "exporter requests. It switches itself off after that.",
    )
    return redirect("settings-advanced")


@require_GET
@team_view(MANAGE)
def diagnostic_bundle(request: DashboardRequest) -> HttpResponse:
    data = build_bundle(team_id=request.team.pk)
    response = HttpResponse(data, content_type="application/zip")
    stamp = f"{timezone.now():%Y%m%dT%H%M%SZ}"
    response["Content-Disposition"] = f'attachment; filename="tracerelay-diagnostics-{stamp}.zip"'
    response["Cache-Control"] = "no-store"
    return response
