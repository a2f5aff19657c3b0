"""The Delivery model's move from `routing` to `delivery` keeps the table and every row, both ways."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("routing", "0004_delivery_partial_indexes"), ("delivery", None)]
AFTER = [("routing", "0005_delete_delivery"), ("delivery", "0001_initial")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


@pytest.fixture
def back_to_the_latest():
    """Migrating routing back to 0004 also unapplies every later migration (routing's own and those
    that depend on them): put the whole schema back to the latest, or later tests on this database
    meet missing columns."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_it_moves_the_model_without_touching_the_rows(back_to_the_latest):
    old = _migrate(BEFORE)
    Team = old.get_model("accounts", "Team")
    Trace = old.get_model("traces", "Trace")
    OldDelivery = old.get_model("routing", "Delivery")
    team = Team.objects.create(name="Moved")
    trace = Trace.objects.create(team_id=team.pk, trace_id="trc_moved", model="gpt-4o")
    first = OldDelivery.objects.create(team_id=team.pk, trace_id=trace.pk, destination="langfuse", status="dead")
    OldDelivery.objects.create(
        team_id=team.pk, trace_id=trace.pk, destination="datadog", status="pending", fallback_of_id=first.pk
    )

    new = _migrate(AFTER)
    Delivery = new.get_model("delivery", "Delivery")
    assert Delivery._meta.db_table == "routing_delivery"
    rows = list(Delivery.objects.order_by("pk").values_list("destination", "status", "fallback_of_id"))
    assert rows == [("langfuse", "dead", None), ("datadog", "pending", first.pk)]
    ContentType = new.get_model("contenttypes", "ContentType")
    assert ContentType.objects.filter(app_label="delivery", model="delivery").exists()
    assert not ContentType.objects.filter(app_label="routing", model="delivery").exists()

    back = _migrate(BEFORE)
    assert back.get_model("routing", "Delivery").objects.count() == 2
    assert ContentType.objects.filter(app_label="routing", model="delivery").exists()

    _migrate(AFTER)
    assert new.get_model("delivery", "Delivery").objects.count() == 2
