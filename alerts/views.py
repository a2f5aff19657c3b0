"""`/alerts`: the team's spend alerts, their state and history (every role reads; admins and
owners create, change, turn off and delete). The same checks (`parse_alert`), services and
selectors as the API."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from config.mail import undelivered_reason

from . import selectors, services
from .definition import AlertError, parse_alert
from .forms import AlertForm, initial_for
from .models import Alert
from .wording import describe

NEW_SECRET = "alerts.new_secret"  # session key: the signing secret, shown once after creation


def _alert(request: DashboardRequest, alert_id: int) -> Alert:
    alert = selectors.alert_for_team(request.team.pk, alert_id)
    if alert is None:
        raise Http404("No such alert in this team.")
    return alert


@team_view()
def alert_list(request: DashboardRequest) -> HttpResponse:
    alerts = [(alert, describe(alert)) for alert in selectors.alerts_for_team(request.team.pk)]
    return render(request, "alerts/list.html", {"alerts": alerts})


@team_view(Permission.MANAGE_ALERTS)
def alert_new(request: DashboardRequest) -> HttpResponse:
    form = AlertForm(request.POST or None, initial={"window_type": "calendar", "period": "month", "enabled": True})
    if request.method == "POST" and form.is_valid():
        try:
            alert, secret = services.alert_create(
                team_id=request.team.pk, spec=parse_alert(form.alert_data()), actor=request_actor(request)
            )
        except AlertError as exc:
            form.add_alert_errors(exc.errors)
        except services.NameTaken as exc:
            form.add_error("name", str(exc))
        else:
            request.session[NEW_SECRET] = [alert.pk, secret]
            messages.success(request, f"Alert “{alert.name}” saved.")
            return redirect("alert-detail", alert.pk)
    return render(request, "alerts/form.html", {"form": form, "alert": None}, status=400 if form.errors else 200)


@team_view(Permission.MANAGE_ALERTS)
def alert_edit(request: DashboardRequest, alert_id: int) -> HttpResponse:
    alert = _alert(request, alert_id)
    spec = services.spec_of(alert)
    form = AlertForm(request.POST or None, initial=initial_for(spec), builtin=bool(alert.builtin))
    if request.method == "POST" and form.is_valid():
        try:
            services.alert_update(
                alert=alert, spec=parse_alert(form.alert_data(), base=spec), actor=request_actor(request)
            )
        except AlertError as exc:
            form.add_alert_errors(exc.errors)
        except services.NameTaken as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Alert “{alert.name}” saved.")
            return redirect("alert-detail", alert.pk)
    return render(request, "alerts/form.html", {"form": form, "alert": alert}, status=400 if form.errors else 200)


@team_view()
def alert_detail(request: DashboardRequest, alert_id: int) -> HttpResponse:
    alert = _alert(request, alert_id)
    shown = request.session.pop(NEW_SECRET, None)
    new_secret = shown[1] if shown and shown[0] == alert.pk else None
    return render(
        request,
        "alerts/detail.html",
        {
            "alert": alert,
            "description": describe(alert),
            "mail_not_delivered": undelivered_reason(),
            "data": selectors.alert_json(alert),
            "events": selectors.events_for_alert(alert),
            "new_secret": new_secret,
        },
    )


@require_POST
@team_view(Permission.MANAGE_ALERTS)
def alert_toggle(request: DashboardRequest, alert_id: int) -> HttpResponse:
    alert = _alert(request, alert_id)
    spec = parse_alert({"enabled": not alert.enabled}, base=services.spec_of(alert))
    services.alert_update(alert=alert, spec=spec, actor=request_actor(request))
    messages.success(request, f"Alert “{alert.name}” turned {'on' if alert.enabled else 'off'}.")
    return redirect("alert-detail", alert.pk)


@require_POST
@team_view(Permission.MANAGE_ALERTS)
def alert_delete(request: DashboardRequest, alert_id: int) -> HttpResponse:
    alert = _alert(request, alert_id)
    if alert.builtin:
        messages.error(request, "The built-in alert cannot be deleted: turn it off instead.")
        return redirect("alert-detail", alert.pk)
    name = alert.name
    services.alert_delete(alert=alert, actor=request_actor(request))
    messages.success(request, f"Alert “{name}” deleted.")
    return redirect("alerts")
