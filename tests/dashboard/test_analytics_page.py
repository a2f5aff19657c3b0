"""/analytics: the selector's figures for the member's team, the feed's filters with errors next
to their fields, and every chart bar and breakdown row linking to the traces behind it."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from analytics.selectors import analytics_for_team, parse_query

from ..factories import TraceFactory
from .conftest import ROLES

pytestmark = pytest.mark.django_db
URL = "/analytics"


@pytest.fixture
def calls(team, other_team):
    now = timezone.now().replace(second=30, microsecond=0) - timedelta(hours=2)
    rows = [
        TraceFactory(team=team, timestamp=now, model="gpt-4o", provider="openai", cost=Decimal("0.5"),
                     latency_ms=400, tags=["beta"]),
        TraceFactory(team=team, timestamp=now + timedelta(minutes=1), model="gpt-4o", provider="openai",
                     status="error", cost=Decimal("0.25"), latency_ms=900),
        TraceFactory(team=team, timestamp=now - timedelta(hours=3), model="claude-3-5-haiku", provider="anthropic",
                     cost=Decimal("1.5"), latency_ms=1200, tags=["beta"]),
        TraceFactory(team=other_team, timestamp=now, model="gpt-4o", cost=Decimal("9")),
    ]  # fmt: skip
    return rows


def _hrefs(content: bytes) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', content.decode())]


def _feed_ids(client, href: str) -> set[str]:
    response = client.get(href)
    assert response.status_code == 200, href
    return set(re.findall(r"open trace ([^<]+)</span>", response.content.decode()))


@pytest.mark.parametrize("role", ROLES)
def test_every_member_reads_the_teams_figures(as_role, calls, role):
    response = as_role(role).get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Last 24 hours" in page and "<svg" in page
    assert 'aria-label="Calls: 3, open these traces"' in page  # the other team's call is not counted
    assert "$2.25" in page


def test_an_outsider_sees_only_their_own_team(as_role, calls):
    page = as_role("outsider").get(URL).content.decode()
    assert 'aria-label="Calls: 1, open these traces"' in page
    assert "$9.00" in page and "$2.25" not in page


def test_a_visitor_is_sent_to_log_in(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/login" in response["Location"]


def test_the_page_reads_the_same_selector_as_the_api(as_role, calls, team):
    page = as_role("viewer").get(URL, {"time_range": "7d", "model": "gpt-4o"}).content.decode()
    body = analytics_for_team(
        team_id=team.pk, query=parse_query({"time_range": "7d", "model": "gpt-4o"}, now=None, limit=None)
    )
    assert body["totals"]["count"] == 2
    assert f'aria-label="Calls: {body["totals"]["count"]}, open these traces"' in page
    assert "50%" in page  # error rate: one of the two failed


def test_a_volume_bar_opens_the_traces_of_its_interval_and_outcome(as_role, calls):
    client = as_role("member")
    response = client.get(URL, {"time_range": "24h", "interval": "hour"})
    bars = [h for h in _hrefs(response.content) if h.startswith("/traces?") and "status=error&" in h and "since=" in h]
    assert bars, "a failed-calls segment links to the feed"
    assert all(_feed_ids(client, h) <= {calls[1].trace_id} for h in bars)
    assert any(_feed_ids(client, h) == {calls[1].trace_id} for h in bars)
    query = parse_qs(urlsplit(bars[0]).query)
    assert query["status"] == ["error"]
    assert query["until"][0] > query["since"][0]


def test_every_interval_links_to_its_traces_and_they_add_up(as_role, calls):
    client = as_role("member")
    response = client.get(URL, {"time_range": "24h", "interval": "hour"})
    windows = {h for h in _hrefs(response.content) if h.startswith("/traces?since=")}
    # 24 h widened to whole hours is 25 of them; one link each, and the whole range (the Calls figure)
    assert len(windows) == 25 + 1
    seen = [i for h in sorted(windows) for i in _feed_ids(client, h)]
    assert sorted(seen) == sorted([c.trace_id for c in calls[:3]] * 2)  # each in its hour and in the range


def test_breakdown_rows_open_the_feed_filtered_to_the_group(as_role, calls):
    client = as_role("member")
    hrefs = _hrefs(client.get(URL, {"time_range": "24h"}).content)
    (model,) = [h for h in hrefs if "model=claude-3-5-haiku" in h]
    assert _feed_ids(client, model) == {calls[2].trace_id}
    (tag,) = [h for h in hrefs if "tag=beta" in h]
    assert _feed_ids(client, tag) == {calls[0].trace_id, calls[2].trace_id}
    (provider,) = [h for h in hrefs if "provider=openai" in h and "status" not in h]
    assert _feed_ids(client, provider) == {calls[0].trace_id, calls[1].trace_id}


def test_the_page_filters_keep_to_the_chart_links(as_role, calls):
    client = as_role("member")
    hrefs = [h for h in _hrefs(client.get(URL, {"time_range": "24h", "provider": "openai"}).content) if "/traces?" in h]
    assert hrefs and all("provider=openai" in h for h in hrefs)
    assert "model=claude-3-5-haiku" not in " ".join(hrefs)


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"cost_min": "lots"}, "cost_min", ""),
        ({"time_range": "forever"}, "time_range", ""),
        ({"interval": "week"}, "interval", "minute, hour or day"),
        ({"time_range": "30d", "interval": "minute"}, "interval", "at most 1500 points"),
        ({"since": "2026-01-02T00:00Z", "until": "2026-01-01T00:00Z", "time_range": "custom"}, "since", "earlier"),
    ],
)
def test_bad_filters_are_shown_next_to_their_field(as_role, params, field, message):
    response = as_role("viewer").get(URL, params)
    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="id_{field}_error"' in page
    assert message in page
    assert "Fix the filter above" in page


def test_a_breakdown_the_rollups_cannot_answer_over_the_raw_limit_says_so(as_role, calls, settings):
    settings.TRACERELAY_ANALYTICS_RAW_SCAN_MAX = 1
    page = as_role("viewer").get(URL, {"time_range": "24h", "provider": "openai"}).content.decode()
    section = page[page.index('id="breakdown-tag"') :]
    assert "raw-scan limit" in section[: section.index("</section>")]
    assert 'aria-label="Calls: 2, open these traces"' in page  # the rest of the page still answers


def test_empty_fields_redirect_to_a_clean_url(as_role):
    response = as_role("viewer").get(URL, {"time_range": "7d", "model": "", "interval": ""})
    assert response.status_code == 302
    assert response["Location"] == "/analytics?time_range=7d"


def test_no_traces_says_so(as_role):
    page = as_role("viewer").get(URL).content.decode()
    assert "No traces in this range" in page


def test_the_nav_links_to_it(as_role):
    page = as_role("viewer").get("/traces").content.decode()
    assert 'href="/analytics"' in page


def test_unpriced_calls_are_counted_in_words_and_tiny_costs_keep_their_digits(as_role, team):
    now = timezone.now().replace(second=30, microsecond=0) - timedelta(hours=1)
    rows = [TraceFactory(team=team, timestamp=now, model="mystery", cost=None, unpriced=True) for _ in range(3)]
    rows += [TraceFactory(team=team, timestamp=now, model="gpt-4o-mini", cost=Decimal("0.0000035"), tags=["tiny"])]
    rows += [TraceFactory(team=team, timestamp=now, model="gpt-4o", cost=Decimal("0.25"), tags=["half"])]
    rows += [TraceFactory(team=team, timestamp=now, model="gpt-4o", cost=None, unpriced=True, tags=["half"])]
    page = as_role("viewer").get(URL).content.decode()
    models = page[page.index('id="breakdown-model"') : page.index('id="breakdown-provider"')]
    tags = page[page.index('id="breakdown-tag"') :]
    assert ">3 unpriced</span>" in models  # not "$0 +3"
    assert ">$0.25<br>+1 unpriced</span>" in models
    assert ">$0.0000035</span>" in tags and "$0.<" not in page  # not "$0."
    assert "4 of 6 calls unpriced, not in the sum" in page
    assert "</abbr>" not in models and "$0 " not in page  # not "$0 <abbr>+3</abbr>"


def test_breakdowns_show_whole_model_names_and_all_of_them_on_asking(as_role, team):
    now = timezone.now() - timedelta(hours=1)
    names = [f"claude-3-5-sonnet-2024102{i}-with-a-long-suffix" for i in range(10)]
    for i, name in enumerate(names):
        TraceFactory(team=team, timestamp=now, model=name, provider="anthropic", cost=Decimal(i + 1))
    client = as_role("viewer")
    text = client.get(URL).content.decode()
    models = text[text.index('id="breakdown-model"') : text.index('id="breakdown-provider"')]
    assert models.count('class="key-cell"') == 8  # the top 8 by cost
    assert all(f">{name}</a>" in models for name in names[2:])  # whole names, not cut
    link = re.search(r'<a href="([^"]+)">Show all models</a>', models)
    assert link is not None
    assert "Show all providers" not in text  # one provider: all of it is shown already
    text = client.get(html.unescape(link.group(1)).split("#")[0]).content.decode()
    models = text[text.index('id="breakdown-model"') : text.index('id="breakdown-provider"')]
    assert models.count('class="key-cell"') == 10 and all(f">{name}</a>" in models for name in names)
    assert "All 10 shown" in models and "Show the top 8" in models
    assert client.get(URL, {"show": "colour"}).status_code == 200  # an unknown breakdown: the top 8 of each
