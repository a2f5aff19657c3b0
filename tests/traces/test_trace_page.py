"""`trace_page`: the feed's page query is planned with a higher cpu_index_tuple_cost (see
`selectors.PAGE_INDEX_TUPLE_COST`), and the setting ends with the query, in or out of a transaction."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from traces.filters import TraceFilter
from traces.selectors import trace_page

from ..factories import TraceFactory


def _cost() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW cpu_index_tuple_cost")
        return cursor.fetchone()[0]


def _page_with_its_setting(team) -> list[str]:
    now = timezone.now()
    for i in range(5):
        TraceFactory(team=team, trace_id=f"t{i}", status="error", timestamp=now - timedelta(minutes=i))
    before = _cost()
    with CaptureQueriesContext(connection) as captured:
        rows, cursor = trace_page(team_id=team.pk, trace_filter=TraceFilter(statuses=("error",)), limit=3)
        # the setting is back where it was for whatever the caller does next
        assert _cost() == before == "0.005"
    assert [t.trace_id for t in rows] == ["t0", "t1", "t2"] and cursor is not None
    return [q["sql"] for q in captured.captured_queries]


@pytest.mark.django_db
def test_the_page_is_planned_with_its_setting_inside_a_transaction(team):
    sql = _page_with_its_setting(team)
    setting = sql.index("SET LOCAL cpu_index_tuple_cost = 0.05")
    assert sql[setting + 1].startswith("SELECT") and "ORDER BY" in sql[setting + 1]


@pytest.mark.django_db(transaction=True)
def test_the_page_is_planned_with_its_setting_in_autocommit(team):
    sql = _page_with_its_setting(team)
    assert "SET LOCAL cpu_index_tuple_cost = 0.05" in sql
    assert not connection.in_atomic_block and transaction.get_autocommit()
