"""`/reports`: the team's reports, their runs and downloads (every role reads; members run them;
admins and owners create, change and delete). The same definition checks (`parse_definition`),
services and selectors as the API."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission
from config.mail import undelivered_reason

from . import selectors, services
from .api import file_response
from .definition import DefinitionError, parse_definition
from .forms import ReportForm, initial_for
from .models import Report, RunStatus

ACTIVE = (RunStatus.PENDING, RunStatus.RUNNING)


def _report(request: DashboardRequest, report_id: int) -> Report:
    report = selectors.report_for_team(request.team.pk, report_id)
    if report is None:
        raise Http404("No such report in this team.")
    return report


@team_view()
def report_list(request: DashboardRequest) -> HttpResponse:
    reports = list(selectors.reports_for_team(request.team.pk))
    last = selectors.last_runs(request.team.pk)
    rows = [{"report": r, "last_run": last.get(r.pk)} for r in reports]
    return render(request, "reports/list.html", {"rows": rows})


@team_view(Permission.MANAGE_REPORTS)
def report_new(request: DashboardRequest) -> HttpResponse:
    form = ReportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            definition = parse_definition(form.definition_data())
        except DefinitionError as exc:
            form.add_api_errors(exc.errors)
        else:
            report = services.report_create(
                team_id=request.team.pk, definition=definition, actor=request_actor(request), user=request.user
            )
            messages.success(request, f"Report “{report.name}” saved.")
            return redirect("report-detail", report.pk)
    return render(request, "reports/form.html", {"form": form, "report": None}, status=400 if form.errors else 200)


@team_view(Permission.MANAGE_REPORTS)
def report_edit(request: DashboardRequest, report_id: int) -> HttpResponse:
    report = _report(request, report_id)
    form = ReportForm(request.POST or None, initial=initial_for(services.definition_of(report)))
    if request.method == "POST" and form.is_valid():
        try:
            definition = parse_definition(form.definition_data())
        except DefinitionError as exc:
            form.add_api_errors(exc.errors)
        else:
            services.report_update(report=report, definition=definition, actor=request_actor(request))
            messages.success(request, f"Report “{report.name}” saved.")
            return redirect("report-detail", report.pk)
    return render(request, "reports/form.html", {"form": form, "report": report}, status=400 if form.errors else 200)


@team_view()
def report_detail(request: DashboardRequest, report_id: int) -> HttpResponse:
    report = _report(request, report_id)
    runs = selectors.runs_for_report(report)
    context = {
        "report": report,
        "definition": services.definition_of(report),
        "runs": runs,
        "polling": any(run.status in ACTIVE for run in runs),
        "mail_not_delivered": undelivered_reason(),  # said beside the recipients before any run
    }
    if request.htmx and request.htmx.target == "runs":
        return render(request, "reports/detail.html#runs", context)
    return render(request, "reports/detail.html", context)


@require_POST
@team_view(Permission.RUN_REPORTS)
def report_run(request: DashboardRequest, report_id: int) -> HttpResponse:
    report = _report(request, report_id)
    services.run_request(report=report)
    if request.htmx:
        runs = selectors.runs_for_report(report)
        return render(request, "reports/detail.html#runs", {"report": report, "runs": runs, "polling": True})
    messages.success(request, "Run queued: it shows below when it is done.")
    return redirect("report-detail", report.pk)


@require_POST
@team_view(Permission.MANAGE_REPORTS)
def report_delete(request: DashboardRequest, report_id: int) -> HttpResponse:
    report = _report(request, report_id)
    name = report.name
    services.report_delete(report=report, actor=request_actor(request))
    messages.success(request, f"Report “{name}” deleted.")
    return redirect("reports")


@team_view()
def report_download(request: DashboardRequest, report_id: int, run_id: int, fmt: str) -> HttpResponse:
    report = _report(request, report_id)
    run = selectors.run_for_report(report, run_id, with_files=True)
    if run is None or selectors.run_file(run, fmt) is None:
        raise Http404("No such file.")
    return file_response(report, run, fmt)
