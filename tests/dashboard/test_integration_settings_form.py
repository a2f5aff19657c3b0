"""The integration form's sections for the settings in config (environments and identity, payload
transformation, quota, response validation): what is typed becomes the API's config, the stored
values come back in the edit form, and a bad value is shown next to its field."""

from __future__ import annotations

import json

import pytest

from integrations.models import Integration

from .integrations_setup import make_hook, webhook_form

pytestmark = pytest.mark.django_db

TRANSFORM = [{"op": "drop", "path": "input"}, {"op": "truncate", "path": "output", "max_chars": 200}]


def test_the_sections_make_the_config(as_role, team):
    response = as_role("owner").post(
        "/integrations/new/webhook",
        webhook_form(
            name="shaped",
            setting_environments="staging, dev",
            setting_environment_map="dev = development",
            setting_withhold_user_id="on",
            setting_transform=json.dumps(TRANSFORM),
            setting_quota_max_per_minute="5",
            setting_quota_over_quota="drop",
            setting_rv_status="200, 202",
            setting_rv_json_path="errors",
        ),
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    config = Integration.objects.get(team=team, name="shaped").config
    assert config["environments"] == ["staging", "dev"]
    assert config["environment_map"] == {"dev": "development"}
    assert config["send_user_id"] is False and "send_session_id" not in config
    assert config["transform"] == TRANSFORM
    assert config["quota"] == {"max_per_minute": 5, "over_quota": "drop"}
    assert config["response_validation"] == {"status": [200, 202], "json_path": "errors"}


def test_a_bad_transform_is_shown_next_to_its_field(as_role, team):
    response = as_role("owner").post(
        "/integrations/new/webhook",
        webhook_form(name="bad", setting_transform='[{"op": "truncate", "path": "output"}]'),
    )

    assert response.status_code == 400
    field = response.context["form"]["setting_transform"]
    assert "operation 1 (truncate): max_chars must be" in field.errors[0]
    assert not Integration.objects.filter(team=team, name="bad").exists()


def test_text_that_is_not_json_is_a_form_error(as_role, team):
    response = as_role("owner").post("/integrations/new/webhook", webhook_form(name="bad", setting_transform="[{"))

    assert response.status_code == 400
    assert "Not JSON" in response.context["form"]["setting_transform"].errors[0]


def test_a_quota_without_a_limit_names_the_quota(as_role, team):
    response = as_role("owner").post(
        "/integrations/new/webhook", webhook_form(name="bad", setting_quota_max_per_minute="0")
    )

    assert response.status_code == 400
    assert "max_per_minute must be a whole number" in response.context["form"]["setting_quota_max_per_minute"].errors[0]


def test_the_edit_form_shows_the_stored_settings_and_emptying_removes_them(as_role, team):
    hook = make_hook(team)
    hook.config = {**hook.config, "environments": ["staging"], "quota": {"max_per_day": 9, "over_quota": "sample"}}
    hook.save()
    client = as_role("owner")

    page = client.get(f"/integrations/{hook.pk}/edit")
    form = page.context["form"]
    assert form["setting_environments"].value() == "staging"
    assert str(form["setting_quota_max_per_day"].value()) == "9"
    assert form["setting_quota_over_quota"].value() == "sample"

    response = client.post(
        f"/integrations/{hook.pk}/edit",
        webhook_form(name="orders-hook", config_headers="X-Team: search", setting_environments=""),
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    hook.refresh_from_db()
    assert "environments" not in hook.config and "quota" not in hook.config


def test_other_platforms_have_no_response_validation_section(as_role):
    page = as_role("owner").get("/integrations/new/langfuse").content.decode()

    assert 'name="setting_transform"' in page and 'name="setting_quota_max_per_minute"' in page
    assert 'name="setting_rv_status"' not in page
