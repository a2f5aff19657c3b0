"""The Django admin for rules, rule sets, sampling policies and the outbox."""

from __future__ import annotations

import json

import pytest

from accounts.models import AuditEvent
from delivery.models import Delivery, DeliveryStatus
from routing import selectors
from routing.models import RoutingRule, RuleSet, SamplingPolicy
from routing.router import route
from tests.factories import RoutingRuleFactory, TraceFactory, UserFactory
from traces.records import TraceRecord


@pytest.fixture
def admin_client(client, db):
    user = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.fixture
def delivery(team):
    trace = TraceFactory(team=team, trace_id="trc_admin_1")
    return Delivery.objects.create(
        team=team,
        trace=trace,
        destination="langfuse",
        status=DeliveryStatus.DEAD,
        attempts=8,
        last_error="HTTP 503 from langfuse",
    )


def rule_form(team, **overrides):
    data = {
        "team": team.pk,
        "name": "admin rule",
        "description": "",
        "priority": 5,
        "enabled": "on",
        "condition": "error",
        "conditions": "null",
        "destinations": json.dumps(["langfuse"]),
        "sample_rate": 1.0,
        "tags": "[]",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    "url",
    [
        "/admin/routing/routingrule/",
        "/admin/routing/ruleset/",
        "/admin/routing/samplingpolicy/",
        "/admin/delivery/delivery/",
        "/admin/routing/routingrule/add/",
        "/admin/routing/samplingpolicy/add/",
    ],
)
def test_the_admin_pages_load(admin_client, team, delivery, url):
    RoutingRuleFactory(team=team, name="listed", condition="error")
    RuleSet.objects.create(team=team, version=3)
    SamplingPolicy.objects.create(team=team, default_sample_rate=0.5)
    response = admin_client.get(url)
    assert response.status_code == 200


def test_the_delivery_list_shows_the_outbox_columns_and_filters(admin_client, delivery):
    response = admin_client.get("/admin/delivery/delivery/?status__exact=dead&destination=langfuse")
    content = response.content.decode()
    assert "trc_admin_1" in content and "HTTP 503 from langfuse" in content
    assert admin_client.get("/admin/delivery/delivery/?q=trc_admin_1").content.decode().count("trc_admin_1") >= 1
    assert "trc_admin_1" not in admin_client.get("/admin/delivery/delivery/?q=trc_other").content.decode()


def test_deliveries_cannot_be_edited_in_the_admin(admin_client, delivery):
    response = admin_client.post(f"/admin/delivery/delivery/{delivery.pk}/change/", {"status": "delivered"})
    assert response.status_code == 403
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DEAD


def test_the_replay_action_requeues_dead_deliveries(
    admin_client, delivery, django_capture_on_commit_callbacks, monkeypatch
):
    from delivery import outbox

    monkeypatch.setattr(outbox, "publish", lambda ids, countdown=None: True)
    response = admin_client.post(
        "/admin/delivery/delivery/", {"action": "replay", "_selected_action": [delivery.pk]}, follow=True
    )
    assert "Replayed 1" in response.content.decode()
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 0


def test_a_rule_saved_in_the_admin_is_validated(admin_client, team, integrations):
    response = admin_client.post("/admin/routing/routingrule/add/", rule_form(team, condition="error =="))
    assert response.status_code == 200
    assert "Syntax error at column 9" in response.content.decode()
    response = admin_client.post(
        "/admin/routing/routingrule/add/", rule_form(team, destinations=json.dumps(["nowhere"]))
    )
    assert "Unknown destination" in response.content.decode()
    assert not RoutingRule.objects.exists()


def test_a_rule_saved_in_the_admin_moves_the_version_and_routes_at_once(admin_client, team, integrations):
    before = selectors.compiled_routing(team.id)
    response = admin_client.post("/admin/routing/routingrule/add/", rule_form(team))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert RuleSet.objects.get(team=team).version == 1
    event = AuditEvent.objects.get(action="routing.rule.create")
    assert event.actor == "user:root" and event.target == "admin rule"
    compiled = selectors.compiled_routing(team.id)
    assert compiled is not before
    ctx = TraceRecord(trace_id="t", team_id=team.id, model="m", status="error").condition_context()
    assert route(ctx, compiled).destinations == ["langfuse"]


def test_a_sampling_policy_saved_in_the_admin_is_validated(admin_client, team):
    data = {
        "team": team.pk,
        "default_sample_rate": 0.5,
        "rules": json.dumps([{"condition": "cost >", "sample_rate": 1}]),
    }
    response = admin_client.post("/admin/routing/samplingpolicy/add/", data)
    assert "Syntax error" in response.content.decode()
    data["rules"] = json.dumps([{"condition": "error", "sample_rate": 1}])
    assert admin_client.post("/admin/routing/samplingpolicy/add/", data).status_code == 302
    policy = SamplingPolicy.objects.get(team=team)
    assert policy.version == 1
    assert selectors.compiled_routing(team.id).default_sample_rate == 0.5
