"""/integrations in the browser: add a webhook pointing at a loopback fake, test the connection (it
works, then the fake fails), see a dead letter the engine made against the failing fake, replay it
and watch it delivered; what a viewer sees."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from delivery import outbox
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from integrations.models import Integration
from tests.fakes import FakeWebhookReceiver, Reply

from ..factories import IntegrationFactory, MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIGNING = "loopback-signing-secret-42"


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="ines@example.com"), role=Role.OWNER).user


@pytest.fixture
def published(monkeypatch):
    """Delivery ids the dashboard handed to the broker: captured, and delivered by the test itself
    (a message with our row ids must not reach a worker someone else runs on another database)."""
    sent: list[int] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, **kw: sent.extend(ids) or True)
    return sent


@pytest.fixture
def fake():
    with FakeWebhookReceiver(secret=SIGNING) as server:
        yield server


def test_add_test_and_replay_a_dead_letter(page, sign_in, shoot, owner_user, team, fake, published):
    sign_in(page, owner_user)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Integrations").click()
    expect(page.get_by_role("heading", name="No integrations yet")).to_be_visible()
    shoot(page, "integrations-empty")

    page.get_by_role("link", name="Add integration").first.click()
    expect(page.get_by_role("heading", name="Add an integration")).to_be_visible()
    shoot(page, "integrations-pick-platform")
    page.get_by_role("link", name="Webhook").click()
    expect(page.get_by_role("heading", name="Add Webhook")).to_be_visible()

    page.get_by_label("Name").fill("orders-hook")
    page.get_by_label("URL").fill("http://169.254.169.254/latest")
    page.get_by_role("button", name="Add integration").click()
    expect(page.locator("#id_config_url_error")).to_contain_text("metadata")
    expect(page.get_by_label("URL")).to_have_attribute("aria-invalid", "true")
    shoot(page, "integration-form-error")

    page.get_by_label("URL").fill(fake.url + "/hook")
    page.get_by_label("Secret").fill(SIGNING)
    page.get_by_label("Default tags").fill("relay, orders")
    page.get_by_label("Metadata mapping").fill("customer_id = user")
    page.get_by_label("Attempts").fill("1")
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_role("status")).to_contain_text("Connection works")
    assert len(fake.pings) == 1  # signed with the secret typed (the fake checks the signature)
    shoot(page, "integration-form-check-ok")

    fake.queue(Reply(503, "maintenance"))
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_role("status")).to_contain_text("Connection failed")
    expect(page.get_by_role("status")).to_contain_text("HTTP 503")
    expect(page.get_by_label("Secret")).to_have_value(SIGNING)  # still typed: only the result was swapped
    shoot(page, "integration-form-check-failed")

    page.get_by_role("button", name="Add integration").click()
    expect(page.get_by_role("heading", name="orders-hook")).to_be_visible()
    expect(page.get_by_text("orders-hook was added")).to_be_visible()
    integration = Integration.objects.get(team=team, name="orders-hook")
    assert integration.retry_policy["max_attempts"] == 1
    expect(page.locator("main")).not_to_contain_text(SIGNING)
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator("#check-result")).to_contain_text("Connection works")

    # A trace routed here while the fake fails: one attempt, then a dead letter.
    trace = TraceFactory(team=team, trace_id="order-42", model="gpt-4o-mini")
    row = Delivery.objects.create(team=team, trace=trace, destination="orders-hook", spec={"name": "orders-hook"})
    fake.queue(Reply(500, "upstream exploded"))
    deliver_batch([row.pk])
    row.refresh_from_db()
    assert row.status == DeliveryStatus.DEAD, row.last_error

    page.reload()
    dead = page.locator(f"#dead-{row.pk}")
    expect(dead).to_contain_text("order-42")
    expect(dead).to_contain_text("HTTP 500")
    expect(page.locator("dd.stat-bad")).to_have_text("1")
    shoot(page, "integration-dead-letter")

    dead.get_by_role("button", name="Replay delivery of order-42").click()
    expect(page.get_by_role("status").first).to_contain_text("queued again")
    assert published == [row.pk]
    deliver_batch(published)  # what a worker does with the task: the fake answers 200 now
    row.refresh_from_db()
    assert row.status == DeliveryStatus.DELIVERED and row.replay_count == 1
    assert [t["id"] for t in fake.traces] == ["order-42"] and fake.problems == []

    page.reload()
    expect(page.get_by_role("heading", name="No dead letters")).to_be_visible()
    expect(page.locator(".stat dd").first).to_have_text("1")  # delivered
    shoot(page, "integration-detail")

    page.goto("/integrations")
    expect(page.locator(f"#integration-{integration.pk}")).to_contain_text("orders-hook")
    shoot(page, "integrations")

    page.goto(f"/integrations/{integration.pk}/edit")
    expect(page.get_by_text("Set (****t-42). Leave blank to keep it.")).to_be_visible()
    shoot(page, "integration-edit")


def test_replay_all_and_delete(page, sign_in, shoot, owner_user, team, published):
    integration = IntegrationFactory(team=team, name="langfuse-prod", platform="langfuse", config={})
    for i in range(3):
        Delivery.objects.create(
            team=team,
            trace=TraceFactory(team=team, trace_id=f"lost-{i}"),
            destination="langfuse-prod",
            integration=integration,
            status="dead",
            attempts=8,
            last_error="HTTP 401: invalid credentials",
            last_status_code=401,
        )
    sign_in(page, owner_user)
    page.goto(f"/integrations/{integration.pk}")
    page.get_by_text("Replay all 3").click()
    dialog = page.get_by_role("dialog", name="Replay all dead letters of langfuse-prod?")
    expect(dialog).to_be_visible()
    shoot(page, "integration-replay-all-confirm")
    dialog.get_by_role("button", name="Replay all").click()
    expect(page.get_by_role("status").first).to_contain_text("3 dead letters queued again")
    assert len(published) == 3

    page.get_by_text("Delete", exact=True).click()
    dialog = page.get_by_role("dialog", name="Delete langfuse-prod?")
    shoot(page, "integration-delete-confirm")
    dialog.get_by_role("button", name="Delete integration").click()
    expect(page.get_by_role("status").first).to_contain_text("langfuse-prod was deleted")
    assert not Integration.objects.filter(team=team).exists()


def test_what_a_viewer_sees(page, sign_in, shoot, team):
    viewer = MembershipFactory(team=team, user=UserFactory(username="val@example.com"), role=Role.VIEWER).user
    integration = IntegrationFactory(team=team, name="ops-hook")
    Delivery.objects.create(
        team=team,
        trace=TraceFactory(team=team, trace_id="t-1"),
        destination="ops-hook",
        integration=integration,
        status="dead",
        last_error="connection refused",
    )
    sign_in(page, viewer)
    page.goto("/integrations")
    expect(page.get_by_text("Admins and owners add and change integrations.")).to_be_visible()
    expect(page.get_by_role("link", name="Add integration")).to_have_count(0)
    page.get_by_role("link", name="ops-hook").click()
    expect(page.get_by_text("connection refused")).to_be_visible()
    expect(page.get_by_role("button", name="Replay delivery of t-1")).to_have_count(0)
    expect(page.get_by_role("button", name="Test connection")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    shoot(page, "integration-viewer")
