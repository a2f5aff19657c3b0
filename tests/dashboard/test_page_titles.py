"""Every dashboard page has a short plain-text `<title>` (the team settings' once held the escaped
HTML of its whole delete-team section), and the navigation names each page once: `/` is the feed
when a team has traces, so there is no "Overview" beside "Traces"."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver

from alerts import services as alert_services
from alerts.definition import parse_alert
from reports import services as report_services
from reports.definition import parse_definition
from traces.runs.summary import rebuild

from ..factories import IntegrationFactory, RoutingRuleFactory, TraceFactory

pytestmark = pytest.mark.django_db
NOT_PAGES = ("api/", "admin/", "static", "healthz", "readyz", "metrics", "plants")


def _routes(patterns: Any, prefix: str = "") -> Iterator[str]:
    for p in patterns:
        if hasattr(p, "url_patterns"):
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern)


def _title(response: Any) -> str:
    head = response.content.decode().split("</head>", 1)[0]  # (charts have <title>s of their own)
    found = re.findall(r"<title>(.*?)</title>", head, re.S)
    assert len(found) == 1, response.content[:300]
    return found[0]


@pytest.fixture
def values(team) -> dict[str, str]:
    trace = TraceFactory(team=team, trace_id="trc_title", session_id="conv-1", user_id="u-1", run_id="run-title")
    rebuild(team.pk, ["run-title"])  # the run's summary row, which ingest keeps
    report = report_services.report_create(
        team_id=team.id, definition=parse_definition({"name": "Weekly", "time_range": "7d"}), actor="test"
    )
    alert = alert_services.alert_create(
        team_id=team.id,
        spec=parse_alert(
            {"name": "Budget", "metric": "cost", "threshold": 5, "window": {"type": "rolling", "minutes": 60}}
        ),
        actor="test",
    )[0]
    return {
        "trace_id": trace.trace_id,
        "session_id": "conv-1",
        "run_id": "run-title",
        "span_id": trace.trace_id,
        "report_id": str(report.pk),
        "alert_id": str(alert.pk),
        "rule_id": str(RoutingRuleFactory(team=team).pk),
        "integration_id": str(IntegrationFactory(team=team).pk),
        "platform": "webhook",
    }


def test_every_page_has_a_short_plain_title(as_role, values):
    owner, visitor = as_role("owner"), Client()
    checked = []
    for route in _routes(get_resolver().url_patterns):
        if route.startswith(NOT_PAGES) or not route:
            continue
        names = re.findall(r"<(?:\w+:)?(\w+)>", route)
        if any(name not in values for name in names):
            continue  # a token, a delivery or a membership: not a page one browses to
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)
        for client in (owner, visitor):
            response = client.get(path)
            if response.status_code != 200 or "text/html" not in response["Content-Type"]:
                continue  # POST only, a redirect to log in, a download
            title = _title(response)
            text = html.unescape(title)
            assert "<" not in text and "\n" not in text and len(text) <= 90, (path, title)
            assert text.endswith(" · tracerelay"), (path, title)
            checked.append(path)
    assert {"/runs", "/runs/run-title", "/runs/run-title/spans/trc_title"} <= set(checked)
    assert {"/settings/team", "/traces", "/alerts", "/reports", "/login", "/routing", "/analytics"} <= set(checked)
    assert len(set(checked)) >= 25


def test_the_team_settings_title_is_team(as_role):
    assert _title(as_role("owner").get("/settings/team")) == "Team · tracerelay"
    assert "Delete the team" in as_role("owner").get("/settings/team").content.decode()  # still on the page


def test_the_nav_names_the_feed_once(as_role, team):
    client = as_role("viewer")
    page = client.get("/traces").content.decode()
    nav = page[page.index('<nav class="mainnav"') : page.index("</nav>")]
    assert "Overview" not in nav and nav.count('href="/traces"') == 1
    assert "Overview" not in client.get("/").content.decode()  # "Send your first trace" before any trace
    TraceFactory(team=team)
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/traces"  # the same page: one name
