"""Look at every page (issue 23, item 9): every page of the navigation, and the pages one click under
it (a trace, a run, a session, a rule, an integration, a report, an alert), opened with a team of
realistic data at 1280 and 390 px; a screenshot of each (screenshots/walk-<page>-<width>.png) and
axe-core (vendored in assets/, never served) run on each at both widths: no violation of impact
"serious" or "critical"."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from accounts.nav import NAV
from alerts.models import Alert
from dashboards import services as dashboard_services
from dashboards.definition import parse_board
from delivery.models import Delivery
from integrations.models import Integration
from reports.models import Report
from repricing.models import RepriceJob
from routing.models import RoutingRule
from traces.models import Score, ScoreType, Trace
from traces.prices import services as price_services

from ..factories import (
    ApiKeyFactory,
    IntegrationFactory,
    MembershipFactory,
    RoutingRuleFactory,
    TraceFactory,
    UserFactory,
)
from .conftest import NARROW, SCREENSHOTS, WIDE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "assets" / "axe.min.js"
MODELS = ["gpt-4o", "claude-3-5-sonnet-20241022", "gpt-4o-mini", "gemini-1.5-pro-002", "llama-3.1-70b-versatile"]

# (name, path): the navigation's pages (checked against accounts.nav below) and the pages under them.
PAGES = [
    ("traces", "/traces"),
    ("trace", "/traces/t-001"),
    ("runs", "/runs"),
    ("run", "/runs/run-agent"),
    ("sessions", "/sessions"),
    ("session", "/sessions/session-0"),
    ("users", "/users"),
    ("analytics", "/analytics"),
    ("analytics-score", "/analytics?score=helpfulness"),
    ("traces-score-filter", "/traces?score.helpfulness.min=0.5"),
    ("dashboards", "/dashboards"),
    ("dashboard", "/dashboards/{board}"),
    ("routing", "/routing"),
    ("routing-rule", "/routing/rules/{rule}"),
    ("routing-rule-new", "/routing/rules/new"),
    ("routing-test", "/routing/test"),
    ("routing-sampling", "/routing/sampling"),
    ("integrations", "/integrations"),
    ("integrations-new", "/integrations/new"),
    ("integration", "/integrations/{integration}"),
    ("reports", "/reports"),
    ("report-new", "/reports/new"),
    ("report", "/reports/{report}"),
    ("alerts", "/alerts"),
    ("alert-new", "/alerts/new"),
    ("alert", "/alerts/{alert}"),
    ("api-keys", "/settings/api-keys"),
    ("team", "/settings/team"),
    ("privacy", "/settings/privacy"),
    ("prices", "/settings/prices"),
    ("reprice", "/settings/prices/reprice"),
    ("advanced", "/settings/advanced"),
]

SERIOUS = ("serious", "critical")


def test_the_walk_covers_every_item_of_the_navigation():
    from django.urls import reverse

    walked = {path for _, path in PAGES}
    missing = [item.label for item in NAV if reverse(item.url_name) not in walked]
    assert not missing, f"pages of the navigation not walked: {missing}"


@pytest.fixture
def world(team) -> dict[str, Any]:
    """A team a few days into real use: varied traces (models, statuses, tags, metadata, sessions,
    users, one agent run), keys, a rule, integrations with deliveries, a report and an alert."""
    owner = MembershipFactory(team=team, user=UserFactory(username="margaret.hamilton@example.com"), role=Role.OWNER)
    MembershipFactory(team=team, user=UserFactory(username="grace@example.com"), role=Role.VIEWER)
    now = timezone.now()
    traces: list[Trace] = []
    for i in range(40):
        traces.append(
            TraceFactory(
                team=team,
                trace_id=f"t-{i:03d}",
                model=MODELS[i % len(MODELS)],
                timestamp=now - timedelta(minutes=7 * i),
                environment="staging" if i % 10 == 3 else "production",
                status=["success", "success", "error", "rate_limited"][i % 4],
                cost=None if i % 7 == 0 else Decimal("0.0123") * (i + 1),
                unpriced=i % 7 == 0,
                tags=["beta", "checkout", "eu-west"][: i % 4],
                metadata={"sdk": {"name": "tracerelay", "version": "1.2"}, "plan": "pro"} if i % 2 else {},
                destinations=["langfuse-prod", "orders-hook"] if i % 3 else ["langfuse-prod"],
                session_id=f"session-{i // 5}",
                user_id=f"user-{i % 9}",
                service_name="checkout-api",
                input=[
                    {"role": "system", "content": "You are a travel assistant. Be brief."},
                    {"role": "user", "content": f"Find me a hotel in Lisbon, question {i}?"},
                ],
                output={"choices": [{"message": {"role": "assistant", "content": "Hotel Avenida, 120 EUR."}}]},
            )
        )
    # One agent run: an agent span over two calls and a tool.
    for span_id, parent, kind, name in [
        ("run-agent", "", "agent", "trip-planner"),
        ("span-1", "run-agent", "llm", "plan"),
        ("span-2", "run-agent", "tool", "hotel_search"),
        ("span-3", "run-agent", "llm", "answer"),
    ]:
        TraceFactory(team=team, trace_id=span_id, run_id="run-agent", parent_id=parent, kind=kind, name=name)
    ApiKeyFactory(team=team, name="production backend")
    ApiKeyFactory(team=team, name="laptop", environment="development")
    langfuse: Integration = IntegrationFactory(
        team=team, name="langfuse-prod", platform="langfuse", config={"projectId": "clkp-demo"}
    )  # (its project id: the trace page links "Open in Langfuse")
    for i, trace in enumerate(traces[:12]):  # scores: the feed's score filter, the analytics score chart
        value = round(0.3 + (i % 5) * 0.15, 2)
        Score.objects.create(
            team=team, trace=trace, name="helpfulness", value=value, number=value, data_type=ScoreType.NUMERIC
        )
        if i % 3 == 0:
            Score.objects.create(
                team=team, trace=trace, name="thumbs", value=i % 2 == 0, number=float(i % 2 == 0),
                data_type=ScoreType.BOOLEAN, source="human",
            )  # fmt: skip
    IntegrationFactory(team=team, name="orders-hook")
    for i, trace in enumerate(traces[:6]):
        Delivery.objects.create(
            team=team, trace=trace, destination="langfuse-prod", spec={"name": "langfuse-prod"},
            status="dead" if i == 0 else "delivered",
        )  # fmt: skip
    rule: RoutingRule = RoutingRuleFactory(
        team=team,
        name="Errors to the on-call hook",
        condition='status == "error"',
        destinations=[{"name": "orders-hook", "sample_rate": 1.0, "tags": [], "fallback": []}],
    )
    report = Report.objects.create(
        team=team, name="Weekly spend by model", group_by="model", time_range="7d", formats=["csv", "pdf"]
    )
    alert = Alert.objects.create(
        team=team, name="Daily spend over $50", metric="cost", threshold=Decimal("50"), window_type="calendar",
        period="day",
    )  # fmt: skip
    board = dashboard_services.dashboard_create(
        team_id=team.pk,
        board=parse_board(
            {
                "name": "Spend",
                "widgets": [
                    {"title": "Cost today", "metric": "cost", "chart": "number"},
                    {"title": "Calls per hour", "metric": "count", "chart": "line", "interval": "hour"},
                    {"title": "Cost by model", "metric": "cost", "chart": "bar", "group_by": "model"},
                    {"title": "Latency by model", "metric": "latency_p95", "chart": "table", "group_by": "model"},
                    {"title": "Helpfulness", "metric": "score_avg", "score": "helpfulness", "chart": "line"},
                ],
            }
        ),
        actor="test",
    )
    RepriceJob.objects.create(
        team=team, actor="user:margaret.hamilton@example.com", since=now - timedelta(days=30), until=now,
        model="gpt-4o*", status="succeeded", traces_total=16, traces_done=16, traces_changed=9,
        cost_before=Decimal("1.2"), cost_after=Decimal("0.93"), finished_at=now,
    )  # fmt: skip
    RepriceJob.objects.create(
        team=team, actor="key:trk_live_ab", since=now - timedelta(days=2), until=now, status="running",
        traces_total=44, traces_done=20, redeliver=True, heartbeat_at=now,
    )  # fmt: skip
    price_services.price_create(
        team_id=team.pk,
        data=price_services.clean_price(
            {"model": "ft:gpt-4o-mini:acme:*", "input_per_mtok": "0.3", "output_per_mtok": "1.2"}
        ),
        actor="test",
    )
    return {
        "owner": owner.user,
        "rule": rule.pk,
        "integration": langfuse.pk,
        "report": report.pk,
        "alert": alert.pk,
        "board": board.pk,
    }


def _violations(page: Any) -> list[str]:
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("() => axe.run(document, { resultTypes: ['violations'] })")
    found = []
    for v in result["violations"]:
        if v["impact"] not in SERIOUS:
            continue
        nodes = "; ".join(
            f"{' '.join(map(str, n['target']))}: {n.get('failureSummary', '').splitlines()[-1].strip()}"
            for n in v["nodes"][:6]
        )
        found.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}: {nodes}")
    return found


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_every_page_reads_well_and_passes_axe(page, sign_in, world, name, path):
    SCREENSHOTS.mkdir(exist_ok=True)
    sign_in(page, world["owner"])
    url = path.format(**world)
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: {response.status if response else 'no response'}"
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    problems = []
    for width, height in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(SCREENSHOTS / f"walk-{name}-{width}.png"), full_page=True, animations="disabled")
        problems += [f"{width} px: {v}" for v in _violations(page)]
    assert not problems, f"{url}: serious or critical accessibility violations:\n" + "\n".join(problems)
