"""`deliveries_24h` in the integrations API: the `/integrations` page's counts (same selector), by
status, the window's edges, another team's deliveries never counted, and the list's query count
independent of the number of integrations."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery
from delivery.selectors import RECENT_WINDOW, recent_delivery_counts
from integrations.models import Integration
from tests.factories import IntegrationFactory, TraceFactory

URL = "/api/v1/integrations"
ZERO = {"delivered": 0, "failed": 0, "dead": 0, "pending": 0, "dropped": 0}


def deliver(team, integration, status, *, name=None, created_at: datetime | None = None, resolved=True) -> Delivery:
    """A delivery row of ``team`` for ``integration`` (routed by ``name``, default its name)."""
    row = Delivery.objects.create(
        team=team,
        trace=TraceFactory(team=team),
        destination=name or integration.name,
        integration=integration if resolved else None,
        status=status,
    )
    if created_at is not None:
        Delivery.objects.filter(pk=row.pk).update(created_at=created_at)
    return row


def listed(api) -> dict[str, dict[str, int]]:
    response = api.get(URL)
    assert response.status_code == 200, response.content
    return {row["name"]: row["deliveries_24h"] for row in response.json()["data"]}


def test_counts_by_status_in_the_list_and_the_detail(api, team) -> None:
    hook = IntegrationFactory(team=team, name="orders-hook")
    quiet = IntegrationFactory(team=team, name="quiet")
    for status in ["delivered", "delivered", "failed", "dead", "pending", "sending"]:
        deliver(team, hook, status)
    deliver(team, hook, "pending", resolved=False)  # routed by name, not tried yet
    deliver(team, hook, "dead", name="webhook")  # routed by platform, resolved to it

    expected = {"delivered": 2, "failed": 1, "dead": 2, "pending": 3, "dropped": 0}
    assert listed(api) == {"orders-hook": expected, "quiet": ZERO}
    assert api.get(f"{URL}/{hook.pk}").json()["deliveries_24h"] == expected
    assert api.get(f"{URL}/{quiet.pk}").json()["deliveries_24h"] == ZERO


def test_the_api_shows_the_figures_of_the_integrations_page(api, team, owner) -> None:
    hook = IntegrationFactory(team=team, name="orders-hook")
    other = IntegrationFactory(team=team, name="other-hook")
    for status in ["delivered", "failed", "dead", "pending"]:
        deliver(team, hook, status)
    deliver(team, other, "delivered")
    deliver(team, other, "delivered", created_at=timezone.now() - timedelta(hours=30))
    page = Client()
    page.force_login(owner)

    rows = page.get("/integrations").context["rows"]

    assert {r["integration"].name: r["counts"] for r in rows} == listed(api)
    detail = api.get(f"{URL}/{hook.pk}").json()["deliveries_24h"]
    assert page.get(f"/integrations/{hook.pk}").context["counts"] == detail


def test_another_teams_deliveries_are_never_counted(api, other_api, team, other_team) -> None:
    hook = IntegrationFactory(team=team, name="orders-hook")
    theirs = IntegrationFactory(team=other_team, name="orders-hook")  # the same name in another team
    deliver(team, hook, "delivered")
    deliver(other_team, theirs, "delivered")
    deliver(other_team, theirs, "dead")
    deliver(other_team, theirs, "pending", resolved=False)  # routed by the shared name
    # A row of the other team pointing at our integration (not made by the app): the team decides.
    Delivery.objects.create(team=other_team, trace=TraceFactory(team=other_team), destination="x", integration=hook)

    assert listed(api) == {"orders-hook": {**ZERO, "delivered": 1}}
    assert api.get(f"{URL}/{hook.pk}").json()["deliveries_24h"] == {**ZERO, "delivered": 1}
    assert listed(other_api) == {"orders-hook": {**ZERO, "delivered": 1, "dead": 1, "pending": 1}}
    assert other_api.get(f"{URL}/{hook.pk}").status_code == 404


def test_the_window_is_the_last_24_hours(api, team) -> None:
    hook = IntegrationFactory(team=team, name="orders-hook")
    now = timezone.now()
    deliver(team, hook, "delivered", created_at=now - RECENT_WINDOW + timedelta(minutes=1))
    deliver(team, hook, "dead", created_at=now - RECENT_WINDOW - timedelta(minutes=1))
    deliver(team, hook, "failed", created_at=now - timedelta(days=3))

    assert listed(api) == {"orders-hook": {**ZERO, "delivered": 1}}


def test_the_window_includes_its_start_and_nothing_before(team) -> None:
    hook = IntegrationFactory(team=team, name="orders-hook")
    now = timezone.now()
    start = now - RECENT_WINDOW
    deliver(team, hook, "delivered", created_at=start)
    deliver(team, hook, "dead", created_at=start - timedelta(microseconds=1))
    deliver(team, hook, "failed", created_at=now)

    assert recent_delivery_counts(team.pk, [(hook.pk, hook.name)], now=now)[hook.pk] == {
        **ZERO,
        "delivered": 1,
        "failed": 1,
    }


def test_a_new_or_changed_integration_answers_with_its_counts(api, team) -> None:
    created = api.post(
        URL, {"name": "new-hook", "platform": "webhook", "config": {"url": "http://127.0.0.1:9/h"}}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["deliveries_24h"] == ZERO
    hook_id = created.json()["id"]
    deliver(team, Integration.objects.get(pk=hook_id), "pending", resolved=False)  # routed to it, not tried

    patched = api.patch(f"{URL}/{hook_id}", {"timeout_s": 3}, format="json")

    assert patched.status_code == 200, patched.content
    assert patched.json()["deliveries_24h"] == {**ZERO, "pending": 1}


@pytest.mark.parametrize("integrations", [1, 8])
def test_the_list_costs_the_same_queries_for_any_number_of_integrations(
    api, team, integrations, django_assert_num_queries
) -> None:
    for i in range(integrations):
        hook = IntegrationFactory(team=team, name=f"hook-{i}")
        deliver(team, hook, "delivered")
        deliver(team, hook, "pending", resolved=False)
    api.get(URL)  # the key's principal is cached from here on

    with django_assert_num_queries(2):  # the integrations, and one grouped count for all of them
        response = api.get(URL)

    assert response.status_code == 200
    assert len(response.json()["data"]) == integrations
    assert all(row["deliveries_24h"] == {**ZERO, "delivered": 1, "pending": 1} for row in response.json()["data"])


def test_deliveries_24h_is_in_the_openapi_schema(api) -> None:
    response = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schemas = response.json()["components"]["schemas"]
    out = schemas["IntegrationOut"]
    assert "deliveries_24h" in out["required"]
    ref = out["properties"]["deliveries_24h"]["$ref"].rsplit("/", 1)[1]
    counts = schemas[ref]
    assert set(counts["required"]) == set(counts["properties"]) == {"delivered", "failed", "dead", "pending", "dropped"}
    assert all(p["type"] == "integer" and p["minimum"] == 0 for p in counts["properties"].values())
    assert "24 hours" in counts["description"]
