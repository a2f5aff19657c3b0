"""An integration's edit form in the browser when its address changes: "Test connection" at the typed
URL sends no stored secret, saving asks for each secret again under its field, and typing them saves."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from integrations.selectors import full_config
from integrations.services import IntegrationInput, integration_create
from tests.fakes import FakeWebhookReceiver

from ..factories import MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIGNING = "stored-signing-secret-42"
TOKEN = "Bearer stored-token-7788"
AGAIN = "Give the secret again: the address changed"


def test_a_new_url_asks_for_the_secrets_again(page, sign_in, shoot, team):
    owner = MembershipFactory(team=team, user=UserFactory(username="ines@example.com"), role=Role.OWNER).user
    with FakeWebhookReceiver(secret=SIGNING) as home, FakeWebhookReceiver() as elsewhere:
        hook = integration_create(
            team_id=team.pk,
            data=IntegrationInput(
                name="orders-hook",
                platform="webhook",
                config={"url": home.url + "/hook", "secret": SIGNING, "headers": {"Authorization": TOKEN}},
                default_tags=[],
                metadata_mapping={},
                timeout_s=5,
                retry_policy={},
            ),
            actor="test",
        )
        sign_in(page, owner)
        page.goto(f"/integrations/{hook.pk}/edit")
        expect(page.get_by_text("Changing it asks for the stored secrets again")).to_be_visible()

        page.get_by_label("URL").fill(elsewhere.url + "/hook")
        page.get_by_role("button", name="Test connection").click()
        expect(page.get_by_role("status")).to_contain_text("Stored secrets not sent: the address changed")
        assert elsewhere.wait_for(1)
        ping = elsewhere.requests[0]
        assert ping.header("x-tracerelay-signature") is None and ping.header("authorization") is None
        expect(page.get_by_role("status")).to_contain_text("unsigned ping")
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "integration-edit-new-url-tested")

        page.get_by_role("button", name="Save changes").click()
        expect(page.locator("#id_config_secret_error")).to_have_text(AGAIN)
        expect(page.locator("#id_config_headers_error")).to_have_text(f"Authorization: {AGAIN}")
        expect(page.get_by_label("URL")).to_have_value(elsewhere.url + "/hook")  # what was typed stays
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "integration-edit-new-url-refused")
        hook.refresh_from_db()
        assert hook.config["url"] == home.url + "/hook"

        page.locator("#id_config_secret").fill(SIGNING)
        page.get_by_label("Headers").fill(f"Authorization: {TOKEN}")
        page.get_by_role("button", name="Save changes").click()
        expect(page.get_by_text("orders-hook was saved")).to_be_visible()
        hook.refresh_from_db()
        assert full_config(hook)["url"] == elsewhere.url + "/hook"
        assert full_config(hook)["headers"] == {"Authorization": TOKEN} and full_config(hook)["secret"] == SIGNING
        assert home.requests == []
