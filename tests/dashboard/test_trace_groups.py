"""/sessions, /users and /sessions/<id>: totals per id in the time range, each opening the feed
filtered to it; a session as a conversation; nothing of another team."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from ..factories import TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls(team):
    now = timezone.now()
    return [
        TraceFactory(
            team=team,
            session_id="s-1",
            user_id="u-1",
            timestamp=now - timedelta(minutes=3),
            total_tokens=10,
            cost=Decimal("0.01"),
            input=[{"role": "user", "content": "What is 2+2?"}],
            output={"role": "assistant", "content": "4"},
        ),
        TraceFactory(
            team=team,
            session_id="s-1",
            user_id="u-1",
            timestamp=now - timedelta(minutes=1),
            total_tokens=20,
            cost=Decimal("0.02"),
            status="error",
            input=[{"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]}],
            output={"choices": [{"message": {"role": "assistant", "content": "6"}}]},
        ),
        TraceFactory(team=team, session_id="s-old", user_id="u-2", timestamp=now - timedelta(days=3)),
    ]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_sessions_of_the_last_day(as_role, role, calls):
    response = as_role(role).get("/sessions")
    assert response.status_code == 200
    [group] = response.context["groups"]
    assert (group["id"], group["calls"], group["tokens"], group["errors"]) == ("s-1", 2, 30, 1)
    assert group["cost"] == Decimal("0.03")
    text = response.content.decode()
    assert "/traces?time_range=24h&amp;session_id=s-1" in text and "/sessions/s-1" in text


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_users(as_role, role, calls):
    response = as_role(role).get("/users?time_range=7d")
    assert [g["id"] for g in response.context["groups"]] == ["u-1", "u-2"]


def test_the_feed_link_filters_to_the_session(as_role, calls):
    response = as_role("viewer").get("/traces?time_range=24h&session_id=s-1")
    assert {t.session_id for t in response.context["rows"]} == {"s-1"} and len(response.context["rows"]) == 2


def test_an_outsider_sees_no_sessions_or_users(as_role, calls):
    client = as_role("outsider")
    assert client.get("/sessions?time_range=7d").context["groups"] == []
    assert client.get("/users?time_range=7d").context["groups"] == []
    response = client.get("/sessions/s-1")
    assert response.status_code == 200 and response.context["turns"] == []


def test_a_bad_time_range_is_a_form_error(as_role, calls):
    response = as_role("viewer").get("/sessions?time_range=forever")
    assert response.status_code == 400 and response.context["form"].errors["time_range"]


@pytest.mark.parametrize("role", ROLES)
def test_a_session_reads_as_a_conversation(as_role, role, calls):
    response = as_role(role).get("/sessions/s-1")
    assert response.status_code == 200
    turns = response.context["turns"]
    assert [(t["prompt"], t["reply"]) for t in turns] == [("What is 2+2?", "4"), ("And 3+3?", "6")]
    assert "/traces?session_id=s-1" in response.content.decode()


def test_the_most_recent_ids_are_found_across_pages(as_role, team, monkeypatch):
    """The newest rows are read in pages on the (timestamp, id) cursor; ties on the timestamp too."""
    import traces.selectors

    monkeypatch.setattr(traces.selectors, "GROUP_PAGES", (2, 3, 4))
    monkeypatch.setattr("traces.views.groups.GROUPS_MAX", 3)
    now = timezone.now()
    for session, minutes in [("s-old", 50), ("s-c", 30), ("s-b", 20), ("s-a", 10)]:
        for _ in range(3):  # three calls each, at the same instant
            TraceFactory(team=team, session_id=session, timestamp=now - timedelta(minutes=minutes))
    response = as_role("viewer").get("/sessions")
    assert [g["session_id"] for g in response.context["groups"]] == ["s-a", "s-b", "s-c"]
    assert [g["calls"] for g in response.context["groups"]] == [3, 3, 3]


def test_the_scan_stops_at_the_last_page(as_role, team, monkeypatch):
    import traces.selectors

    monkeypatch.setattr(traces.selectors, "GROUP_PAGES", (2, 2))
    now = timezone.now()
    for i in range(6):
        TraceFactory(team=team, session_id="same" if i < 5 else "older", timestamp=now - timedelta(minutes=i))
    groups = as_role("viewer").get("/sessions").context["groups"]
    assert [g["session_id"] for g in groups] == ["same"]  # 4 rows read: "older" is past the scan


@pytest.mark.parametrize("path", ["/users", "/sessions"])
def test_users_and_sessions_sort_by_cost_calls_errors_and_last_seen(as_role, team, path):
    now = timezone.now()
    field = "user_id" if path == "/users" else "session_id"
    # a: the most recent, cheap; b: 1,200 tokens' worth of calls, the dearest; c: the most errors.
    spec = {
        "a": [(1, "0.001", "success")],
        "b": [(5, "0.5", "success"), (6, "0.5", "success"), (7, "0.5", "success")],
        "c": [(9, "0.01", "error"), (10, "0.01", "error")],
    }
    for name, rows in spec.items():
        for minutes, cost, status in rows:
            TraceFactory(
                team=team,
                **{field: f"id-{name}"},
                timestamp=now - timedelta(minutes=minutes),
                cost=Decimal(cost),
                status=status,
                total_tokens=1200,
            )
    client = as_role("viewer")

    def order(sort=None):
        text = client.get(path, {"sort": sort} if sort else {}).content.decode()
        return sorted(("id-a", "id-b", "id-c"), key=lambda i: text.index(f"<code>{i}</code>")), text

    assert order()[0] == ["id-a", "id-b", "id-c"]  # last seen, the default
    assert order("last_seen")[0] == ["id-a", "id-b", "id-c"]
    assert order("cost")[0] == ["id-b", "id-c", "id-a"]
    assert order("calls")[0][0] == "id-b"
    assert order("errors")[0][0] == "id-c"
    ranked, text = order("cost")
    assert 'aria-sort="descending"><a class="sort is-sorted" href="?sort=cost">Cost</a>' in text
    assert '<td class="num hide-narrow">3,600</td>' in text  # thousands separators
    assert order("nonsense")[0] == ["id-a", "id-b", "id-c"]  # an unknown column: the default order


def test_a_sessions_counts_have_thousands_separators(as_role, team):
    now = timezone.now()
    for minutes in (1, 2):
        TraceFactory(team=team, session_id="s-big", timestamp=now - timedelta(minutes=minutes), total_tokens=1200)
    text = as_role("viewer").get("/sessions/s-big").content.decode()
    assert "2 calls · 2,400 tokens" in text and "1,200 tokens" in text
