"""Sign up, log in and out, password reset through a real SMTP server, team switching."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from accounts.models import Membership, Role

from ..factories import MembershipFactory, TeamFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_sign_up_then_log_out_and_back_in(page, shoot):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login$"))
    shoot(page, "login")
    page.get_by_role("link", name="Create an account").click()
    expect(page.get_by_role("heading", name="Create your account")).to_be_visible()
    shoot(page, "signup")

    page.get_by_label("Work e-mail").fill("grace@example.com")
    page.get_by_label("Password").fill("short")
    page.get_by_role("button", name="Create account").click()
    expect(page.locator(".field-error")).to_contain_text("too short")
    shoot(page, "signup-errors")

    page.get_by_label("Password").fill("a long and good secret")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name="Send your first trace")).to_be_visible()
    expect(page.locator("#snippet-curl")).to_contain_text(f"curl {page.url.rstrip('/')}/api/v1/traces")
    expect(page.locator("#snippet-typescript")).to_contain_text('import { init } from "tracerelay";')
    expect(page.locator("#snippet-python")).to_be_visible()
    shoot(page, "home-first-trace")
    assert Membership.objects.get(user__username="grace@example.com").role == Role.OWNER

    page.get_by_label("Account menu for grace@example.com").click()
    page.get_by_role("menuitem", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login$"))

    page.get_by_label("Username or e-mail").fill("grace@example.com")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("do not match")
    shoot(page, "login-error")
    page.get_by_label("Password").fill("a long and good secret")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Send your first trace")).to_be_visible()


def test_password_reset_by_email(page, shoot, smtp):
    UserFactory(username="ada@example.com", email="ada@example.com")
    page.goto("/login")
    page.get_by_role("link", name="Forgot your password?").click()
    shoot(page, "password-reset")
    page.get_by_label("E-mail").fill("ada@example.com")
    page.get_by_role("button", name="Send reset link").click()
    expect(page.get_by_role("heading", name="Check your e-mail")).to_be_visible()
    shoot(page, "password-reset-sent")

    body = smtp.body(smtp.wait_for("ada@example.com"))
    link = re.search(r"http://\S+/password-reset/\S+", body).group(0)
    page.goto(link)
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    shoot(page, "password-reset-confirm")
    page.get_by_label("New password", exact=True).fill("brand new secret words")
    page.get_by_label("New password confirmation").fill("brand new secret words")
    page.get_by_role("button", name="Set password").click()
    expect(page.get_by_role("heading", name="Password changed")).to_be_visible()
    shoot(page, "password-reset-complete")
    assert get_user_model().objects.get(username="ada@example.com").check_password("brand new secret words")

    page.goto(link)  # works once
    expect(page.get_by_role("heading", name="This link has expired")).to_be_visible()


def test_switching_teams(page, sign_in, shoot):
    user = UserFactory(username="lin@example.com")
    MembershipFactory(user=user, team=TeamFactory(name="Acme Search"), role=Role.OWNER)
    MembershipFactory(user=user, team=TeamFactory(name="Billing"), role=Role.VIEWER)
    sign_in(page, user)
    page.goto("/settings/team")
    menu = page.get_by_label(re.compile(r"^Team: "))
    menu.click()
    shoot(page, "team-switcher")
    other = "Billing" if "Acme" in menu.get_attribute("aria-label") else "Acme Search"
    page.get_by_role("menuitem", name=re.compile(other)).click()
    expect(page.get_by_label(f"Team: {other}. Switch team")).to_be_visible()
    page.goto("/settings/team")
    expect(page.get_by_role("heading", name="Team")).to_be_visible()
    expect(page.locator(".lead")).to_contain_text(other)

    page.get_by_label(f"Team: {other}. Switch team").click()
    page.get_by_role("menuitem", name="+ New team").click()
    page.get_by_label("Team name").fill("Research")
    shoot(page, "team-new")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_label("Team: Research. Switch team")).to_be_visible()


def test_the_readme_first_steps_a_trace_sent_with_the_bootstrap_key_is_in_the_feed(page, shoot, live, monkeypatch):
    """README, "First steps": bin/run's bootstrap, a trace sent with its key, the admin logs in with
    the e-mail and finds the trace at the top of the feed."""
    import json
    import urllib.request
    from io import StringIO

    from django.core.management import call_command

    monkeypatch.setenv("TRACERELAY_ADMIN_PASSWORD", "first-steps-pass")
    out = StringIO()
    call_command("bootstrap", "--url", live, "--json", stdout=out)
    key = json.loads(out.getvalue())["key"]
    body = {"model": "gpt-4o", "prompt_tokens": 120, "completion_tokens": 48, "tags": ["first"]}
    request = urllib.request.Request(
        f"{live}/api/v1/traces",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        trace_id = json.loads(response.read())["id"]

    page.goto("/traces")
    expect(page).to_have_url(re.compile(r"/login\?next=/traces$"))
    expect(page.get_by_label("Username or e-mail")).to_be_visible()
    shoot(page, "login-username-or-email")
    page.get_by_label("Username or e-mail").fill("admin@localhost")
    page.get_by_label("Password").fill("first-steps-pass")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/traces$"))
    expect(page.locator("#feed-rows tr").first).to_contain_text("gpt-4o")
    expect(page.locator(f'#feed-rows a[href*="{trace_id}"]').first).to_be_visible()
    shoot(page, "first-steps-feed")
