"""The dashboards API: create/read/list/change/delete, widgets kept as given and in order, every bad
input a 400 problem naming the widget's index and field with nothing stored, scopes and tenants."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from dashboards.models import Dashboard

pytestmark = pytest.mark.django_db
URL = "/api/v1/dashboards"
PROBLEM = "application/problem+json"
COST = {
    "title": "Cost today",
    "metric": "cost",
    "filters": {},
    "group_by": None,
    "interval": None,
    "time_range": "24h",
    "chart": "number",
}
BY_MODEL = {
    "title": "Cost by model",
    "metric": "cost",
    "filters": {"environment": "production", "status": "success"},
    "group_by": "model",
    "interval": "day",
    "time_range": "7d",
    "chart": "line",
}
ERRORS = {
    "title": "Errors per hour",
    "metric": "error_rate",
    "filters": {"provider": "openai", "tag": ["beta", "eu"], "unpriced": False},
    "group_by": None,
    "interval": "hour",
    "time_range": "24h",
    "chart": "bar",
}
BODY = {"name": "Spend", "widgets": [COST, BY_MODEL, ERRORS]}


def create(api, body: dict[str, Any] | None = None) -> dict[str, Any]:
    r = api.post(URL, body or BODY, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_a_dashboard_made_through_the_api_lists_its_widgets(api):
    body = create(api)
    assert body["name"] == "Spend"
    assert body["widgets"] == [COST, BY_MODEL, ERRORS]
    assert api.get(f"{URL}/{body['id']}").json() == body
    listed = api.get(URL).json()["data"]
    assert [d["id"] for d in listed] == [body["id"]]
    assert listed[0]["widgets"] == [COST, BY_MODEL, ERRORS]
    assert AuditEvent.objects.filter(action="dashboard.create", target=f"dashboard:{body['id']}").exists()


def test_optional_widget_fields_get_their_defaults(api):
    body = create(api, {"name": "Minimal", "widgets": [{"title": "Calls", "metric": "count", "chart": "line"}]})
    assert body["widgets"] == [
        {
            "title": "Calls",
            "metric": "count",
            "filters": {},
            "group_by": None,
            "interval": None,
            "time_range": "24h",
            "chart": "line",
        }
    ]
    assert create(api, {"name": "Empty"})["widgets"] == []


def test_patch_reorders_renames_and_keeps_what_it_does_not_name(api):
    body = create(api)
    url = f"{URL}/{body['id']}"
    r = api.patch(url, {"widgets": [ERRORS, COST]}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["widgets"] == [ERRORS, COST]
    assert r.json()["version"] == body["version"] + 1
    r = api.patch(url, {"name": "Renamed"}, format="json")
    assert r.json()["name"] == "Renamed" and r.json()["widgets"] == [ERRORS, COST]
    assert api.get(url).json()["widgets"] == [ERRORS, COST]
    assert AuditEvent.objects.filter(action="dashboard.update", target=f"dashboard:{body['id']}").count() == 2


def test_delete(api):
    body = create(api)
    assert api.delete(f"{URL}/{body['id']}").status_code == 204
    assert api.get(f"{URL}/{body['id']}").status_code == 404
    assert not Dashboard.objects.exists()
    assert AuditEvent.objects.filter(action="dashboard.delete").exists()


def widget(**changes: Any) -> dict[str, Any]:
    out = {**COST, **changes}
    return {k: v for k, v in out.items() if v is not ...}


BAD_WIDGETS = [
    (widget(metric="latency"), "widgets[1].metric"),
    (widget(metric=None), "widgets[1].metric"),
    (widget(chart="pie"), "widgets[1].chart"),
    (widget(chart=...), "widgets[1].chart"),
    (widget(title=...), "widgets[1].title"),
    (widget(title="  "), "widgets[1].title"),
    (widget(title="a\nb"), "widgets[1].title"),
    (widget(title=5), "widgets[1].title"),
    (widget(group_by="colour", chart="bar"), "widgets[1].group_by"),
    (widget(interval="week"), "widgets[1].interval"),
    (widget(time_range="2d"), "widgets[1].time_range"),
    (widget(time_range=""), "widgets[1].time_range"),
    (widget(filters="model=gpt-4o"), "widgets[1].filters"),
    (widget(filters={"colour": "red"}), "widgets[1].filters.colour"),
    (widget(filters={"status": "bogus"}), "widgets[1].filters.status"),
    (widget(filters={"cost_min": "cheap"}), "widgets[1].filters.cost_min"),
    (widget(filters={"cost_min": 2, "cost_max": 1}), "widgets[1].filters.cost_min"),
    (widget(filters={"since": "2026-01-01T00:00:00Z"}), "widgets[1].filters.since"),
    (widget(filters={"time_range": "7d"}), "widgets[1].filters.time_range"),
    (widget(filters={"model": {"a": 1}}), "widgets[1].filters.model"),
    (widget(filters={"model": "a\x00b"}), "widgets[1].filters.model"),
    (widget(interval="minute", time_range="30d"), "widgets[1].interval"),
    (widget(group_by="model"), "widgets[1].group_by"),  # a number shows one figure
    (widget(metric="latency_p99", chart="line"), "widgets[1].metric"),  # not kept per interval
    (widget(metric="ttft_p50", chart="bar"), "widgets[1].metric"),
    (widget(colour="red"), "widgets[1].colour"),
    ("cost", "widgets[1]"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_WIDGETS)
def test_a_bad_widget_is_a_problem_naming_its_index_and_field(api, bad, field):
    r = api.post(URL, {"name": "Board", "widgets": [COST, bad]}, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == PROBLEM
    problem = r.json()
    assert field in problem["errors"], problem
    assert problem["detail"].startswith(f"{field}: ") or field == next(iter(problem["errors"]))
    assert not Dashboard.objects.exists()


def test_a_bad_patch_changes_nothing(api):
    body = create(api)
    url = f"{URL}/{body['id']}"
    r = api.patch(url, {"name": "New", "widgets": [COST, widget(metric="nope")]}, format="json")
    assert r.status_code == 400
    assert "widgets[1].metric" in r.json()["errors"]
    assert api.get(url).json() == body


BAD_BOARDS = [
    ({"widgets": []}, "name"),
    ({"name": ""}, "name"),
    ({"name": "x" * 201}, "name"),
    ({"name": 7}, "name"),
    ({"name": "B", "widgets": {"title": "x"}}, "widgets"),
    ({"name": "B", "widgets": [COST] * 25}, "widgets"),
    ({"name": "B", "owner": "me"}, "owner"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_BOARDS)
def test_a_bad_board_is_a_problem_naming_the_field(api, bad, field):
    r = api.post(URL, bad, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == PROBLEM
    assert field in r.json()["errors"]
    assert not Dashboard.objects.exists()


def test_a_body_that_is_not_an_object(api):
    assert api.post(URL, [BODY], format="json").status_code == 400
    assert api.post(URL, "x", content_type="application/json").status_code == 400
    assert api.post(URL, "name=x", content_type="text/plain").status_code == 415
    assert not Dashboard.objects.exists()


def test_scopes_and_tenants(api, dev_api, ci_api, other_api, anon_api):
    body = create(api)
    url = f"{URL}/{body['id']}"
    assert dev_api.get(url).status_code == 200  # development keys read
    assert dev_api.post(URL, BODY, format="json").status_code == 403
    assert dev_api.patch(url, {"name": "x"}, format="json").status_code == 403
    assert dev_api.delete(url).status_code == 403
    assert ci_api.get(URL).status_code == 403
    assert anon_api.get(URL).status_code == 401
    assert other_api.get(url).status_code == 404
    assert other_api.patch(url, {"name": "x"}, format="json").status_code == 404
    assert other_api.delete(url).status_code == 404
    assert other_api.get(URL).json()["data"] == []
    assert api.get(url).json() == body


def test_the_openapi_document_describes_the_operations(schema):
    paths = schema["paths"]
    assert set(paths[URL]) >= {"get", "post"}
    assert set(paths[URL + "/{dashboard_id}"]) >= {"get", "patch", "delete"}
    fields = {
        "title",
        "metric",
        "filters",
        "group_by",
        "interval",
        "time_range",
        "chart",
        "score",  # (only with a score metric)
    }
    for name in ("WidgetRequest", "WidgetOut"):
        assert set(schema["components"]["schemas"][name]["properties"]) == fields


def test_null_widgets_are_refused_not_taken_for_an_empty_board(api):
    response = api.post("/api/v1/dashboards", {"name": "Spend", "widgets": None}, format="json")
    assert response.status_code == 400, response.content
    assert "widgets" in response.json()["errors"]
