"""/dashboards pages: every role reads the team's boards; members, admins and owners make, rename,
duplicate and delete boards and add, edit, reorder, duplicate and delete widgets; viewers get 403,
outsiders 404; bad input shows next to its field and stores nothing; an edit from a stale page
changes nothing."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from dashboards import services
from dashboards.definition import parse_board
from dashboards.models import Dashboard

from ..factories import TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db

COST = {"title": "Cost today", "metric": "cost", "chart": "number"}
CALLS = {"title": "Calls per hour", "metric": "count", "chart": "line", "interval": "hour"}
BY_MODEL = {"title": "Cost by model", "metric": "cost", "chart": "bar", "group_by": "model", "time_range": "7d"}
FORM = {
    "title": "Errors by provider",
    "metric": "errors",
    "chart": "table",
    "time_range": "24h",
    "interval": "",
    "group_by": "provider",
    "environment": "production",
    "status": ["error", "rate_limited"],
    "other_filters": "cost_min=0.01",
}


@pytest.fixture
def board(team):
    b = parse_board({"name": "Spend", "widgets": [COST, CALLS, BY_MODEL]})
    return services.dashboard_create(team_id=team.pk, board=b, actor="test")


@pytest.fixture
def calls(team, other_team):
    now = timezone.now() - timedelta(minutes=30)
    TraceFactory(team=team, timestamp=now, model="gpt-4o", cost=Decimal("0.5"))
    TraceFactory(team=team, timestamp=now, model="claude-3-5-haiku", provider="anthropic", cost=Decimal("1.25"))
    TraceFactory(team=other_team, timestamp=now, model="gpt-4o", cost=Decimal("9"))


def titles(board: Dashboard) -> list[str]:
    board.refresh_from_db()
    return [w["title"] for w in board.widgets]


@pytest.mark.parametrize("role", ROLES)
def test_every_member_reads_the_boards_and_their_figures(as_role, board, calls, role):
    client = as_role(role)
    listing = client.get("/dashboards").content.decode()
    assert "Spend" in listing
    page = client.get(f"/dashboards/{board.pk}")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'aria-label="Cost today: $1.75, open these traces"' in text  # not the other team's $9
    assert "<svg" in text and "claude-3-5-haiku" in text
    editable = role != "viewer"
    assert ("Add widget" in text) is editable
    assert ("Move down" in text) is editable


def test_the_nav_links_to_it(as_role):
    assert 'href="/dashboards"' in as_role("viewer").get("/dashboards").content.decode()


def test_an_outsider_gets_404(as_role, board):
    client = as_role("outsider")
    assert client.get(f"/dashboards/{board.pk}").status_code == 404
    assert client.post(f"/dashboards/{board.pk}/delete").status_code == 404
    assert f"/dashboards/{board.pk}" not in client.get("/dashboards").content.decode()


def test_a_viewer_may_not_change_anything(as_role, board):
    client = as_role("viewer")
    assert client.post("/dashboards/new", {"name": "Mine"}).status_code == 403
    assert client.get(f"/dashboards/{board.pk}/widgets/new").status_code == 403
    assert client.post(f"/dashboards/{board.pk}/widgets/0/delete", {"version": board.version}).status_code == 403
    assert client.post(f"/dashboards/{board.pk}/delete").status_code == 403
    assert Dashboard.objects.count() == 1 and titles(board) == ["Cost today", "Calls per hour", "Cost by model"]


def test_a_member_makes_a_board_and_adds_a_widget(as_role, team):
    client = as_role("member")
    r = client.post("/dashboards/new", {"name": "Errors"})
    board = Dashboard.objects.get(team=team)
    assert r.status_code == 302 and r["Location"] == f"/dashboards/{board.pk}"
    r = client.post(f"/dashboards/{board.pk}/widgets/new", {**FORM, "version": board.version})
    assert r.status_code == 302, r.content.decode()
    board.refresh_from_db()
    assert board.widgets == [
        {
            "title": "Errors by provider",
            "metric": "errors",
            "filters": {"cost_min": "0.01", "environment": "production", "status": "error,rate_limited"},
            "group_by": "provider",
            "interval": None,
            "time_range": "24h",
            "chart": "table",
        }
    ]
    page = client.get(f"/dashboards/{board.pk}").content.decode()
    assert "Errors by provider" in page


def test_bad_input_shows_next_to_its_field_and_stores_nothing(as_role, board):
    client = as_role("member")
    before = list(board.widgets)
    cases = [
        ({"other_filters": "colour=red"}, "colour: Unknown filter"),
        ({"other_filters": "cost_min=cheap"}, "cost_min: Must be a number."),
        ({"group_by": "", "chart": "line", "metric": "latency_p99"}, "needs a figure kept per interval"),
        ({"chart": "number"}, "A number shows one figure"),
        ({"time_range": "30d", "interval": "minute"}, "interval"),
        ({"title": ""}, "This field is required."),
    ]
    for change, message in cases:
        r = client.post(f"/dashboards/{board.pk}/widgets/new", {**FORM, **change, "version": board.version})
        assert r.status_code == 400, change
        assert message in r.content.decode(), (change, r.content.decode()[:3000])
    assert client.post("/dashboards/new", {"name": ""}).status_code == 400
    board.refresh_from_db()
    assert board.widgets == before and Dashboard.objects.count() == 1


def test_edit_reorder_duplicate_delete_widgets(as_role, board):
    client = as_role("member")
    url = f"/dashboards/{board.pk}/widgets"
    r = client.get(f"{url}/1/edit")
    assert r.status_code == 200 and 'value="Calls per hour"' in r.content.decode()
    client.post(f"{url}/1/edit", {**FORM, "title": "Calls", "chart": "line", "metric": "count", "group_by": "",
                                  "version": board.version})  # fmt: skip
    assert titles(board) == ["Cost today", "Calls", "Cost by model"]
    client.post(f"{url}/2/up", {"version": board.version})
    assert titles(board) == ["Cost today", "Cost by model", "Calls"]
    client.post(f"{url}/0/down", {"version": board.version})
    assert titles(board) == ["Cost by model", "Cost today", "Calls"]
    client.post(f"{url}/1/duplicate", {"version": board.version})
    assert titles(board) == ["Cost by model", "Cost today", "Cost today", "Calls"]
    client.post(f"{url}/0/delete", {"version": board.version})
    assert titles(board) == ["Cost today", "Cost today", "Calls"]
    assert client.post(f"{url}/9/delete", {"version": board.version}).status_code == 404
    assert client.post(f"{url}/0/explode", {"version": board.version}).status_code == 404


def test_an_edit_from_a_stale_page_changes_nothing(as_role, board):
    client = as_role("member")
    stale = board.version
    client.post(f"/dashboards/{board.pk}/widgets/0/delete", {"version": stale})
    assert titles(board) == ["Calls per hour", "Cost by model"]
    r = client.post(f"/dashboards/{board.pk}/widgets/0/delete", {"version": stale}, follow=True)
    assert "Someone changed this board meanwhile" in r.content.decode()
    assert titles(board) == ["Calls per hour", "Cost by model"]
    r = client.post(f"/dashboards/{board.pk}/widgets/new", {**FORM, "version": stale})
    assert r.status_code == 400
    text = r.content.decode()
    assert "Someone changed this board meanwhile" in text and 'value="Errors by provider"' in text  # kept
    assert f'name="version" value="{board.version}"' in text
    assert titles(board) == ["Calls per hour", "Cost by model"]


def test_rename_duplicate_and_delete_a_board(as_role, board, team):
    client = as_role("admin")
    client.post(f"/dashboards/{board.pk}/rename", {"name": "Money", "version": board.version})
    board.refresh_from_db()
    assert board.name == "Money"
    r = client.post(f"/dashboards/{board.pk}/duplicate")
    copy = Dashboard.objects.exclude(pk=board.pk).get(team=team)
    assert r["Location"] == f"/dashboards/{copy.pk}"
    assert copy.name == "Money (copy)" and copy.widgets == board.widgets
    client.post(f"/dashboards/{board.pk}/delete")
    assert list(Dashboard.objects.values_list("name", flat=True)) == ["Money (copy)"]


def test_a_widget_the_analytics_cannot_answer_says_so_in_its_card(as_role, team, calls, settings):
    settings.TRACERELAY_ANALYTICS_RAW_SCAN_MAX = 1
    b = parse_board({"name": "Raw", "widgets": [{**COST, "filters": {"cost_min": 0.1}}, CALLS]})
    board = services.dashboard_create(team_id=team.pk, board=b, actor="test")
    text = as_role("viewer").get(f"/dashboards/{board.pk}").content.decode()
    assert "raw-scan limit" in text
    assert "<svg" in text  # the other widget is still drawn
