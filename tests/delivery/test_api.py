"""GET /api/v1/deliveries, replay one and replay dead letters: filters, pagination, scopes, problems."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from delivery.models import Delivery, DeliveryStatus
from tests.factories import IntegrationFactory, TraceFactory

from .scripted import make_delivery

pytestmark = pytest.mark.django_db

URL = "/api/v1/deliveries"


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    return body


def test_it_lists_the_teams_deliveries_newest_first(api, team, other_team):
    integration = IntegrationFactory(team=team, name="primary")
    trace = TraceFactory(team=team, trace_id="trc_public_1")
    older = make_delivery(team, "primary", trace=trace, integration=integration)
    newer = make_delivery(team, "backup", trace=trace, fallback_of=older, status=DeliveryStatus.DEAD, attempts=3)
    make_delivery(other_team, "primary")

    response = api.get(URL)

    assert response.status_code == 200
    body = response.json()
    assert [d["id"] for d in body["data"]] == [newer.pk, older.pk]
    assert body["next_cursor"] is None
    first = body["data"][0]
    assert first["trace_id"] == "trc_public_1"
    assert first["destination"] == "backup"
    assert first["status"] == "dead"
    assert first["attempts"] == 3
    assert first["fallback_of"] == older.pk
    assert first["next_attempt_at"] is None  # only pending rows have one
    assert body["data"][1]["integration"] == "primary"
    assert body["data"][1]["next_attempt_at"] is not None
    assert set(first) >= {"last_error", "last_status_code", "delivered_at", "created_at", "rule", "replay_count"}


def test_it_filters_by_status_destination_and_trace(api, team):
    trace = TraceFactory(team=team, trace_id="trc_wanted")
    wanted = make_delivery(team, "langfuse", trace=trace, status=DeliveryStatus.DEAD)
    make_delivery(team, "langfuse", status=DeliveryStatus.DEAD)
    make_delivery(team, "datadog", trace=trace, status=DeliveryStatus.DELIVERED)

    by_all = api.get(URL, {"status": "dead", "destination": "langfuse", "trace": "trc_wanted"}).json()["data"]
    by_trace = api.get(URL, {"trace": "trc_wanted"}).json()["data"]
    by_status = api.get(URL, {"status": "delivered"}).json()["data"]

    assert [d["id"] for d in by_all] == [wanted.pk]
    assert len(by_trace) == 2
    assert [d["destination"] for d in by_status] == ["datadog"]


def test_it_pages_with_a_cursor(api, team):
    rows = [make_delivery(team, "a") for _ in range(5)]

    page1 = api.get(URL, {"limit": 2}).json()
    page2 = api.get(URL, {"limit": 2, "cursor": page1["next_cursor"]}).json()
    page3 = api.get(URL, {"limit": 2, "cursor": page2["next_cursor"]}).json()

    ids = [d["id"] for page in (page1, page2, page3) for d in page["data"]]
    assert ids == [r.pk for r in reversed(rows)]
    assert page3["next_cursor"] is None


@pytest.mark.parametrize(
    "params, field",
    [
        ({"status": "exploded"}, "status"),
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"cursor": "!!not-a-cursor"}, "cursor"),
        ({"cursor": "ZDphYmM"}, "cursor"),  # "d:abc"
        ({"since": "yesterday"}, "since"),
        ({"until": ""}, "until"),
        ({"since": "2025-01-02T00:00:00Z", "until": "2025-01-01T00:00:00Z"}, "since"),
        ({"stauts": "dead"}, "stauts"),  # a typo must not list everything
        ({"": "0"}, ""),
    ],
)
def test_it_rejects_bad_query_parameters_with_a_problem(api, params, field):
    body = _problem(api.get(URL, params), 400)
    assert field in body["errors"]


def test_it_shows_one_delivery_and_404s_another_teams(api, team, other_team):
    mine = make_delivery(team, "a")
    theirs = make_delivery(other_team, "a")

    assert api.get(f"{URL}/{mine.pk}").json()["id"] == mine.pk
    _problem(api.get(f"{URL}/{theirs.pk}"), 404)
    _problem(api.get(f"{URL}/999999999"), 404)


def test_scopes_and_authentication(api, dev_api, ci_api, anon_api, team):
    dead = make_delivery(team, "a", status=DeliveryStatus.DEAD)

    assert dev_api.get(URL).status_code == 200  # development keys read deliveries
    assert _problem(dev_api.post(f"{URL}/{dead.pk}/replay"), 403)["required_scope"] == "deliveries:write"
    _problem(dev_api.post(f"{URL}/replay", {}, format="json"), 403)
    assert _problem(ci_api.get(URL), 403)["required_scope"] == "deliveries:read"
    _problem(anon_api.get(URL), 401)
    assert Delivery.objects.get(pk=dead.pk).status == DeliveryStatus.DEAD


def test_it_replays_a_dead_delivery_once(api, team, monkeypatch, django_capture_on_commit_callbacks):
    from delivery import outbox

    sent: list[list[int]] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: sent.append(list(ids)) or True)
    dead = make_delivery(team, "a", status=DeliveryStatus.DEAD, attempts=8, last_error="HTTP 503: down")

    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}/{dead.pk}/replay")

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending"
    assert body["attempts"] == 0
    assert body["replay_count"] == 1
    assert body["last_error"] == "HTTP 503: down"  # history stays until the next outcome
    assert sent == [[dead.pk]]
    assert AuditEvent.objects.filter(team=team, action="delivery.replay", target=str(dead.pk)).exists()

    with django_capture_on_commit_callbacks(execute=True):
        again = _problem(api.post(f"{URL}/{dead.pk}/replay"), 409)
    assert again["current_status"] == "pending"
    assert sent == [[dead.pk]]


def test_it_replays_a_failed_primary_but_not_a_delivered_one(api, team, monkeypatch):
    from delivery import outbox

    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: True)
    failed = make_delivery(team, "a", status=DeliveryStatus.FAILED)
    delivered = make_delivery(team, "b", status=DeliveryStatus.DELIVERED)

    assert api.post(f"{URL}/{failed.pk}/replay").status_code == 202
    _problem(api.post(f"{URL}/{delivered.pk}/replay"), 409)
    _problem(api.post(f"{URL}/999999999/replay"), 404)


def test_another_team_cannot_replay_my_dead_letters(other_api, team):
    dead = make_delivery(team, "a", status=DeliveryStatus.DEAD)

    _problem(other_api.post(f"{URL}/{dead.pk}/replay"), 404)
    assert other_api.post(f"{URL}/replay", {}, format="json").json() == {"replayed": 0}
    assert Delivery.objects.get(pk=dead.pk).status == DeliveryStatus.DEAD


def test_it_replays_all_dead_letters_with_filters(api, team, monkeypatch, django_capture_on_commit_callbacks):
    from delivery import outbox

    sent: list[int] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: sent.extend(ids) or True)
    old = make_delivery(team, "langfuse", status=DeliveryStatus.DEAD)
    Delivery.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=2))
    recent = make_delivery(team, "langfuse", status=DeliveryStatus.DEAD)
    other_dest = make_delivery(team, "datadog", status=DeliveryStatus.DEAD)
    make_delivery(team, "langfuse", status=DeliveryStatus.FAILED)

    since = (timezone.now() - timedelta(hours=1)).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"{URL}/replay", {"destination": "langfuse", "since": since}, format="json")

    assert response.status_code == 202
    assert response.json() == {"replayed": 1}
    assert sent == [recent.pk]

    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"{URL}/replay", format="json").json() == {"replayed": 2}
    assert sorted(sent) == sorted([recent.pk, old.pk, other_dest.pk])
    assert not Delivery.objects.filter(team=team, status=DeliveryStatus.DEAD).exists()


@pytest.mark.parametrize(
    "body, content_type, status",
    [
        ('{"since": "not a date"}', "application/json", 400),
        ('["a list"]', "application/json", 400),
        ("null", "application/json", 400),
        ('{"destination": 0}', "application/json", 400),
        ("{not json", "application/json", 400),
        ("destination=x", "application/x-www-form-urlencoded", 415),
    ],
)
def test_bulk_replay_rejects_bad_bodies_with_a_problem(api, body, content_type, status):
    _problem(api.generic("POST", f"{URL}/replay", body, content_type=content_type), status)


def test_the_openapi_schema_documents_the_endpoints(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert "/api/v1/deliveries" in paths
    assert "post" in paths["/api/v1/deliveries/{delivery_id}/replay"]
    assert "post" in paths["/api/v1/deliveries/replay"]
    params = {p["name"] for p in paths["/api/v1/deliveries"]["get"]["parameters"]}
    assert {"status", "destination", "trace", "limit", "cursor"} <= params
