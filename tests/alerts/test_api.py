"""The alerts API: the spec's shapes, validation naming the field, scopes and tenants, the signing
secret shown once, the built-in alert's limits, and the events history."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from alerts import services
from alerts.models import Alert

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/alerts"
BODY = {
    "name": "Monthly budget",
    "metric": "cost",
    "threshold": 500,
    "window": {"type": "calendar", "period": "month"},
    "scope": {"environment": "production", "model": "gpt-4o*"},
    "notify": {"emails": ["oncall@example.com"], "webhooks": [{"url": "https://hooks.example.com/tr"}]},
}


@pytest.fixture(autouse=True)
def no_dns(monkeypatch):
    monkeypatch.setattr("integrations.urlguard.resolve_addresses", lambda host: [])


def create(api, **changes: Any) -> dict[str, Any]:
    r = api.post(URL, {**BODY, **changes}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_create_read_list(api):
    body = create(api)
    for key in ("name", "metric", "window", "scope", "notify"):
        assert body[key] == BODY[key], key
    assert body["threshold"] == 500.0 and body["state"] == "ok" and body["enabled"] is True
    assert body["signing_secret"].startswith("whsec_") and len(body["signing_secret"]) > 20  # once, in full
    again = api.get(f"{URL}/{body['id']}").json()
    assert again["signing_secret"].startswith("****") and again["signing_secret"] != body["signing_secret"]
    assert [a["id"] for a in api.get(URL).json()["data"]] == [body["id"]]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": ""}, "name"),
        ({"metric": "money"}, "metric"),
        ({"metric": "unpriced"}, "metric"),
        ({"threshold": 0}, "threshold"),
        ({"threshold": -5}, "threshold"),
        ({"threshold": "lots"}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"window": {"type": "rolling"}}, "window.minutes"),
        ({"window": {"type": "rolling", "minutes": 0}}, "window.minutes"),
        ({"window": {"type": "rolling", "minutes": 1.5}}, "window.minutes"),
        ({"window": {"type": "calendar", "period": "year"}}, "window.period"),
        ({"window": {"type": "calendar", "period": "day", "minutes": 5}}, "window"),
        ({"window": "hourly"}, "window"),
        ({"scope": {"colour": "red"}}, "scope.colour"),
        ({"scope": {"model": 5}}, "scope.model"),
        ({"notify": {"emails": ["nope"]}}, "notify.emails[0]"),
        ({"notify": {"webhooks": [{"url": "http://169.254.169.254/latest"}]}}, "notify.webhooks[0].url"),
        ({"notify": {"webhooks": [{"url": "ftp://example.com"}]}}, "notify.webhooks[0].url"),
        ({"notify": {"webhooks": ["https://example.com"]}}, "notify.webhooks[0]"),
        ({"notify": {"sms": ["+1"]}}, "notify"),
        ({"enabled": "yes"}, "enabled"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_alerts_name_the_field(api, changes, field):
    r = api.post(URL, {**BODY, **changes}, format="json")
    assert r.status_code == 400, r.content
    assert r["Content-Type"] == "application/problem+json"
    assert field in r.json()["errors"], r.json()
    assert not Alert.objects.exists()


def test_missing_fields_and_bad_bodies(api):
    r = api.post(URL, {"name": "x"}, format="json")
    assert r.status_code == 400 and {"metric", "threshold", "window"} <= set(r.json()["errors"])
    assert api.post(URL, "{", content_type="application/json").json()["type"].endswith("malformed-json")
    assert api.post(URL, "[]", content_type="application/json").status_code == 400
    create(api)
    assert api.post(URL, BODY, format="json").status_code == 409  # the name is taken


def test_patch_changes_what_is_given(api):
    body = create(api)
    r = api.patch(
        f"{URL}/{body['id']}", {"threshold": 750.5, "window": {"type": "rolling", "minutes": 90}}, format="json"
    )
    assert r.status_code == 200
    assert r.json()["threshold"] == 750.5 and r.json()["window"] == {"type": "rolling", "minutes": 90}
    assert r.json()["scope"] == BODY["scope"]
    r = api.patch(f"{URL}/{body['id']}", {"window": {"type": "rolling", "minutes": -1}}, format="json")
    assert r.status_code == 400 and api.get(f"{URL}/{body['id']}").json()["window"]["minutes"] == 90
    assert api.delete(f"{URL}/{body['id']}").status_code == 204
    assert api.get(f"{URL}/{body['id']}").status_code == 404


def test_scopes_and_tenants(api, dev_api, ci_api, other_api, anon_api):
    body = create(api)
    assert anon_api.get(URL).status_code == 401
    assert dev_api.get(URL).status_code == 200
    assert dev_api.post(URL, {**BODY, "name": "other"}, format="json").status_code == 403
    assert ci_api.get(URL).status_code == 403
    assert other_api.get(f"{URL}/{body['id']}").status_code == 404
    assert other_api.get(f"{URL}/{body['id']}/events").status_code == 404
    assert other_api.delete(f"{URL}/{body['id']}").status_code == 404


def test_the_builtin_alert_can_be_turned_off_not_deleted_or_reshaped(api, team):
    services.ensure_builtin_alerts()
    builtin = Alert.objects.get(team=team, builtin="unpriced")
    listed = api.get(URL).json()["data"]
    assert listed[0]["builtin"] == "unpriced" and listed[0]["metric"] == "unpriced"
    assert api.delete(f"{URL}/{builtin.pk}").status_code == 409
    r = api.patch(f"{URL}/{builtin.pk}", {"metric": "cost"}, format="json")
    assert r.status_code == 400 and "metric" in r.json()["errors"]
    r = api.patch(f"{URL}/{builtin.pk}", {"enabled": False, "threshold": 10}, format="json")
    assert r.status_code == 200 and r.json()["enabled"] is False and r.json()["threshold"] == 10.0


def test_events_history(api, team):
    body = create(api, window={"type": "rolling", "minutes": 60}, threshold=1, notify={})
    now = timezone.now()
    TraceFactory(
        team=team,
        cost=Decimal(2),
        model="gpt-4o",
        environment="production",
        timestamp=now - timedelta(minutes=2),
    )
    services.evaluate(body["id"], now)
    services.evaluate(body["id"], now + timedelta(minutes=70))
    events = api.get(f"{URL}/{body['id']}/events").json()["data"]
    assert [e["type"] for e in events] == ["resolved", "fired"]
    assert events[1]["value"] == 2.0 and events[1]["threshold"] == 1.0
    assert set(events[1]["window"]) == {"start", "end"}
