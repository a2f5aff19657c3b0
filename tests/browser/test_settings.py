"""/settings/api-keys and /settings/team in the browser: create, copy and revoke a key; invite a
member who accepts; what a viewer cannot do."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from accounts.models import ApiKey, Membership, Role

from ..factories import ApiKeyFactory, MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="olga@example.com"), role=Role.OWNER).user


def test_create_copy_use_and_revoke_a_key(page, sign_in, shoot, owner_user, team, live):
    sign_in(page, owner_user)
    page.goto("/settings/api-keys")
    expect(page.get_by_role("heading", name="No keys yet")).to_be_visible()
    shoot(page, "api-keys-empty")

    page.get_by_label("Name").fill("checkout service")
    page.get_by_label("Environment").select_option("development")
    page.get_by_role("button", name="Create key").click()
    raw = page.locator("#new-key").inner_text()
    assert raw.startswith("tr_dev_")
    page.get_by_role("button", name="Copy key").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == raw
    shoot(page, "api-keys-created")

    # the key works against the API
    response = httpx.post(
        f"{live}/api/v1/traces",
        headers={"Authorization": f"Bearer {raw}"},
        json={"model": "gpt-4o", "prompt_tokens": 12, "completion_tokens": 3},
    )
    assert response.status_code in (200, 201, 202), response.text

    page.reload()  # shown once: gone after a reload
    expect(page.locator("#new-key")).to_have_count(0)
    key = ApiKey.objects.get(team=team)
    row = page.locator(f"#key-{key.pk}")
    expect(row).to_contain_text(key.prefix)
    row.get_by_label(f"Revoke key {key.prefix}", exact=True).click()
    shoot(page, "api-keys-revoke-confirm")
    row.get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("status")).to_contain_text(f"Key {key.prefix}… revoked")
    expect(page.locator(f"#key-{key.pk}")).to_contain_text("Revoked")
    shoot(page, "api-keys-revoked")
    refused = httpx.get(f"{live}/api/v1/traces", headers={"Authorization": f"Bearer {raw}"})
    assert refused.status_code == 401


def test_form_errors_show_next_to_the_field(page, sign_in, shoot, owner_user):
    sign_in(page, owner_user)
    page.goto("/settings/team")
    page.get_by_label("E-mail").fill("not an address")
    page.get_by_role("button", name="Send invitation").click()
    error = page.locator("#id_email_error")
    expect(error).to_contain_text("Enter a valid email address.")
    assert error.evaluate("e => e.previousElementSibling.id") == "id_email"  # right under the field
    expect(page.get_by_label("E-mail")).to_have_attribute("aria-invalid", "true")
    shoot(page, "team-invite-error")


def test_invite_a_member_who_accepts(page, new_page, sign_in, shoot, owner_user, team, smtp):
    sign_in(page, owner_user)
    page.goto("/settings/team")
    page.get_by_label("E-mail").fill("nina@example.com")
    page.get_by_label("Role", exact=True).select_option("member")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_role("heading", name="Invitation sent to nina@example.com")).to_be_visible()
    shoot(page, "team-invited")
    shown = page.locator("#invite-link").inner_text()
    mailed = re.search(r"http://\S+/invite/\S+", smtp.body(smtp.wait_for("nina@example.com"))).group(0)
    assert mailed == shown

    guest = new_page()
    guest.goto(mailed)
    expect(guest.get_by_role("heading", name=f"Join {team.name}")).to_be_visible()
    expect(guest.get_by_label("Work e-mail")).to_have_value("nina@example.com")
    shoot(guest, "invite-accept")
    guest.get_by_label("Password").fill("nina's long secret")
    guest.get_by_role("button", name="Create account and join").click()
    expect(guest.get_by_role("status")).to_contain_text(f"Welcome to {team.name}")
    assert Membership.objects.get(user__username="nina@example.com", team=team).role == Role.MEMBER

    guest.goto(mailed)  # works once
    expect(guest.get_by_role("heading", name="This invitation has been used")).to_be_visible()
    shoot(guest, "invite-used")

    page.goto("/settings/team")
    expect(page.locator("table").first).to_contain_text("nina@example.com")
    shoot(page, "team")

    nina = Membership.objects.get(user__username="nina@example.com")
    row = page.locator(f"#member-{nina.pk}")
    row.get_by_label("Role of nina@example.com", exact=True).select_option("admin")
    row.get_by_role("button", name="Save role of nina@example.com").click()
    expect(page.get_by_role("status")).to_contain_text("nina@example.com is now admin")
    row.get_by_label("Remove nina@example.com", exact=True).click()
    dialog = page.get_by_role("dialog", name="Remove nina@example.com?")
    expect(dialog).to_be_visible()
    shoot(page, "team-remove-confirm")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    row.get_by_label("Remove nina@example.com", exact=True).click()
    dialog.get_by_role("button", name="Remove member").click()
    expect(page.get_by_role("status")).to_contain_text("nina@example.com was removed")
    assert not Membership.objects.filter(user__username="nina@example.com").exists()


def test_what_a_viewer_cannot_do(page, sign_in, shoot, team):
    viewer = MembershipFactory(team=team, user=UserFactory(username="vic@example.com"), role=Role.VIEWER).user
    key = ApiKeyFactory(team=team, name="prod")
    sign_in(page, viewer)
    expect(page.get_by_text("cannot create keys")).to_be_visible()
    page.goto("/settings/api-keys")
    expect(page.locator(f"#key-{key.pk}")).to_contain_text(key.prefix)
    expect(page.get_by_role("button", name="Create key")).to_have_count(0)
    expect(page.get_by_label(f"Revoke key {key.prefix}", exact=True)).to_have_count(0)
    shoot(page, "api-keys-viewer")
    page.goto("/settings/team")
    expect(page.get_by_role("button", name="Send invitation")).to_have_count(0)
    expect(page.locator("select")).to_have_count(0)
    shoot(page, "team-viewer")

    # Forging the form anyway is refused, with a page that says why.
    page.evaluate(
        """() => { const f = document.createElement('form'); f.method = 'post';
        f.action = '/settings/api-keys/new'; const t = document.createElement('input'); t.name = 'csrfmiddlewaretoken';
        t.value = document.querySelector('[name=csrfmiddlewaretoken]').value; f.appendChild(t);
        document.body.appendChild(f); f.submit(); }"""
    )
    expect(page.get_by_role("heading", name="Your role does not allow this")).to_be_visible()
    shoot(page, "forbidden")
    assert ApiKey.objects.count() == 1


def test_the_home_page_with_traces_and_the_not_found_page(page, sign_in, shoot, owner_user, team):
    for i, (model, status) in enumerate(
        [("gpt-4o", "success"), ("claude-3-5-sonnet", "error"), ("gpt-4o-mini", "rate_limited")]
    ):
        TraceFactory(team=team, model=model, status=status, latency_ms=400 + i * 120, total_tokens=300 + i)
    sign_in(page, owner_user)  # "/" → the feed, once there are traces
    expect(page.get_by_role("heading", name="Traces", exact=True)).to_be_visible()
    cell = page.locator("time").first
    assert cell.get_attribute("title").endswith("UTC") and "UTC" not in cell.inner_text()  # local time shown
    shoot(page, "home-traces")
    page.goto("/no-such-page")
    expect(page.get_by_role("heading", name="This page does not exist")).to_be_visible()
    shoot(page, "not-found")
