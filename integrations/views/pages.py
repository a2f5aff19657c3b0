"""`/integrations` and `/integrations/<id>`: the team's integrations with their last 24 h of
deliveries; one integration's settings (secrets masked), connection test, enable/disable, delete,
and its dead letters with replay (`delivery.services`, which writes the audit records)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from delivery.backfill.services import backfill_start
from delivery.selectors import dead_letters, integration_delivery, recent_delivery_counts
from delivery.services import NotReplayable, deliveries_replay_dead, delivery_replay

from .. import selectors, services
from ..exporters.base import CheckResult
from ..models import Integration, Platform
from .backfill import BackfillForm, initial_form, jobs_context
from .forms import field_label, pairs_text, platform_fields
from .lookup import MANAGE, integration_or_404
from .settings_view import settings_view

DEAD_SHOWN = 50


def check_view(result: CheckResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "message": result.message,
        "status_code": result.status_code,
        "latency_ms": result.latency_ms,
    }


def settings_rows(integration: Integration) -> list[tuple[str, str]]:
    """The platform fields as the page shows them: secrets as "set, ****abcd" at most."""
    shown = services.public_config(integration)
    stored = set(services.secrets_set(integration))
    rows = []
    for f in platform_fields(integration.platform):
        value = shown.get(f.name)
        if f.secret:
            text = f"set ({value})" if f.name in stored else "not set"
        elif isinstance(value, Mapping):
            text = pairs_text(value, ": ") or "none"
        elif value in (None, ""):
            text = "—"
        else:
            text = str(value)
        rows.append((field_label(f.name), text))
    return rows


@team_view()
def integration_list(request: DashboardRequest) -> HttpResponse:
    integrations = list(selectors.integrations_for_team(request.team.pk))
    counts = recent_delivery_counts(request.team.pk, [(i.pk, i.name) for i in integrations])
    rows = [{"integration": i, "counts": counts[i.pk]} for i in integrations]
    return render(
        request,
        "integrations/list.html",
        {"rows": rows, "platform_labels": dict(Platform.choices)},
    )


def _detail(request: DashboardRequest, integration: Integration, status: int = 200, **extra: Any) -> HttpResponse:
    counts = recent_delivery_counts(request.team.pk, [(integration.pk, integration.name)])[integration.pk]
    dead, dead_total = dead_letters(request.team.pk, integration.pk, integration.name, limit=DEAD_SHOWN)
    context = {
        "integration": integration,
        "platform_label": Platform(integration.platform).label,
        "settings_rows": settings_rows(integration),
        "shaping": settings_view(integration),
        "policy": {**(integration.retry_policy or {})},
        "counts": counts,
        "dead": dead,
        "dead_total": dead_total,
        "replay_all_label": f"Replay all {dead_total}",
        "dead_shown": DEAD_SHOWN,
        "backfill_form": initial_form(),
        **jobs_context(integration),
        **extra,
    }
    template = "integrations/detail.html"
    if request.htmx and "check" in extra:
        template += "#check-result"
    return render(request, template, context, status=status)


@team_view()
def integration_detail(request: DashboardRequest, integration_id: int) -> HttpResponse:
    return _detail(request, integration_or_404(request, integration_id))


@require_POST
@team_view(MANAGE)
def integration_check(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    return _detail(request, integration, check=check_view(services.integration_check(integration=integration)))


@require_POST
@team_view(MANAGE)
def integration_toggle(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    enabled = not integration.enabled
    services.integration_update(integration=integration, changes={"enabled": enabled}, actor=request_actor(request))
    if enabled:
        messages.success(request, f"{integration.name} is enabled: routed traces are delivered to it again.")
    else:
        messages.success(request, f"{integration.name} is disabled: traces routed to it are not delivered.")
    return redirect("integrations-detail", integration.pk)


@require_POST
@team_view(MANAGE)
def integration_delete(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    services.integration_delete(integration=integration, actor=request_actor(request))
    messages.success(request, f"{integration.name} was deleted. Rules that name it no longer deliver there.")
    return redirect("integrations-page")


@require_POST
@team_view(Permission.REPLAY_DELIVERIES)
def dead_letter_replay(request: DashboardRequest, integration_id: int, delivery_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    delivery = integration_delivery(request.team.pk, integration.pk, integration.name, delivery_id)
    if delivery is None:
        raise Http404("No such delivery of this integration.")
    try:
        delivery_replay(delivery=delivery, actor=request_actor(request))
    except NotReplayable as exc:
        messages.error(request, f"Not replayed: {exc}.")
    else:
        messages.success(request, f"Delivery {delivery.pk} is queued again: it is sent within seconds.")
    return redirect("integrations-detail", integration.pk)


@require_POST
@team_view(Permission.REPLAY_DELIVERIES)
def dead_letters_replay_all(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    count = deliveries_replay_dead(
        team_id=request.team.pk, actor=request_actor(request), integration=(integration.pk, integration.name)
    )
    if count:
        messages.success(request, f"{count} dead letter{'s' if count != 1 else ''} queued again.")
    else:
        messages.info(request, "There were no dead letters to replay.")
    return redirect("integrations-detail", integration.pk)


@require_POST
@team_view(MANAGE)
def backfill_new(request: DashboardRequest, integration_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    form = BackfillForm(request.POST)
    if not form.is_valid():
        return _detail(request, integration, status=400, backfill_form=form)
    data = form.cleaned_data
    backfill_start(
        integration=integration,
        since=data["since"],
        until=data["until"],
        filters=data["filters"],
        apply_rules=data["apply_rules"],
        max_per_second=data["max_per_second"],
        actor=request_actor(request),
    )
    messages.success(request, f"Backfill to {integration.name} started: it runs in the background.")
    return redirect(f"/integrations/{integration.pk}#backfill")
