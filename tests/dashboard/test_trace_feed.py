"""/traces: the live feed. Every role reads it; an outsider sees none of the team's traces; filters
are the API's and live in the URL; the poll returns only rows newer than the newest shown."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from traces.selectors import encode_cursor

from ..factories import TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db


def _ids(response) -> list[str]:
    """The trace ids of the rows in the page, in order (from the HTML: partials render uncounted)."""
    return re.findall(r"open trace ([^<]+)</span>", response.content.decode())


def _live_url(response) -> str:
    return html.unescape(re.search(r'<tbody id="feed-live"[^>]* hx-get="([^"]+)"', response.content.decode())[1])


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_feed_newest_first(as_role, role, team):
    now = timezone.now()
    old = TraceFactory(team=team, trace_id="old", timestamp=now - timedelta(minutes=5))
    new = TraceFactory(team=team, trace_id="new", timestamp=now, cost=Decimal("0.0123"))
    response = as_role(role).get("/traces")
    assert response.status_code == 200
    assert _ids(response) == [new.trace_id, old.trace_id]
    text = response.content.decode()
    assert "$0.0123" in text and 'hx-trigger="every 2s"' in text


def test_an_outsider_sees_none_of_the_teams_traces(as_role, team):
    TraceFactory(team=team, trace_id="secret-trace")
    response = as_role("outsider").get("/traces")
    assert response.status_code == 200
    assert response.context["rows"] == [] and "secret-trace" not in response.content.decode()


def test_a_visitor_is_sent_to_log_in(client):
    assert client.get("/traces")["Location"].startswith("/login")


def test_an_unpriced_trace_shows_unpriced_never_zero(as_role, team):
    TraceFactory(team=team, cost=None, unpriced=True, usage_estimated=True)
    text = as_role("viewer").get("/traces").content.decode()
    assert "unpriced" in text and "$0" not in text and "est." in text


def test_filters_round_trip_through_the_url(as_role, team):
    TraceFactory(team=team, trace_id="a", model="gpt-4o-mini", status="error", tags=["beta"], metadata={"plan": "pro"})
    TraceFactory(team=team, trace_id="b", model="gpt-4o-mini", status="success", tags=["beta"])
    TraceFactory(team=team, trace_id="c", model="claude-3", status="error")
    client = as_role("member")
    response = client.get("/traces?model=gpt-4*&status=error&tag=beta&metadata.plan=pro&time_range=24h")
    assert _ids(response) == ["a"]
    form = response.context["form"]
    assert form["model"].value() == "gpt-4*" and form["metadata"].value() == "plan=pro"
    # what the form sends back (its own field names, blanks included) is the same filter, in a clean URL
    submitted = client.get(
        "/traces",
        {
            "model": "gpt-4*",
            "status": "error",
            "tag": "beta",
            "metadata": "plan=pro",
            "time_range": "24h",
            "cost_min": "",
        },
    )
    assert submitted.status_code == 302
    assert submitted["Location"] == "/traces?model=gpt-4%2A&status=error&tag=beta&time_range=24h&metadata.plan=pro"
    assert _ids(client.get(submitted["Location"])) == ["a"]


def test_the_unpriced_and_estimated_checkboxes_filter(as_role, team):
    TraceFactory(team=team, trace_id="priced", cost=Decimal("0.01"), unpriced=False)
    TraceFactory(team=team, trace_id="no-price", cost=None, unpriced=True, usage_estimated=True)
    TraceFactory(team=team, trace_id="guessed", cost=Decimal("0.02"), unpriced=False, usage_estimated=True)
    client = as_role("viewer")
    page = client.get("/traces").content.decode()
    assert 'type="checkbox" name="unpriced" value="true"' in page and 'name="usage_estimated" value="true"' in page
    response = client.get("/traces?unpriced=true")
    assert _ids(response) == ["no-price"]
    box = re.compile(r'<input[^>]*name="unpriced"[^>]*>')
    assert "checked" in box.search(response.content.decode())[0] and "checked" not in box.search(page)[0]
    assert _ids(client.get("/traces?usage_estimated=true")) == ["guessed", "no-price"]
    # the form sends only ticked boxes; the clean URL keeps them
    submitted = client.get("/traces", {"unpriced": "true", "model": ""})
    assert submitted["Location"] == "/traces?unpriced=true"


def test_the_htmx_filter_pushes_the_clean_url(as_role, team):
    TraceFactory(team=team, trace_id="x", provider="anthropic")
    response = as_role("viewer").get(
        "/traces", {"provider": "anthropic", "model": ""}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="feed-page"
    )
    assert response.status_code == 200 and response["HX-Push-Url"] == "/traces?provider=anthropic"
    assert b"<html" not in response.content and _ids(response) == ["x"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("cost_min=cheap", "cost_min"),
        ("latency_min=-5", "latency_min"),
        ("status=exploded", "status"),
        ("time_range=2y", "time_range"),
        ("since=yesterday", "since"),
        ("metadata=novalue", "metadata"),
        ("cost_min=5&cost_max=1", "cost_min"),
    ],
)
def test_bad_filter_input_is_a_form_error_not_a_500(as_role, team, query, field):
    TraceFactory(team=team)
    response = as_role("viewer").get(f"/traces?{query}")
    assert response.status_code == 400
    assert response.context["form"].errors[field]
    assert 'class="field-error"' in response.content.decode()


def test_a_broken_cursor_is_a_form_error(as_role, team):
    response = as_role("viewer").get("/traces?cursor=nonsense")
    assert response.status_code == 400 and "stale or broken" in response.content.decode()


def test_infinite_scroll_pages_on_the_cursor(as_role, team):
    now = timezone.now()
    for i in range(55):
        TraceFactory(team=team, trace_id=f"t{i:02}", timestamp=now - timedelta(seconds=i))
    client = as_role("viewer")
    first = client.get("/traces")
    assert len(first.context["rows"]) == 50
    more_url = first.context["more_url"]
    assert 'hx-trigger="revealed"' in first.content.decode()
    more = client.get(more_url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="feed-more")
    assert _ids(more) == [f"t{i:02}" for i in range(50, 55)]
    assert b"<html" not in more.content and b"feed-more" not in more.content  # the end: no loader


def test_the_live_poll_returns_only_newer_rows(as_role, team):
    now = timezone.now()
    shown = TraceFactory(team=team, trace_id="shown", timestamp=now - timedelta(seconds=10))
    TraceFactory(team=team, trace_id="older", timestamp=now - timedelta(seconds=20))
    newer = [TraceFactory(team=team, trace_id=f"n{i}", timestamp=now - timedelta(seconds=5 - i)) for i in range(3)]
    TraceFactory(team=team, trace_id="other-model", model="claude-3", timestamp=now)
    client = as_role("viewer")
    after = encode_cursor(shown)
    response = client.get("/traces/live", {"model": "gpt-4o", "after": after}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert _ids(response) == ["n2", "n1", "n0"]  # newest first, only newer, only matching
    text = response.content.decode()
    assert 'id="feed-live"' in text and "is-new" in text
    # the next poll starts after the newest returned: nothing new
    again = client.get(_live_url(response))
    assert again.status_code == 200, again.content
    assert _ids(again) == []
    assert encode_cursor(newer[2]) in _live_url(again)


def test_the_live_poll_catches_up_on_a_burst_without_gaps(as_role, team, monkeypatch):
    monkeypatch.setattr("traces.views.feed.LIVE_MAX", 2)
    now = timezone.now()
    first = TraceFactory(team=team, trace_id="first", timestamp=now - timedelta(seconds=10))
    for i in range(5):
        TraceFactory(team=team, trace_id=f"b{i}", timestamp=now - timedelta(seconds=5 - i))
    client = as_role("viewer")
    seen, url = [], f"/traces/live?after={encode_cursor(first)}"
    for _ in range(4):
        response = client.get(url)
        seen += reversed(_ids(response))
        url = _live_url(response)
    assert seen == ["b0", "b1", "b2", "b3", "b4"]


def test_paused_the_poll_counts_and_resumed_it_delivers(as_role, team):
    now = timezone.now()
    shown = TraceFactory(team=team, timestamp=now - timedelta(seconds=10))
    client = as_role("viewer")
    after = encode_cursor(shown)
    paused = client.get("/traces/live", {"after": after, "paused": "1"})
    assert "no new traces yet" in paused.content.decode() and "Resume" in paused.content.decode()
    TraceFactory(team=team, trace_id="while-paused-1", timestamp=now)
    TraceFactory(team=team, trace_id="while-paused-2", timestamp=now)
    paused = client.get("/traces/live", {"after": after, "paused": "1"})
    text = paused.content.decode()
    assert _ids(paused) == [] and "2 new traces" in text
    resumed = client.get("/traces/live", {"after": after})
    assert sorted(_ids(resumed)) == ["while-paused-1", "while-paused-2"]


def test_the_live_poll_refuses_a_broken_cursor(as_role, team):
    assert as_role("viewer").get("/traces/live?after=garbage").status_code == 400
    assert as_role("viewer").get("/traces/live").status_code == 400


def test_the_live_poll_of_an_outsider_sees_nothing(as_role, team):
    shown = TraceFactory(team=team, timestamp=timezone.now() - timedelta(seconds=5))
    TraceFactory(team=team)
    response = as_role("outsider").get(f"/traces/live?after={encode_cursor(shown)}")
    assert response.status_code == 200 and _ids(response) == []


def test_an_empty_feed_polls_from_the_start(as_role, team):
    client = as_role("viewer")
    page = client.get("/traces")
    assert page.context["rows"] == [] and "No traces yet" in page.content.decode()
    TraceFactory(team=team, trace_id="first-ever")
    assert _ids(client.get(_live_url(page))) == ["first-ever"]


def test_home_redirects_to_the_feed_once_traces_exist(as_role, team):
    TraceFactory(team=team)
    assert as_role("viewer").get("/")["Location"] == "/traces"


def test_the_nav_shows_traces_sessions_and_users(as_role, team):
    text = as_role("viewer").get("/traces").content.decode()
    assert 'href="/traces" aria-current="page"' in text and 'href="/sessions"' in text and 'href="/users"' in text


def test_a_structural_span_shows_its_kind_and_is_never_called_unpriced(as_role, team):
    now = timezone.now()
    TraceFactory(team=team, trace_id="agent-1", kind="agent", name="planner", model="", cost=None, timestamp=now)
    TraceFactory(team=team, trace_id="call-1", model="house-model", cost=None, unpriced=True, timestamp=now)
    text = as_role("viewer").get("/traces").content.decode()
    row = re.search(r'<tr class="feed-row[^"]*" id="t-[^"]+">(?:(?!</tr>).)*agent-1.*?</tr>', text, re.S)[0]
    assert ">agent</span> planner" in row and "unpriced" not in row
    assert text.count('<span class="muted">unpriced</span>') == 1  # the call's
    # the kind and run filters are the API's, in the URL
    filtered = as_role("viewer").get("/traces", {"kind": "agent", "run_id": "agent-1"})
    assert _ids(filtered) == ["agent-1"]
    assert _ids(as_role("viewer").get("/traces", {"kind": "llm,embedding"})) == ["call-1"]
    bad = as_role("viewer").get("/traces", {"kind": "planner"}).content.decode()
    assert "Unknown kind" in bad
