"""A report never turns an unknown price into 0: traces sent through the API for a model nobody has a
price for give an empty `cost` and their count in `unpriced` in the CSV, "unpriced" in the PDF (and
"n of m unpriced" beside a partial sum); tiny costs keep their significant digits. A run whose mail
only reached the log says so."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

import pytest
from pypdf import PdfReader

from config.money import usd
from reports import services
from reports.models import ReportRun, RunStatus
from traces.models import Trace

pytestmark = pytest.mark.django_db
UNKNOWN = "mystery-model-9000"
TINY = "gpt-4o-mini"  # one prompt token: $0.00000015


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(services.app, "send_task", lambda name, args, **kw: None)


@pytest.fixture
def sent(api) -> dict[str, Any]:
    traces = [
        {"model": UNKNOWN, "environment": "production", "prompt_tokens": 10, "completion_tokens": 5},
        {"model": UNKNOWN, "environment": "production", "prompt_tokens": 10, "completion_tokens": 5},
        {"model": UNKNOWN, "environment": "development", "prompt_tokens": 10, "completion_tokens": 5},
        {"model": TINY, "environment": "production", "prompt_tokens": 1, "completion_tokens": 0},
        {"model": TINY, "environment": "production", "prompt_tokens": 1, "completion_tokens": 0},
    ]
    r = api.post("/api/v1/traces/batch", {"traces": traces}, format="json")
    assert r.status_code in (200, 201, 207), r.content
    stored = Trace.objects.all()
    assert {t.model for t in stored if t.unpriced} == {UNKNOWN}
    tiny = sum((t.cost for t in stored if t.model == TINY), Decimal(0))
    assert Decimal(0) < tiny < Decimal("0.000001")  # a sum that "0.00" or "$0." would hide
    return {"tiny": tiny}


def run_report(api, **definition: Any) -> tuple[ReportRun, list[dict[str, str]], str]:
    body = {"name": "Spend", "time_range": "24h", "interval": "hour", "formats": ["csv", "pdf"], **definition}
    report = api.post("/api/v1/reports", body, format="json").json()
    run = api.post(f"/api/v1/reports/{report['id']}/run").json()
    services.run_execute(run_id=run["id"], final=True)
    files = f"/api/v1/reports/{report['id']}/runs/{run['id']}"
    assert api.get(files).json()["status"] == "succeeded"
    text = api.get(f"{files}/csv").content.decode("utf-8-sig")
    pdf = PdfReader(io.BytesIO(api.get(f"{files}/pdf").content))
    return (
        ReportRun.objects.get(pk=run["id"]),
        list(csv.DictReader(io.StringIO(text))),
        "\n".join(page.extract_text() for page in pdf.pages),
    )


def test_an_unpriced_model_has_an_empty_cost_and_an_unpriced_count_in_the_csv(api, sent):
    _, rows, _ = run_report(api, group_by="model")
    assert "unpriced" in rows[0] and list(rows[0]).index("unpriced") == list(rows[0]).index("cost") + 1
    unknown = [r for r in rows if r["group"] == UNKNOWN]
    assert sum(int(r["count"]) for r in unknown) == 3 and sum(int(r["unpriced"]) for r in unknown) == 3
    assert all(r["cost"] == "" for r in unknown)  # not "0": nobody knows what they cost
    tiny = [r for r in rows if r["group"] == TINY and r["count"] != "0"]
    assert [(r["cost"], r["unpriced"]) for r in tiny] == [(format(sent["tiny"].normalize(), "f"), "0")]
    # an interval without traces has no price either: empty, with nothing unpriced
    assert all(r["cost"] == "" and r["unpriced"] == "0" for r in rows if r["count"] == "0")


def test_a_partly_priced_row_sums_what_is_known_and_counts_the_rest(api, sent):
    _, rows, _ = run_report(api, group_by="environment")
    tiny = format(sent["tiny"].normalize(), "f")
    production = [r for r in rows if r["group"] == "production" and r["count"] != "0"]
    assert [(r["count"], r["unpriced"], r["cost"]) for r in production] == [("4", "2", tiny)]
    development = [r for r in rows if r["group"] == "development" and r["count"] != "0"]
    assert [(r["count"], r["unpriced"], r["cost"]) for r in development] == [("1", "1", "")]


def test_the_pdf_says_unpriced_and_keeps_small_amounts(api, sent):
    _, _, text = run_report(api, group_by="environment")
    assert "unpriced" in text
    assert "0.00 " not in text.replace("0.00%", "") and "$0.\n" not in text  # no silent zero, no "$0."
    assert usd(sent["tiny"]) == "$0.0000003"
    assert "$0.0000003\n(3 of 5 unpriced)" in text  # the summary's partial sum
    assert "$0.0000003\n(2 of 4 unpriced)" in text  # production, beside its partial sum
    assert "1 unpriced" in text  # development: nothing priced at all
    assert "3 unpriced" in text  # the unknown model in the top models
    assert "3 traces have no known price and are not in the cost figures." in text


def test_a_period_with_no_priced_trace_says_so(api, sent):
    _, rows, text = run_report(api, filters={"model": UNKNOWN})
    assert all(r["cost"] == "" for r in rows) and sum(int(r["unpriced"]) for r in rows) == 3
    assert "No known cost: all 3 traces of this period are unpriced." in text
    assert "$0" not in text and "0.00 " not in text.replace("0.00%", "")


def test_a_run_without_a_mail_server_says_it_was_not_emailed(api, sent, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"  # no EMAIL_URL: the log
    run, _, _ = run_report(api, recipients=["cfo@example.com"])
    assert run.status == RunStatus.SUCCEEDED and run.emailed_to == []
    assert run.not_emailed == "no mail server is configured (EMAIL_URL); written to the log"
    body = api.get(f"/api/v1/reports/{run.report_id}/runs/{run.pk}").json()
    assert body["emailed_to"] == [] and body["not_emailed"] == run.not_emailed


def test_a_mailed_run_links_to_its_report(api, sent, settings, mailoutbox):
    settings.TRACERELAY_PUBLIC_URL = "https://tr.example.com"
    run, _, _ = run_report(api, recipients=["cfo@example.com"])
    assert run.emailed_to == ["cfo@example.com"] and run.not_emailed == ""
    (message,) = mailoutbox
    assert f"The report and its runs: https://tr.example.com/reports/{run.report_id}\n" in message.body
    body = api.get(f"/api/v1/reports/{run.report_id}/runs/{run.pk}").json()
    assert body["emailed_to"] == ["cfo@example.com"] and body["not_emailed"] is None
