"""Carrying a run out: email with both attachments through a real SMTP server on loopback, a
failure recorded and retried, the last failure kept as failed with its error, and failures that
retrying cannot fix failing at once."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from pypdf import PdfReader

from reports import services
from reports.definition import parse_definition
from reports.models import ReportRun, RunStatus

from ..factories import TraceFactory
from ..fakes.smtp import smtp_server, use_smtp

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(team):
    now = timezone.now()
    for m, h in (("gpt-4o", 1), ("gpt-4o", 30), ("claude-sonnet-4", 5)):
        TraceFactory(team=team, model=m, timestamp=now - timedelta(hours=h), cost=Decimal("0.1"))
    definition = parse_definition(
        {
            "name": "Daily spend",
            "group_by": "model",
            "time_range": "3d",
            "interval": "day",
            "formats": ["csv", "pdf"],
            "recipients": ["cfo@example.com", "ops@example.com"],
        }
    )
    return services.report_create(team_id=team.id, definition=definition, actor="test")


def test_a_run_is_emailed_with_both_files(report, settings):
    with smtp_server() as mailbox:
        use_smtp(settings, mailbox)
        run = services.run_request(report=report)
        services.run_execute(run_id=run.pk, final=False)
        message = mailbox.wait_for("cfo@example.com")
    assert "ops@example.com" in message["X-Envelope-To"]
    assert message["Subject"].startswith("[tracerelay] Daily spend: ")
    files = mailbox.attachments(message)
    (csv_name, (csv_type, csv_data)), (pdf_name, (pdf_type, pdf_data)) = sorted(files.items())
    assert csv_name.startswith("daily-spend-") and csv_name.endswith(".csv") and csv_type == "text/csv"
    assert pdf_name.endswith(".pdf") and pdf_type == "application/pdf"
    rows = list(csv.DictReader(io.StringIO(csv_data.decode("utf-8-sig"))))
    assert {r["group"] for r in rows} == {"gpt-4o", "claude-sonnet-4"}
    assert sum(int(r["count"]) for r in rows) == 3
    assert "Daily spend" in PdfReader(io.BytesIO(pdf_data)).pages[0].extract_text()
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.emailed_to == ["cfo@example.com", "ops@example.com"]
    assert bytes(run.csv) == csv_data and bytes(run.pdf) == pdf_data  # kept for download too


def test_a_failure_is_retried_then_kept_as_failed(report, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    run = services.run_request(report=report)
    with pytest.raises(OSError):
        services.run_execute(run_id=run.pk, final=False)
    run.refresh_from_db()
    assert run.status == RunStatus.PENDING and run.attempts == 1 and "refused" in run.error.lower()
    assert services.run_execute(run_id=run.pk, final=True) is not None
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.attempts == 2 and run.error and run.finished_at
    # a later success after a retry clears the error
    with smtp_server() as mailbox:
        use_smtp(settings, mailbox)
        again = services.run_request(report=report)
        with pytest.raises(OSError):
            settings.EMAIL_PORT = 9
            services.run_execute(run_id=again.pk, final=False)
        settings.EMAIL_PORT = mailbox.port
        services.run_execute(run_id=again.pk, final=False)
    again.refresh_from_db()
    assert again.status == RunStatus.SUCCEEDED and again.error == "" and again.attempts == 2


def test_a_question_the_analytics_refuse_fails_at_once(report, settings):
    settings.TRACERELAY_ANALYTICS_RAW_SCAN_MAX = 1
    report.filters = {"cost_min": "0.01"}  # a cost filter counts raw traces: 3 > 1
    report.save()
    run = services.run_request(report=report)
    services.run_execute(run_id=run.pk, final=False)  # no exception: retrying would not help
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "raw-scan limit" in run.error and run.attempts == 1


def test_a_finished_run_is_not_done_twice(report):
    run = services.run_request(report=report)
    report.recipients = []
    report.save()
    services.run_execute(run_id=run.pk, final=False)
    first = ReportRun.objects.get(pk=run.pk)
    services.run_execute(run_id=run.pk, final=False)  # a redelivered task
    assert ReportRun.objects.get(pk=run.pk).attempts == first.attempts == 1


def test_a_broker_failure_marks_the_run_failed(report, monkeypatch, django_capture_on_commit_callbacks):
    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(services.app, "send_task", down)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_request(report=report)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "Could not queue" in run.error
