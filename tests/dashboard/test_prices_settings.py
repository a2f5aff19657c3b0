"""/settings/prices: the list, add/edit/delete with field errors (admins), read-only for other roles,
and the unpriced models of the last 30 days with their call counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AuditEvent
from traces.models import TeamPrice
from traces.prices import services
from traces.prices.selectors import unpriced_models

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db

GOOD = {"model": "acme-7b", "provider": "", "input_per_mtok": "1.5", "output_per_mtok": "2", "effective_from": ""}


def test_an_admin_adds_edits_and_deletes_a_price(as_role, team):
    client = as_role("admin")
    response = client.post("/settings/prices/new", GOOD)
    assert response.status_code == 302
    price = TeamPrice.objects.get(team=team)
    assert (price.model, str(price.input_per_mtok.normalize()), price.effective_from) == ("acme-7b", "1.5", None)
    page = client.get("/settings/prices").content.decode()
    assert "acme-7b" in page and "$1.5" in page and "Price for acme-7b added" in page

    edit = client.get(f"/settings/prices?edit={price.pk}").content.decode()
    assert 'value="1.5"' in edit and "Edit the price for" in edit
    response = client.post(
        f"/settings/prices/{price.pk}/edit", {**GOOD, "reasoning_per_mtok": "4", "effective_from": "2026-11-01T09:30"}
    )
    assert response.status_code == 302
    price.refresh_from_db()
    assert (price.revision, str(price.reasoning_per_mtok.normalize())) == (2, "4")
    assert price.effective_from.isoformat() == "2026-11-01T09:30:00+00:00"

    assert client.post(f"/settings/prices/{price.pk}/delete").status_code == 302
    assert not TeamPrice.objects.exists()
    actions = set(AuditEvent.objects.filter(team=team).values_list("action", flat=True))
    assert {"price.create", "price.update", "price.delete"} <= actions


def test_bad_input_is_shown_next_to_each_field(as_role):
    client = as_role("owner")
    response = client.post(
        "/settings/prices/new", {**GOOD, "model": "a*b", "input_per_mtok": "-2", "output_per_mtok": ""}
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="price-new-model_error"' in body and "A * may only end the name" in body
    assert 'id="price-new-input_per_mtok_error"' in body and "Must be 0 or more." in body
    assert 'id="price-new-output_per_mtok_error"' in body
    assert 'value="a*b"' in body  # what was typed stays
    assert not TeamPrice.objects.exists()


def test_a_bad_edit_keeps_the_price_and_shows_the_error(as_role, team):
    price = services.price_create(team_id=team.pk, data=services.clean_price(GOOD, form=True), actor="t")
    response = as_role("admin").post(f"/settings/prices/{price.pk}/edit", {**GOOD, "effective_from": "soon"})
    assert response.status_code == 400
    assert f'id="price-{price.pk}-effective_from_error"' in response.content.decode()
    price.refresh_from_db()
    assert price.revision == 1


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_other_roles_read_but_may_not_change(as_role, team, role):
    price = services.price_create(team_id=team.pk, data=services.clean_price(GOOD, form=True), actor="t")
    client = as_role(role)
    page = client.get("/settings/prices")
    assert page.status_code == 200 and "acme-7b" in page.content.decode()
    assert "Add a price</h2>" not in page.content.decode()
    assert client.post("/settings/prices/new", GOOD).status_code == 403
    assert client.post(f"/settings/prices/{price.pk}/delete").status_code == 403
    assert TeamPrice.objects.count() == 1


def test_an_outsider_cannot_touch_the_teams_price(as_role, team):
    price = services.price_create(team_id=team.pk, data=services.clean_price(GOOD, form=True), actor="t")
    assert as_role("outsider").post(f"/settings/prices/{price.pk}/delete").status_code == 404
    assert TeamPrice.objects.count() == 1


def test_unpriced_models_of_the_last_30_days_with_counts_and_a_prefilled_link(as_role, team, other_team):
    now = timezone.now()
    for i in range(3):
        TraceFactory(
            team=team, model="acme-7b", provider="vllm", unpriced=True, cost=None, timestamp=now - timedelta(days=i)
        )
    TraceFactory(team=team, model="acme-13b", provider="", unpriced=True, cost=None, timestamp=now)
    TraceFactory(team=team, model="old-model", unpriced=True, cost=None, timestamp=now - timedelta(days=31))
    TraceFactory(team=team, model="gpt-4o", unpriced=False, timestamp=now)
    TraceFactory(team=other_team, model="theirs", unpriced=True, cost=None, timestamp=now)

    found = unpriced_models(team.pk)
    assert [(u.model, u.provider, u.calls) for u in found] == [("acme-7b", "vllm", 3), ("acme-13b", "", 1)]

    client = as_role("admin")
    body = client.get("/settings/prices").content.decode()
    assert "Unpriced models in the last 30 days" in body
    assert 'href="?model=acme-7b&amp;provider=vllm#add-price"' in body
    assert "old-model" not in body and "theirs" not in body
    prefilled = client.get("/settings/prices?model=acme-7b&provider=vllm").content.decode()
    assert 'name="model" value="acme-7b"' in prefilled and 'name="provider" value="vllm"' in prefilled


def test_the_unpriced_query_reads_the_partial_index(team):
    TraceFactory.create_batch(3, team=team, model="acme-7b", unpriced=True, cost=None)
    TraceFactory.create_batch(80, team=team, model="gpt-4o")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_trace")
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: which index is the question
    with CaptureQueriesContext(connection) as queries:
        unpriced_models(team.pk)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + queries[0]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "trace_unpriced" in plan, plan


def test_the_settings_nav_lists_prices(as_role):
    assert 'href="/settings/prices"' in as_role("viewer").get("/settings/team").content.decode()
