"""Scores in the browser: the feed's score filter (a name from the team's scores and a minimum) filters
the rows and lands in the URL as the API's `score.<name>.min`; the analytics page's score chart; the
trace page's "Open in Langfuse". Screenshots at 1280 and 390 px."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from delivery.models import Delivery
from integrations.exporters import ids
from traces.models import Score, ScoreType

from ..factories import IntegrationFactory, MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.OWNER).user


@pytest.fixture
def scored(team):
    now = timezone.now()
    for i in range(10):
        trace = TraceFactory(team=team, trace_id=f"call-{i}", timestamp=now - timedelta(hours=i * 2, minutes=5))
        value = i / 10
        Score.objects.create(team=team, trace=trace, name="helpfulness", value=value, number=value,
                             data_type=ScoreType.NUMERIC)  # fmt: skip
    Score.objects.create(team=team, trace=trace, name="thumbs", value=True, number=1.0, data_type=ScoreType.BOOLEAN)
    langfuse = IntegrationFactory(
        team=team,
        name="langfuse-prod",
        platform="langfuse",
        config={"host": "https://lf.example.com", "projectId": "p1"},
    )
    Delivery.objects.create(team=team, trace_id=trace.pk, destination="langfuse-prod", integration=langfuse,
                            status="delivered")  # fmt: skip
    return trace


def test_the_feed_filters_by_a_score(page, sign_in, shoot, owner_user, scored):
    sign_in(page, owner_user)
    page.goto("/traces")
    page.get_by_text("More filters").click()
    score = page.get_by_role("combobox", name="Score", exact=True)
    expect(score.locator("option")).to_have_text(["Any score", "helpfulness", "thumbs"])
    score.select_option("helpfulness")
    page.get_by_role("textbox", name="Score from").fill("0.75")
    page.get_by_role("button", name="Apply filters").click()
    expect(page).to_have_url(re.compile(r"/traces\?score\.helpfulness\.min=0\.75$"))
    rows = page.get_by_role("link", name=re.compile("open trace call-"))
    expect(rows).to_have_count(2)  # 0.8 and 0.9
    shoot(page, "feed-score-filter")

    page.get_by_role("textbox", name="Score from").fill("lots")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#id_score_min_error")).to_contain_text("Must be a number")
    shoot(page, "feed-score-filter-invalid")


def test_the_analytics_page_charts_a_score(page, sign_in, shoot, owner_user, scored):
    sign_in(page, owner_user)
    page.goto("/analytics")
    page.get_by_role("combobox", name="Score chart").select_option("helpfulness")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"score=helpfulness"))
    chart = page.locator("#chart-score")
    expect(chart.get_by_role("heading", name="Score: helpfulness")).to_be_visible()
    expect(chart).to_contain_text("Average per interval of 10 scores (overall 0.45)")
    shoot(page, "analytics-score")


def test_the_trace_page_opens_the_trace_in_langfuse(page, sign_in, shoot, owner_user, team, scored):
    sign_in(page, owner_user)
    page.goto(f"/traces/{scored.trace_id}")
    link = page.get_by_role("link", name="Open in Langfuse")
    otel = ids.otel_trace_id(team.pk, scored.run_id).hex()
    expect(link).to_have_attribute("href", re.compile(rf"^https://lf\.example\.com/project/p1/traces/{otel}\?"))
    shoot(page, "trace-open-in")
