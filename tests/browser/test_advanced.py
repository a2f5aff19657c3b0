"""/settings/advanced in the browser: an owner turns debug mode on for 15 minutes and a trace sent
then shows its routing steps and the exporter's masked request on its page; a viewer sees the state
read-only. Screenshots at 1280 and 390 px."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from accounts.models import Role
from debugmode import state
from delivery import outbox
from delivery.engine import deliver_batch
from delivery.models import Delivery
from tests.e2e.sink import WebhookSink
from traces.models import Trace

from ..factories import ApiKeyFactory, IntegrationFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEADER_SECRET = "hdr-secret-browser-0a1b2c3d"
RULES = {
    "rules": [
        {"name": "errors-only", "priority": 10, "conditions": {"error": True}, "destinations": ["hook"]},
        {"name": "everything", "priority": 20, "destinations": [{"name": "hook", "fallback": ["backup"]}]},
    ]
}


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: True)
    state.forget()
    yield
    state.forget()


def test_an_owner_turns_debug_mode_on_and_reads_a_traces_records(page, sign_in, shoot, team, live):
    owner = MembershipFactory(team=team, user=UserFactory(username="olga@example.com"), role=Role.OWNER).user
    sign_in(page, owner)
    page.goto("/settings/advanced")
    expect(page.locator("#debug-state")).to_have_text("Off")
    shoot(page, "advanced-off")
    page.get_by_label("Turn on for").select_option("15m")
    page.get_by_role("button", name="Turn debug mode on").click()
    expect(page.get_by_role("status")).to_contain_text("Debug mode is on for")
    expect(page.locator("#debug-state")).to_have_text("On")
    shoot(page, "advanced-on")

    with WebhookSink(secret="whsec_browser_signing") as sink:
        sink.always(422)
        IntegrationFactory(
            team=team,
            name="hook",
            platform="webhook",
            config={"url": sink.url, "headers": {"X-Api-Key": HEADER_SECRET}, "secret": "whsec_browser_signing"},
        )
        IntegrationFactory(team=team, name="backup", platform="webhook", config={"url": sink.url, "headers": {}})
        raw = ApiKeyFactory(team=team)._raw
        auth = {"Authorization": f"Bearer {raw}"}
        assert httpx.put(f"{live}/api/v1/routing/rules", headers=auth, json=RULES).status_code == 200
        body = {"model": "gpt-4o", "input": "Summarise the ticket", "output": "Done."}
        assert httpx.post(f"{live}/api/v1/traces", headers=auth, json=body).status_code == 201
        trace = Trace.objects.get(team=team)
        deliver_batch(list(Delivery.objects.filter(trace=trace).values_list("pk", flat=True)))

    page.goto(f"/traces/{trace.trace_id}")
    debug = page.locator("#debug")
    expect(debug).to_contain_text("condition did not match")
    expect(debug).to_contain_text("no condition: matches every trace")
    expect(debug).to_contain_text("refused")
    expect(debug).to_contain_text("X-Api-Key: [masked]")
    expect(debug).not_to_contain_text(HEADER_SECRET)
    shoot(page, "trace-debug")

    page.goto("/settings/advanced")
    page.get_by_role("button", name="Turn debug mode off").click()
    expect(page.locator("#debug-state")).to_have_text("Off")


def test_a_viewer_sees_the_state_read_only(page, sign_in, shoot, team):
    from debugmode.services import debug_mode_enable

    debug_mode_enable(team_id=team.pk, duration="4h", actor="user:olga@example.com")
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    sign_in(page, viewer)
    page.goto("/settings/advanced")
    expect(page.locator("#debug-state")).to_have_text("On")
    expect(page.get_by_role("button", name="Turn debug mode off")).to_have_count(0)
    expect(page.get_by_role("link", name="Download diagnostic bundle")).to_have_count(0)
    expect(page.get_by_text("Your role may see whether debug mode is on")).to_be_visible()
    shoot(page, "advanced-viewer")
