"""The integration form's sections for the settings in config (environments and identity, payload
transformation, quota, response validation): what is typed becomes the API's config, the stored
values come back in the edit form, and a bad value is shown next to its field."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

from alerts.definition import parse_alert
from alerts.services import alert_create
from delivery import outbox
from delivery.engine import deliver_batch
from integrations.models import Integration
from tests.delivery.test_integration_settings import hook, rows_of
from tests.e2e.sink import WebhookSink

from .integrations_setup import make_hook, webhook_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch):
    """Delivery publishes retries to the broker: kept here instead (never a shared Redis's queue)."""
    sent: list[list[int]] = []
    monkeypatch.setattr(outbox, "publish", lambda ids, *, countdown=None: sent.append(list(ids)) or True)
    return sent


@pytest.fixture(autouse=True)
def _own_cache_namespace(settings):
    """Quota counters live in the shared Redis: a key prefix of this test's own."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"tr-test-settings-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches


@pytest.fixture
def sink():
    with WebhookSink() as server:
        yield server


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


def test_the_integration_page_shows_usage_against_the_quota_and_previews_the_transform(as_role, team, sink, published):
    integration = hook(
        team,
        sink,
        quota={"max_per_minute": 5, "over_quota": "drop"},
        transform=[{"op": "drop", "path": "input"}, {"op": "set", "path": "metadata.source", "value": "relay"}],
    )
    rows = rows_of(team, 7, input="the prompt", metadata={"k": "v"})
    deliver_batch([r.pk for r in rows])

    response = as_role("viewer").get(f"/integrations/{integration.pk}")

    text = response.content.decode()
    assert response.status_code == 200
    assert '<strong class="quota-used">5</strong> of 5' in text
    assert "2 dropped" in text
    preview = response.context["shaping"]["preview"]
    assert '"input": "the prompt"' in preview["before"] and '"input": null' in preview["after"]
    assert '"source": "relay"' in preview["after"] and '"source"' not in preview["before"]


def test_the_integration_page_lists_its_alerts(as_role, team):
    hook = make_hook(team)
    spec = parse_alert(
        {
            "name": "Hook failing",
            "metric": "delivery_failure_rate",
            "threshold": 0.05,
            "window": {"type": "rolling", "minutes": 60},
            "scope": {"integration": hook.name},
        }
    )
    alert = alert_create(team_id=team.pk, spec=spec, actor="test")[0]

    response = as_role("viewer").get(f"/integrations/{hook.pk}")

    text = response.content.decode()
    assert response.status_code == 200
    assert f'href="/alerts/{alert.pk}"' in text and "delivery_failure_rate ≥ 5%" in text
