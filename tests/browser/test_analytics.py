"""/analytics in the browser: a day of a team's calls as figures and charts; a bar opens the trace
feed filtered to its interval and outcome; the range picker and a filter update the page and the
URL; a bad filter shows its error. Screenshots at 1280 and 390 px."""

from __future__ import annotations

import random
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from delivery.models import Delivery, DeliveryStatus

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = [("gpt-4o-mini", "openai", 6), ("gpt-4o", "openai", 3), ("claude-sonnet-4", "anthropic", 3),
          ("gemini-2.5-flash", "google", 2), ("llama-3.1-70b", "groq", 1)]  # fmt: skip


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="olga@example.com"), role=Role.OWNER).user


@pytest.fixture
def a_day_of_calls(team):
    rng = random.Random(7)
    now = timezone.now()
    rows = []
    for i in range(160):
        model, provider, _ = rng.choices(MODELS, weights=[m[2] for m in MODELS])[0]
        status = rng.choices(["success", "error", "rate_limited"], weights=[90, 6, 4])[0]
        hours_ago = rng.random() ** 1.6 * 23.5
        prompt, completion = int(rng.lognormvariate(6, 0.8)), int(rng.lognormvariate(4.5, 0.8))
        metadata = {}
        if status == "rate_limited":
            left = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "1200"}
            metadata = {"proxy": {"upstream": f"{provider}-main"}, "rate_limit": left}
        rows.append(
            TraceFactory(
                team=team,
                trace_id=f"call-{i:03d}",
                timestamp=now - timedelta(hours=hours_ago),
                model=model,
                provider=provider,
                status=status,
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=prompt + completion,
                cost=None if provider == "groq" else Decimal(prompt * 3 + completion * 12) / 1_000_000,
                unpriced=provider == "groq",
                latency_ms=int(rng.lognormvariate(6.6, 0.5)),
                time_to_first_token_ms=int(rng.lognormvariate(5.2, 0.4)) if rng.random() < 0.6 else None,
                tags=rng.choice([[], ["checkout"], ["search"], ["checkout", "beta"], ["support"]]),
                metadata=metadata,
            )
        )
    for trace in rows[:3]:
        Delivery.objects.create(team=team, trace=trace, destination="langfuse", spec={"destination": "langfuse"})
    Delivery.objects.create(
        team=team, trace=rows[4], destination="webhook", spec={"destination": "webhook"}, status=DeliveryStatus.DEAD
    )
    return rows


def test_the_analytics_page_reads_like_a_dashboard(page, sign_in, shoot, owner_user, a_day_of_calls):
    sign_in(page, owner_user)
    page.goto("/analytics")
    expect(page.get_by_role("heading", name="Analytics", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=re.compile(r"^Calls: 160, open these traces$"))).to_be_visible()
    titles = ("Calls", "Cost", "Tokens", "Latency", "Error rate", "Rate-limited calls", "Upstream rate limits")
    for title in (*titles, "Models", "Providers", "Tags", "Delivery queue"):
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
    expect(page.locator("#breakdown-model").get_by_role("link", name="Traces of model gpt-4o-mini")).to_be_visible()
    expect(page.locator("#rate-limits").get_by_text("openai-main")).to_be_visible()
    shoot(page, "analytics")

    # a failed-calls segment of the volume chart: the feed, filtered to its hour and outcome
    bar = page.locator("#chart-volume a.bar.series-error").first
    bar.click()
    expect(page).to_have_url(re.compile(r"/traces\?.*status=error.*since=.*until="))
    expect(page.get_by_label("Status")).to_have_value("error")
    rows = page.get_by_role("link", name=re.compile("open trace call-"))
    expect(rows.first).to_be_visible()
    assert rows.count() >= 1
    page.go_back()

    # the range picker and a filter: the page and the URL follow
    page.get_by_role("combobox", name="Time range").select_option("7d")
    page.get_by_role("textbox", name="Provider").fill("anthropic")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"/analytics\?(?=.*time_range=7d)(?=.*provider=anthropic)"))
    expect(page.locator("#breakdown-provider").get_by_role("link", name="Traces of provider openai")).to_have_count(0)
    expect(page.locator("#breakdown-provider").get_by_role("link", name="Traces of provider anthropic")).to_be_visible()
    shoot(page, "analytics-filtered")

    # a bad filter: its error next to the field, no figures
    page.get_by_role("combobox", name="Interval").select_option("minute")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#id_interval_error")).to_contain_text("at most 1500 points")
    expect(page.get_by_role("heading", name="Fix the filter above")).to_be_visible()
    shoot(page, "analytics-invalid")
