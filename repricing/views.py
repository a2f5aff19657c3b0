"""`/settings/prices/reprice`: ask for a re-pricing job and follow the team's recent ones (every
role reads; admins and owners start one, as they manage integrations: a job may send traces again).
The same checks (`parse_job`) and services as the API; the list polls (htmx) while a job runs."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from . import selectors, services
from .definition import JobError, parse_job
from .forms import RepriceForm

POLL = "2s"


def _jobs(request: DashboardRequest) -> dict[str, Any]:
    jobs = list(selectors.recent_jobs(request.team.pk))
    return {"jobs": jobs, "polling": any(job.is_open for job in jobs), "poll": POLL}


@team_view(Permission.READ, write=Permission.MANAGE_PRICES)
def reprice_page(request: DashboardRequest) -> HttpResponse:
    if request.htmx and request.method == "GET":
        return render(request, "repricing/page.html#jobs", _jobs(request))
    form = RepriceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            spec = parse_job(form.job_data(), now=timezone.now())
        except JobError as exc:
            form.add_job_errors(exc.errors)
        else:
            job = services.job_create(team_id=request.team.pk, spec=spec, actor=request_actor(request))
            messages.success(request, f"Re-pricing job {job.pk} queued.")
            return redirect("settings-reprice")
    status = 400 if form.errors else 200
    return render(request, "repricing/page.html", {"form": form, **_jobs(request)}, status=status)
