""" "Open in <tool>": each exporter builds the link to a trace in its tool from the integration's stored
config and the ids it sent the trace under; None when the config lacks what the URL needs. The trace
page shows the links of the destinations that received the trace."""

from __future__ import annotations

import pytest

from delivery.models import Delivery
from integrations.exporters import ids
from integrations.exporters.datadog import DatadogExporter
from integrations.exporters.langfuse import LangfuseExporter
from integrations.exporters.langsmith import LangsmithExporter, web_host
from integrations.exporters.phoenix import PhoenixExporter
from integrations.exporters.webhook import WebhookExporter
from integrations.selectors import trace_links

from ..factories import IntegrationFactory, MembershipFactory, TraceFactory

TEAM = 7
OTEL_RUN = ids.otel_trace_id(TEAM, "run-1").hex()
OTEL_SPAN = ids.otel_span_id(TEAM, "span-1").hex()
RUN_UUID = ids.run_uuid(TEAM, "span-1")


def url(cls, config, trace_id="span-1", run_id="run-1"):
    return cls.trace_url(config, team_id=TEAM, trace_id=trace_id, run_id=run_id)


def test_langfuse_links_the_otel_trace_and_span_it_sent():
    got = url(LangfuseExporter, {"host": "https://lf.example.com/", "projectId": "clkp123"})
    assert got == f"https://lf.example.com/project/clkp123/traces/{OTEL_RUN}?observation={OTEL_SPAN}"
    cloud = url(LangfuseExporter, {"projectId": "clkp123"})
    assert cloud is not None and cloud.startswith("https://cloud.langfuse.com/project/clkp123/traces/")
    assert url(LangfuseExporter, {"host": "https://lf.example.com"}) is None  # no project id


def test_langsmith_links_the_run_it_sent_under_its_web_host():
    config = {"tenantId": "t-1", "projectUuid": "0f0e0d0c-0b0a-4908-8706-050403020100"}
    expected = f"https://smith.langchain.com/o/t-1/projects/p/0f0e0d0c-0b0a-4908-8706-050403020100/r/{RUN_UUID}"
    assert url(LangsmithExporter, {**config, "endpoint": "https://api.smith.langchain.com"}) == expected
    assert url(LangsmithExporter, {**config, "endpoint": "https://eu.api.smith.langchain.com"}).startswith(
        "https://eu.smith.langchain.com/o/t-1/"
    )
    assert web_host("https://ls.corp.example/api/v1") == "https://ls.corp.example"
    assert url(LangsmithExporter, {"tenantId": "t-1"}) is None
    assert url(LangsmithExporter, {"projectUuid": config["projectUuid"]}) is None


def test_phoenix_links_the_otel_trace_in_its_project():
    got = url(PhoenixExporter, {"host": "http://phoenix:6006", "projectUrlId": "UHJvamVjdDox"})
    assert got == f"http://phoenix:6006/projects/UHJvamVjdDox/traces/{OTEL_RUN}"
    assert url(PhoenixExporter, {"host": "http://phoenix:6006", "projectName": "default"}) is None


@pytest.mark.parametrize(
    ("site", "app"),
    [
        ("datadoghq.com", "app.datadoghq.com"),
        ("datadoghq.eu", "app.datadoghq.eu"),
        ("us5.datadoghq.com", "us5.datadoghq.com"),
    ],
)
def test_datadog_searches_llm_observability_for_the_trace_id(site, app):
    assert (
        url(DatadogExporter, {"site": site, "mlApp": "chat"}) == f"https://{app}/llm/traces?query=trace_id:{OTEL_RUN}"
    )


def test_a_trace_of_its_own_run_uses_its_own_id():
    alone = url(PhoenixExporter, {"host": "http://p", "projectUrlId": "P1"}, trace_id="solo", run_id="")
    assert alone == f"http://p/projects/P1/traces/{ids.otel_trace_id(TEAM, 'solo').hex()}"


def test_a_webhook_has_no_page():
    assert url(WebhookExporter, {"url": "https://example.com/hook"}) is None


@pytest.mark.django_db
def test_trace_links_reads_the_teams_integrations(team, other_team):
    mine = IntegrationFactory(
        team=team, name="lf", platform="langfuse", config={"host": "https://lf", "projectId": "p1"}
    )
    bare = IntegrationFactory(team=team, name="lf2", platform="langfuse", config={"host": "https://lf"})
    theirs = IntegrationFactory(team=other_team, name="lf", platform="langfuse", config={"projectId": "p9"})
    links = trace_links(team_id=team.pk, trace_id="s", run_id="r", integration_ids=[mine.pk, bare.pk, theirs.pk])
    assert list(links) == [mine.pk]
    assert links[mine.pk][0] == "Langfuse" and links[mine.pk][1].startswith("https://lf/project/p1/traces/")


@pytest.mark.django_db
def test_the_trace_page_shows_open_in_for_delivered_destinations(client, team):
    user = MembershipFactory(team=team, role="viewer").user
    client.force_login(user)
    trace = TraceFactory(team=team, trace_id="trc-links", run_id="run-links")
    dd = IntegrationFactory(team=team, name="dd", platform="datadog", config={"site": "datadoghq.eu", "mlApp": "chat"})
    lf = IntegrationFactory(team=team, name="lf", platform="langfuse", config={"host": "https://lf", "projectId": "p1"})
    hook = IntegrationFactory(team=team, name="hook", platform="webhook", config={"url": "https://example.com/h"})
    Delivery.objects.create(team=team, trace=trace, destination="dd", integration=dd, status="delivered")
    Delivery.objects.create(team=team, trace=trace, destination="lf", integration=lf, status="dead")
    Delivery.objects.create(team=team, trace=trace, destination="hook", integration=hook, status="delivered")
    page = client.get("/traces/trc-links").content.decode()
    otel = ids.otel_trace_id(team.pk, "run-links").hex()
    assert f'href="https://app.datadoghq.eu/llm/traces?query=trace_id:{otel}"' in page
    assert "Open in Datadog" in page
    assert "Open in Langfuse" not in page  # its delivery is dead: Langfuse does not have the trace
    assert page.count("Open in ") == 1
