"""/settings/prices in the browser: an admin follows "Add a price" from an unpriced model (the model
is filled in), sees a bad price's error beside its field, then saves it; the price is listed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from traces.models import TeamPrice

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_prices_an_unpriced_model_from_the_list(page, sign_in, shoot, team):
    admin = MembershipFactory(team=team, user=UserFactory(username="ada@example.com"), role=Role.ADMIN).user
    for _ in range(3):
        TraceFactory(team=team, model="acme-7b", provider="vllm", unpriced=True, cost=None)
    sign_in(page, admin)
    page.goto("/settings/prices")
    page.get_by_role("link", name="Add a price for acme-7b").click()
    expect(page.locator("#price-new-model")).to_have_value("acme-7b")
    expect(page.locator("#price-new-provider")).to_have_value("vllm")
    page.locator("#price-new-input_per_mtok").fill("-1")
    page.locator("#price-new-output_per_mtok").fill("2.5")
    page.get_by_role("button", name="Add price").click()
    expect(page.locator("#price-new-input_per_mtok_error")).to_contain_text("Must be 0 or more.")
    shoot(page, "prices-error")
    page.locator("#price-new-input_per_mtok").fill("0.5")
    page.get_by_role("button", name="Add price").click()
    expect(page.get_by_role("status")).to_contain_text("Price for acme-7b added")
    expect(page.locator("table").first).to_contain_text("$0.5")
    shoot(page, "prices-saved")
    price = TeamPrice.objects.get(team=team)
    assert (price.model, price.provider, str(price.output_per_mtok.normalize())) == ("acme-7b", "vllm", "2.5")
