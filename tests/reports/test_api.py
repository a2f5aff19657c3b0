"""The reports API: create/read/change/delete, validation errors naming the field, scopes and
tenants, schedules written to django-celery-beat, runs queued and carried out, downloads."""

from __future__ import annotations

import io
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from pypdf import PdfReader

from accounts.models import AuditEvent
from reports import services
from reports.models import Report, ReportRun

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/reports"
BODY = {
    "name": "Weekly cost by model",
    "filters": {"environment": "production"},
    "group_by": "model",
    "interval": "day",
    "time_range": "7d",
    "formats": ["csv", "pdf"],
    "recipients": ["finance@example.com"],
    "schedule": "0 8 * * 1",
}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    """Runs are queued by task name; here the test carries them out (a worker does in tests/e2e)."""
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(services.app, "send_task", lambda name, args, **kw: sent.append((name, args)))
    return sent


def create(api, **changes: Any) -> dict[str, Any]:
    r = api.post(URL, {**BODY, **changes}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_create_read_list(api):
    body = create(api)
    assert {k: body[k] for k in BODY} == BODY
    assert api.get(f"{URL}/{body['id']}").json() == body
    assert [r["id"] for r in api.get(URL).json()["data"]] == [body["id"]]


def test_groups_with_no_traffic_can_be_left_out(api):
    body = create(api)
    assert body["skip_empty_groups"] is False  # as before the option
    r = api.patch(f"{URL}/{body['id']}", {"skip_empty_groups": True}, format="json")
    assert r.status_code == 200 and r.json()["skip_empty_groups"] is True
    assert Report.objects.get(pk=body["id"]).skip_empty_groups is True
    assert api.patch(f"{URL}/{body['id']}", {"name": "Renamed"}, format="json").json()["skip_empty_groups"] is True
    assert create(api, name="Other", skip_empty_groups=None)["skip_empty_groups"] is False


def test_the_schedule_is_a_beat_task(api):
    body = create(api)
    report = Report.objects.get(pk=body["id"])
    task = PeriodicTask.objects.get(pk=report.periodic_task_id)
    assert task.task == "reports.run_scheduled" and task.args == f"[{report.pk}]" and task.queue == "reports"
    c = task.crontab
    assert (c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week) == ("0", "8", "*", "*", "1")
    assert str(c.timezone) == "UTC"
    r = api.patch(f"{URL}/{body['id']}", {"schedule": "30 6 1 * *"}, format="json")
    assert r.status_code == 200 and r.json()["schedule"] == "30 6 1 * *"
    task.refresh_from_db()
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_month) == ("30", "6", "1")
    assert api.patch(f"{URL}/{body['id']}", {"schedule": None}, format="json").json()["schedule"] is None
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_delete_takes_the_schedule_and_runs(api):
    body = create(api)
    report = Report.objects.get(pk=body["id"])
    task_id = report.periodic_task_id
    services.run_request(report=report)
    assert api.delete(f"{URL}/{body['id']}").status_code == 204
    assert not PeriodicTask.objects.filter(pk=task_id).exists()
    assert not ReportRun.objects.filter(report_id=body["id"]).exists()
    assert api.get(f"{URL}/{body['id']}").status_code == 404
    assert AuditEvent.objects.filter(action="report.delete").exists()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": None}, "name"),
        ({"formats": []}, "formats"),
        ({"formats": ["xlsx"]}, "formats"),
        ({"recipients": ["not-an-email"]}, "recipients"),
        ({"recipients": "a@example.com"}, "recipients"),
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "every monday"}, "schedule"),
        ({"schedule": "* * * 13 *"}, "schedule"),
        ({"group_by": "colour"}, "group_by"),
        ({"interval": "week"}, "interval"),
        ({"time_range": "7 days"}, "time_range"),
        ({"time_range": "999d"}, "time_range"),
        ({"filters": {"model": "x", "colour": "red"}}, "filters.colour"),
        ({"filters": {"status": "sideways"}}, "filters.status"),
        ({"filters": {"since": "2026-01-01T00:00:00Z"}}, "filters.since"),
        ({"filters": ["model"]}, "filters"),
        ({"interval": "minute", "time_range": "30d"}, "interval"),
        ({"since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z"}, "time_range"),
        ({"time_range": None, "since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z"}, "schedule"),
        (
            {"time_range": None, "schedule": None, "since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"},
            "since",
        ),
        ({"time_range": None, "schedule": None, "since": "2026-11-02T00:00:00Z"}, "until"),
        ({"time_range": None, "schedule": None, "since": "yesterday", "until": "2026-11-01T00:00:00Z"}, "since"),
        ({"colour": "red"}, "colour"),
        ({"skip_empty_groups": "yes"}, "skip_empty_groups"),
        ({"skip_empty_groups": 1}, "skip_empty_groups"),
    ],
)
def test_bad_definitions_name_the_field(api, changes, field):
    r = api.post(URL, {**BODY, **changes}, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == "application/problem+json"
    assert field in r.json()["errors"], r.json()
    assert not Report.objects.exists()


def test_bad_bodies(api):
    assert api.post(URL, "[1]", content_type="application/json").status_code == 400
    assert api.post(URL, "{", content_type="application/json").json()["type"].endswith("malformed-json")
    assert api.post(URL, "name=x", content_type="text/plain").status_code == 415
    body = create(api)
    r = api.patch(f"{URL}/{body['id']}", {"formats": ["doc"]}, format="json")
    assert r.status_code == 400 and "formats" in r.json()["errors"]
    assert api.get(f"{URL}/{body['id']}").json()["formats"] == ["csv", "pdf"]  # unchanged


def test_patch_switches_between_relative_and_fixed_periods(api):
    body = create(api, schedule=None)
    fixed = {"since": "2026-11-01T00:00:00Z", "until": "2026-11-08T00:00:00Z"}
    r = api.patch(f"{URL}/{body['id']}", fixed, format="json").json()
    assert r["time_range"] is None and r["since"].startswith("2026-11-01")
    r = api.patch(f"{URL}/{body['id']}", {"time_range": "24h"}, format="json").json()
    assert r["time_range"] == "24h" and r["since"] is None and r["until"] is None


def test_scopes_and_tenants(api, dev_api, ci_api, other_api, anon_api):
    body = create(api)
    assert anon_api.get(URL).status_code == 401
    assert dev_api.get(URL).status_code == 200  # development keys read
    assert dev_api.post(URL, BODY, format="json").status_code == 403
    assert dev_api.post(f"{URL}/{body['id']}/run").status_code == 403
    assert ci_api.get(URL).status_code == 403
    assert other_api.get(f"{URL}/{body['id']}").status_code == 404
    assert other_api.get(URL).json()["data"] == []
    assert other_api.post(f"{URL}/{body['id']}/run").status_code == 404


def test_run_now_then_download(api, team, no_broker, django_capture_on_commit_callbacks):
    now = timezone.now()
    TraceFactory(
        team=team, model="gpt-4o", environment="production", timestamp=now - timedelta(hours=2), cost=Decimal("0.25")
    )
    TraceFactory(
        team=team, model="gpt-4o", environment="production", timestamp=now - timedelta(days=2), cost=Decimal("0.5")
    )
    TraceFactory(
        team=team, model="gpt-4o", environment="development", timestamp=now - timedelta(hours=1), cost=Decimal("9")
    )
    body = create(api, recipients=[])
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"{URL}/{body['id']}/run")
    assert r.status_code == 202
    run = r.json()
    assert run["status"] == "pending" and run["files"] == {"csv": None, "pdf": None}
    assert no_broker == [("reports.run", [run["id"]])]
    files = f"{URL}/{body['id']}/runs/{run['id']}"
    assert api.get(f"{files}/csv").status_code == 409  # not ready

    services.run_execute(run_id=run["id"], final=True)

    done = api.get(files).json()
    assert done["status"] == "succeeded" and done["attempts"] == 1 and done["error"] is None
    assert done["files"]["csv"].endswith(f"{files}/csv") and done["files"]["pdf"].startswith("http")
    csv_response = api.get(f"{files}/csv")
    assert csv_response["Content-Type"] == "text/csv"
    assert "attachment; filename=" in csv_response["Content-Disposition"]
    text = csv_response.content.decode()
    assert text.count("gpt-4o") == 8  # 7 days widened to 8 whole days, one group
    assert ",0.25," in text and ",0.5," in text and ",9," not in text  # development filtered out
    pdf = api.get(f"{files}/pdf")
    assert pdf["Content-Type"] == "application/pdf"
    assert "Weekly cost by model" in PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()
    assert [x["id"] for x in api.get(f"{URL}/{body['id']}/runs").json()["data"]] == [run["id"]]
    assert api.get(f"{files}/xlsx").status_code == 404
    assert api.get(f"{URL}/{body['id']}/runs/999999").status_code == 404


def test_a_format_not_asked_for_is_404(api):
    body = create(api, formats=["csv"], recipients=[])
    run = api.post(f"{URL}/{body['id']}/run").json()
    assert run["files"] == {"csv": None}
    services.run_execute(run_id=run["id"], final=True)
    assert api.get(f"{URL}/{body['id']}/runs/{run['id']}/pdf").status_code == 404
    assert api.get(f"{URL}/{body['id']}/runs/{run['id']}/csv").status_code == 200


def test_the_schema_documents_every_operation(api):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/reports"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/reports/{report_id}"])
    assert "post" in paths["/api/v1/reports/{report_id}/run"]
    assert "get" in paths["/api/v1/reports/{report_id}/runs/{run_id}/{fmt}"]
