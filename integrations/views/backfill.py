"""The integration page's "Backfill" section: start a backfill (delivery.backfill), follow its jobs
(polled with htmx while one runs) and cancel one."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from delivery.backfill import selectors as backfills
from delivery.backfill.services import DEFAULT_PER_SECOND, MAX_PER_SECOND, NotCancellable, backfill_cancel
from delivery.models import BACKFILL_ACTIVE, Backfill
from traces.filters import FilterError, parse_trace_filter

from ..models import Integration
from .lookup import MANAGE, integration_or_404

FORM_FILTERS = ("model", "status", "environment", "tag")
LOCAL_INPUT = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class BackfillForm(forms.Form):
    since = forms.DateTimeField(label="From (UTC)", widget=LOCAL_INPUT)
    until = forms.DateTimeField(label="Until (UTC)", widget=LOCAL_INPUT)
    apply_rules = forms.BooleanField(
        label="Apply today's routing rules", required=False, help_text="Off: every trace matching the filters."
    )
    max_per_second = forms.IntegerField(
        label="Traces per second", min_value=1, max_value=MAX_PER_SECOND, initial=DEFAULT_PER_SECOND
    )
    model = forms.CharField(required=False, max_length=200, help_text="Exact, or a prefix ending in *.")
    status = forms.ChoiceField(
        required=False,
        choices=[("", "any"), ("success", "success"), ("error", "error"), ("rate_limited", "rate limited")],
    )
    environment = forms.CharField(required=False, max_length=64)
    tag = forms.CharField(required=False, max_length=200)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("since", "until"):  # the inputs have no zone: they are UTC, as the label says
            if data.get(name) is not None:
                data[name] = data[name].replace(tzinfo=UTC)
        if data.get("since") and data.get("until") and data["since"] >= data["until"]:
            self.add_error("since", "Must be earlier than until.")
        filters = {k: data[k] for k in FORM_FILTERS if data.get(k)}
        try:
            parse_trace_filter(filters)
        except FilterError as exc:
            self.add_error(exc.param if exc.param in FORM_FILTERS else None, exc.message)
        data["filters"] = filters
        return data


def initial_form() -> BackfillForm:
    now = timezone.now().astimezone(UTC).replace(second=0, microsecond=0, tzinfo=None)
    return BackfillForm(initial={"since": now - timedelta(days=7), "until": now + timedelta(minutes=1)})


def jobs_context(integration: Integration) -> dict[str, Any]:
    jobs = [
        backfills.with_live_counts(j) for j in backfills.backfills_of(integration.team_id, integration.pk, limit=10)
    ]
    rows = [{"job": j, "percent": backfills.progress(j), "active": j.status in BACKFILL_ACTIVE} for j in jobs]
    return {"backfill_jobs": rows, "backfill_polling": any(r["active"] for r in rows)}


@team_view()
def backfill_jobs(request: DashboardRequest, integration_id: int) -> HttpResponse:
    """The jobs table alone, for htmx polling while a job runs; a browser's own visit goes to the page."""
    integration = integration_or_404(request, integration_id)
    if not request.htmx:
        return redirect(f"/integrations/{integration.pk}#backfill")
    context = {"integration": integration, **jobs_context(integration)}
    return render(request, "integrations/_backfills.html", context)


@require_POST
@team_view(MANAGE)
def backfill_stop(request: DashboardRequest, integration_id: int, backfill_id: int) -> HttpResponse:
    integration = integration_or_404(request, integration_id)
    job = Backfill.objects.filter(team_id=request.team.pk, integration=integration, pk=backfill_id).first()
    if job is None:
        raise Http404("No such backfill of this integration.")
    try:
        backfill_cancel(job=job, actor=request_actor(request))
    except NotCancellable as exc:
        messages.error(request, f"Not cancelled: {exc}.")
    else:
        messages.success(request, f"Backfill {job.pk} cancelled.")
    return redirect(f"/integrations/{integration.pk}#backfill")
