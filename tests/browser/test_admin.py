"""Django admin in the browser: titled tracerelay, and the traces list readable at 1280 px: every
column on one line (a model name was squeezed to a character or two a line beside the filters)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from ..factories import TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = ["claude-3-5-sonnet-20241022", "gpt-4o-mini-2024-07-18", "gemini-1.5-pro-002", "my-own-model"]

# Cells whose text takes more than one line (a wrapped cell's text has more than one client rect).
_WRAPPED = """() => [...document.querySelectorAll("#result_list tbody td, #result_list tbody th")].filter((cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return tops.size > 1;
}).map((cell) => cell.className + ": " + cell.innerText)"""


def test_the_admin_is_tracerelays_and_its_traces_list_reads_at_1280(page, sign_in, shoot, team):
    for i, model in enumerate(MODELS * 3):
        TraceFactory(team=team, model=model, cost=None if model == "my-own-model" else Decimal("0.0123") * (i + 1))
    staff = UserFactory(username="root@example.com", is_staff=True, is_superuser=True)
    sign_in(page, staff)
    page.goto("/admin/")
    expect(page).to_have_title("Teams, traces, routing and deliveries | tracerelay admin")
    expect(page.locator("#site-name")).to_have_text("tracerelay administration")
    page.goto("/admin/traces/trace/")
    expect(page.locator("#result_list tbody tr")).to_have_count(12)
    assert page.viewport_size["width"] == 1280
    shoot(page, "admin-traces")
    assert page.evaluate(_WRAPPED) == []  # every cell on one line, model names whole
    # Every column in view, none scrolled out of the list's box.
    assert page.evaluate(
        "(() => { const r = document.querySelector('.results'); return r.scrollWidth <= r.clientWidth })()"
    )
    model = page.locator("#result_list td.field-model").first
    assert model.inner_text() in MODELS
    box = model.bounding_box()
    assert box is not None and box["width"] >= 100  # not squeezed to a few characters
    expect(page.locator("#result_list")).to_contain_text("unpriced")  # no cost, said so
