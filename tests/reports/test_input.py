"""Bad input to the reports API, each case named after what it was: the findings of the live
schemathesis run (tests/api/test_schema_fuzz.py) and the inputs that fuzz cannot reach (crontab
fields, periods, filters the feed shares, the download's Accept header). The schema must say what
the server does: checked against the generated OpenAPI document."""

from __future__ import annotations

import re
from typing import Any

import pytest

from reports import services
from reports.models import Report

pytestmark = pytest.mark.django_db
URL = "/api/v1/reports"
BODY: dict[str, Any] = {"name": "Weekly", "time_range": "7d", "formats": ["csv", "pdf"]}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(services.app, "send_task", lambda name, args, **kw: None)


def refused(api, body: dict[str, Any], field: str, method: str = "post", url: str = URL) -> dict[str, Any]:
    r = getattr(api, method)(url, body, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == "application/problem+json"
    assert field in r.json()["errors"], r.json()
    return r.json()


def create(api, **changes: Any) -> dict[str, Any]:
    r = api.post(URL, {**BODY, **changes}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


# --- found by the fuzz --------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["schedule", "group_by", "interval", "time_range", "since", "until"])
def test_fuzz_an_empty_string_is_refused_not_read_as_null(api, field, components):
    """Fuzz LcEhpM, b1sDMi: `"schedule": ""` was taken for none, though the schema says a crontab
    string (minLength 1) or null. An empty string is now refused for every field null leaves out."""
    body = refused(api, {**BODY, field: ""}, field)
    assert "null" in body["errors"][field][0]
    assert not Report.objects.exists()
    report = create(api)
    refused(api, {field: ""}, field, "patch", f"{URL}/{report['id']}")
    assert components["ReportInRequest"]["properties"]["schedule"]["nullable"] is True
    assert create(api, name="by hand", schedule=None)["schedule"] is None


def test_fuzz_unknown_fields_are_refused_and_the_schema_closes_the_object(api, components):
    """Fuzz SKM8fA: the schema allowed any extra property, the server refuses them (as it should:
    a misspelt `recipient` must not be dropped silently)."""
    refused(api, {**BODY, "recipient": ["a@example.com"]}, "recipient")
    report = create(api)
    refused(api, {"shedule": "0 8 * * 1"}, "shedule", "patch", f"{URL}/{report['id']}")
    assert Report.objects.get(pk=report["id"]).schedule == ""  # unchanged
    assert components["ReportInRequest"]["additionalProperties"] is False
    assert components["PatchedReportInRequest"]["additionalProperties"] is False


def test_fuzz_a_patch_needs_a_body_and_the_schema_says_so(api, schema):
    """Fuzz KI6Z1I: a PATCH without a body is `empty-body` (as everywhere), but the schema left the
    body optional because every field of a PATCH is."""
    report = create(api)
    r = api.patch(f"{URL}/{report['id']}")
    assert r.status_code == 400 and r.json()["type"].endswith("/empty-body")
    assert api.patch(f"{URL}/{report['id']}", {}, format="json").status_code == 200  # {}: nothing to change
    assert schema["paths"]["/api/v1/reports/{report_id}"]["patch"]["requestBody"]["required"] is True


# --- crontab strings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schedule",
    [
        "60 * * * *",  # minute out of range
        "* 24 * * *",  # hour
        "* * 0 * *",  # day of month
        "* * 32 * *",
        "* * * 0 *",  # month
        "* * * 13 *",
        "* * * * 7",  # day of week (0-6, sun-sat)
        "*/0 * * * *",  # a zero step
        "-1 * * * *",
        "1,,2 * * * *",
        "* * 31 2 *",  # never happens
        "0 8 * * 1 extra",  # six fields
        "0 8 * *",
        "L * * * *",
        "0 8 * * 1#2",  # not celery's grammar
        "\uff10 8 * * 1",  # a fullwidth digit (int() would read it as 0)
        "0 \u0663 * * 1",  # an Arabic-Indic digit
        "0 0 * * " + ",".join(["1"] * 40),  # day of week past its 64-character column: was a 500
        "0 0 * " + ",".join(["1"] * 40) + " *",  # month likewise
        "0 " * 60,  # over 100 characters
        5,
    ],
)
def test_a_bad_crontab_is_refused(api, schedule):
    refused(api, {**BODY, "schedule": schedule}, "schedule")


@pytest.mark.parametrize("schedule", ["*/15 * * * *", "0 8 * * mon-fri", "30 6 1 jan,jul *", "0 0 29 2 *"])
def test_good_crontabs_are_kept_as_given(api, schedule):
    assert create(api, schedule=schedule)["schedule"] == schedule


# --- time_range, fixed periods --------------------------------------------------------------------


@pytest.mark.parametrize("time_range", ["0d", "401d", "58w", "9601h", "1D", "7d ", " 7d", "\u0663d", "1m", "7", 7])
def test_a_bad_time_range_is_refused(api, time_range):
    refused(api, {**BODY, "time_range": time_range}, "time_range")


@pytest.mark.parametrize("time_range", ["1h", "400d", "57w", "9600h"])
def test_time_ranges_up_to_400_days(api, time_range):
    assert create(api, time_range=time_range, interval="day")["time_range"] == time_range


def test_a_fixed_period_at_the_end_of_the_calendar_is_refused(api):
    """Was: saved, then every run failed with "year 10000 is out of range" (its last interval ends in
    year 10000); the same range was a 500 on GET /api/v1/analytics."""
    period = {"time_range": None, "since": "9999-12-30T00:00:00Z", "until": "9999-12-31T23:59:59Z"}
    body = refused(api, {**BODY, **period}, "until")
    assert "9999" in body["errors"]["until"][0]
    r = api.get("/api/v1/analytics", {"since": period["since"], "until": period["until"], "interval": "day"})
    assert r.status_code == 400 and "until" in r.json()["errors"]
    assert create(api, name="ancient", **{**period, "since": "0001-01-01T00:00:00Z", "until": "0001-01-02T00:00:00Z"})


# --- names, recipients, filters --------------------------------------------------------------------


def test_the_name_length_counts_what_was_sent(api):
    """The schema's maxLength 200 is of the string sent: spaces round it count too."""
    refused(api, {**BODY, "name": " " * 199 + "x" + " "}, "name")
    assert create(api, name="  Weekly  ")["name"] == "Weekly"


def test_recipients(api):
    refused(api, {**BODY, "recipients": [" finance@example.com"]}, "recipients")  # not an address as sent
    refused(api, {**BODY, "recipients": [f"r{i}@example.com" for i in range(51)]}, "recipients")
    refused(api, {**BODY, "recipients": [5]}, "recipients")
    assert create(api, name="a", recipients=["a@example.com", "a@example.com"])["recipients"] == ["a@example.com"]
    assert create(api, name="b", recipients=None)["recipients"] == []  # the schema's null: nobody


def test_a_nul_in_a_metadata_filter_name_is_refused(api):
    """Was a 500 (Postgres cannot store or compare U+0000): in a report's filters, and in the trace
    feed and analytics whose filter parser the reports share."""
    refused(api, {**BODY, "filters": {"metadata.a\x00b": "x"}}, "filters.metadata.a\x00b")
    for path in ("/api/v1/traces", "/api/v1/analytics"):
        r = api.get(f"{path}?metadata.a%00b=x")
        assert r.status_code == 400 and "metadata.a\x00b" in r.json()["errors"], path


def test_filter_values_are_the_feeds(api):
    report = create(api, filters={"cost_min": 0.5, "unpriced": False, "status": ["error", "rate_limited"]})
    assert report["filters"] == {"cost_min": "0.5", "unpriced": "false", "status": "error,rate_limited"}
    assert create(api, name="none", filters=None)["filters"] == {}
    refused(api, {**BODY, "filters": {"model": None}}, "filters.model")
    refused(api, {**BODY, "filters": {"model": {"$ne": 1}}}, "filters.model")
    refused(api, {**BODY, "filters": {"cost_min": "lots"}}, "filters.cost_min")
    refused(api, {**BODY, "filters": {"tz": "Europe/Paris"}}, "filters.tz")


# --- downloads ------------------------------------------------------------------------------------


def test_a_download_answers_the_accept_header_for_its_own_type(api, schema):
    """Was: `Accept: text/csv` got a 406 (the API's JSON-only negotiation) and `Accept:
    application/json` got the CSV."""
    report = create(api)
    run = api.post(f"{URL}/{report['id']}/run").json()
    services.run_execute(run_id=run["id"], final=True)
    files = f"{URL}/{report['id']}/runs/{run['id']}"
    for fmt, accept in [
        ("csv", "text/csv"),
        ("csv", "text/*"),
        ("csv", "*/*"),
        ("csv", "application/json, text/csv;q=0.5"),
        ("pdf", "application/pdf"),
    ]:
        r = api.get(f"{files}/{fmt}", HTTP_ACCEPT=accept)
        assert r.status_code == 200 and r["Content-Type"] == services.MIME[fmt], accept
    assert api.get(f"{files}/csv").status_code == 200  # no Accept header at all
    for fmt, accept in [("csv", "application/json"), ("pdf", "text/csv"), ("csv", "text/csv;q=0")]:
        r = api.get(f"{files}/{fmt}", HTTP_ACCEPT=accept)
        assert r.status_code == 406 and r["Content-Type"] == "application/problem+json", accept
        assert services.MIME[fmt] in r.json()["detail"]
    assert "406" in schema["paths"]["/api/v1/reports/{report_id}/runs/{run_id}/{fmt}"]["get"]["responses"]


def test_a_name_on_more_than_one_line_is_refused(api, components):
    """Was taken: every run with recipients then failed at the email (a line break in the subject is
    a header injection Django refuses), retried and left failed."""
    for name in ("Weekly\nBcc: everyone@example.com", "Weekly\r", "Week\x00ly", "Weekly\t"):
        refused(api, {**BODY, "name": name}, "name")
    pattern = re.compile(components["ReportInRequest"]["properties"]["name"]["pattern"])
    assert pattern.match("Spend, 2026 (€)") and not pattern.match("a\nb") and not pattern.match("a\x7f")
