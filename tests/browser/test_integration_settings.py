"""An integration's settings in the browser: the form's sections (environments, transformation,
quota, response validation) saved from the page, then the integration's page with its quota usage,
the transform's preview on a recent trace, and its alerts."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from alerts.definition import parse_alert
from alerts.services import alert_create
from integrations.models import Integration

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="ines@example.com"), role=Role.OWNER).user


def test_settings_from_the_form_to_the_page(page, sign_in, shoot, owner_user, team):
    sign_in(page, owner_user)
    page.goto("/integrations/new/webhook")
    page.locator("#id_name").fill("orders-hook")
    page.get_by_label("URL").fill("http://127.0.0.1:9/hook")
    page.locator("#id_setting_environments").fill("staging, production")
    page.locator("#id_setting_withhold_user_id").check()
    page.locator("#id_setting_transform").fill(
        '[{"op": "drop", "path": "input"}, {"op": "truncate", "path": "output"}]'
    )
    page.locator("#id_setting_quota_max_per_minute").fill("5")
    page.locator("#id_setting_quota_over_quota").select_option("drop")
    page.locator("#id_setting_rv_json_path").fill("errors")
    page.get_by_role("button", name="Add integration").click()
    expect(page.locator("#id_setting_transform_error")).to_contain_text("operation 2 (truncate)")
    shoot(page, "integration-settings-form-error")

    page.locator("#id_setting_transform").fill(
        '[{"op": "drop", "path": "input"}, {"op": "truncate", "path": "output", "max_chars": 12},'
        ' {"op": "rename", "path": "metadata.customer", "to": "metadata.account"}]'
    )
    page.get_by_role("button", name="Add integration").click()
    expect(page).to_have_url(re.compile(r"/integrations/\d+$"))
    integration = Integration.objects.get(name="orders-hook")
    TraceFactory(
        team_id=integration.team_id,
        input="What is OTLP?",
        output="OpenTelemetry's protocol.",
        metadata={"customer": "acme"},
    )
    assert integration.config["quota"] == {"max_per_minute": 5, "over_quota": "drop"}
    spec = parse_alert(
        {
            "name": "Hook failing",
            "metric": "delivery_failure_rate",
            "threshold": 0.1,
            "window": {"type": "rolling", "minutes": 15},
            "scope": {"integration": "orders-hook"},
        }
    )
    alert_create(team_id=integration.team_id, spec=spec, actor="test")
    page.reload()
    expect(page.locator("#preview-after")).to_contain_text('"account": "acme"')
    expect(page.locator("#preview-after")).to_contain_text('"output": "OpenTelemetr"')
    expect(page.get_by_role("link", name="Hook failing")).to_be_visible()
    shoot(page, "integration-settings-page")
