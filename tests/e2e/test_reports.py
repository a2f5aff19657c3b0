"""A scheduled report, for real: beat (django-celery-beat's database scheduler) fires the crontab,
a worker on the reports queue runs it, and the email with the CSV and the PDF arrives at an SMTP
server on loopback."""

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

from ..factories import TeamFactory, TraceFactory
from ..fakes.smtp import smtp_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_scheduled_report_arrives_by_email(start_worker):
    team = TeamFactory(name="scheduled")
    now = timezone.now()
    for h in (1, 2):
        TraceFactory(team=team, model="gpt-4o", timestamp=now - timedelta(hours=h), cost=Decimal("0.2"))
    definition = parse_definition(
        {
            "name": "Every minute",
            "time_range": "24h",
            "group_by": "model",
            "formats": ["csv", "pdf"],
            "recipients": ["team@example.com"],
            "schedule": "* * * * *",
        }
    )
    report = services.report_create(team_id=team.id, definition=definition, actor="test")
    with smtp_server() as mailbox:
        worker = start_worker(queues="reports", EMAIL_URL=f"smtp://127.0.0.1:{mailbox.port}")
        try:  # the next minute's boundary, plus a worker under load
            message = mailbox.wait_for("team@example.com", timeout=150)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{worker.log_tail()}") from None
    files = mailbox.attachments(message)
    assert sorted(name.rsplit(".", 1)[1] for name in files) == ["csv", "pdf"]
    csv_data = next(data for name, (_t, data) in files.items() if name.endswith(".csv"))
    rows = list(csv.DictReader(io.StringIO(csv_data.decode("utf-8-sig"))))
    assert sum(int(r["count"]) for r in rows) == 2 and {r["group"] for r in rows} == {"gpt-4o"}
    pdf_data = next(data for name, (_t, data) in files.items() if name.endswith(".pdf"))
    assert "Every minute" in PdfReader(io.BytesIO(pdf_data)).pages[0].extract_text()
    run = ReportRun.objects.filter(report=report).order_by("created_at").first()
    assert run is not None and run.trigger == "schedule" and run.status == RunStatus.SUCCEEDED
