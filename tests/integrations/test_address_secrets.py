"""PATCH /api/v1/integrations/{id}: a stored secret only goes to the address it was saved with. A
change of address (every platform's address fields) must give each stored secret again, else a 400
names each one; a cosmetic change of address, or a change of anything else, keeps them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from accounts.models import AuditEvent
from config.crypto import decrypt_json
from integrations import urlguard
from integrations.exporters.configs import URL_KINDS
from integrations.models import Integration
from integrations.registry import exporter_class
from tests.fakes import FakeLangfuse, FakeWebhookReceiver

from .address_cases import ADDRESS_CHANGED, CASE_PARAMS, CASES, Case, make_integration, no_dns

URL = "/api/v1/integrations"
PROBLEM = "application/problem+json"


@pytest.fixture(autouse=True)
def _no_dns(monkeypatch) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", no_dns)


def patch(api, integration: Integration, body: dict[str, Any]):
    return api.patch(f"{URL}/{integration.pk}", body, format="json")


def snapshot(integration: Integration) -> tuple[dict[str, Any], dict[str, Any]]:
    row = Integration.objects.get(pk=integration.pk)
    return dict(row.config), decrypt_json(row.secrets)


def test_every_address_field_of_every_platform_is_covered() -> None:
    covered = {(case.platform, field) for case in CASES.values() for field in (case.field,)}
    for platform in {case.platform for case in CASES.values()}:
        fields = exporter_class(platform).fields  # type: ignore[attr-defined]
        for f in fields:
            if f.is_address:
                assert (platform, f.name) in covered, f"{platform}.{f.name} has no address case"
    assert {f.name for f in exporter_class("datadog").fields if f.is_address} == {"site", "endpoint"}  # type: ignore[attr-defined]
    assert all(f.is_address for p in CASES.values() for f in exporter_class(p.platform).fields if f.kind in URL_KINDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_moving_the_address_without_the_secrets_is_a_400_naming_each(api, team, case: Case) -> None:
    integration = make_integration(team, case)
    before = snapshot(integration)

    response = patch(api, integration, {"config": case.move})

    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert body["errors"] == {key: [ADDRESS_CHANGED] for key in case.missing}
    assert body["detail"] == f"{case.missing[0]}: {ADDRESS_CHANGED}"
    assert snapshot(integration) == before
    assert not AuditEvent.objects.filter(action="integration.update").exists()


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_sending_back_the_masked_config_with_a_new_address_is_refused_too(api, team, case: Case) -> None:
    integration = make_integration(team, case)
    shown = api.get(f"{URL}/{integration.pk}").json()["config"]
    before = snapshot(integration)

    response = patch(api, integration, {"config": {**shown, **case.move}})

    assert response.status_code == 400, response.content
    assert response.json()["errors"] == {key: [ADDRESS_CHANGED] for key in case.missing}
    assert snapshot(integration) == before


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_moving_the_address_with_every_secret_given_again_saves_and_audits_it(api, team, case: Case) -> None:
    integration = make_integration(team, case)
    _, secrets_before = snapshot(integration)
    old_address = integration.config.get(case.field)

    response = patch(api, integration, {"config": {**case.move, **case.again}})

    assert response.status_code == 200, response.content
    config, secrets = snapshot(integration)
    assert config[case.field] == case.new
    assert secrets == secrets_before
    event = AuditEvent.objects.get(action="integration.update")
    assert event.data["address_changed"] == {case.field: {"from": old_address, "to": case.new}}
    assert not any(value in str(event.data) for value in case.stored_values())


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_a_cosmetic_change_of_address_keeps_the_secrets(api, team, case: Case) -> None:
    integration = make_integration(team, case)
    _, secrets_before = snapshot(integration)

    response = patch(api, integration, {"config": case.cosmetic})

    assert response.status_code == 200, response.content
    assert snapshot(integration)[1] == secrets_before
    assert AuditEvent.objects.get(action="integration.update").data["address_changed"] == {}


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_changing_anything_else_keeps_the_secrets(api, team, case: Case) -> None:
    integration = make_integration(team, case)
    shown = api.get(f"{URL}/{integration.pk}").json()["config"]
    _, secrets_before = snapshot(integration)

    response = patch(api, integration, {"name": "renamed", "timeout_s": 3, "config": shown})

    assert response.status_code == 200, response.content
    assert snapshot(integration)[1] == secrets_before
    assert AuditEvent.objects.get(action="integration.update").data["address_changed"] == {}


def test_each_secret_not_given_is_named_and_only_those(api, team) -> None:
    integration = make_integration(team, CASES["webhook"])

    moved = {"url": "https://hooks.corp.test/other", "secret": "a-new-secret-0123456"}

    response = patch(api, integration, {"config": moved})

    assert response.status_code == 400
    assert response.json()["errors"] == {"config.headers.Authorization": [ADDRESS_CHANGED]}


def test_a_secret_removed_in_the_same_request_need_not_be_given(api, team) -> None:
    integration = make_integration(team, CASES["webhook"])

    response = patch(
        api,
        integration,
        {"config": {"url": "https://hooks.corp.test/other", "secret": None, "headers": {"X-Env": "prod"}}},
    )

    assert response.status_code == 200, response.content
    config, secrets = snapshot(integration)
    assert config == {"url": "https://hooks.corp.test/other", "headers": {"X-Env": "prod"}}
    assert secrets == {}


def test_the_missing_secrets_come_with_the_configs_other_problems(api, team) -> None:
    integration = make_integration(team, CASES["langfuse"])

    response = patch(api, integration, {"config": {"host": "http://169.254.169.254/", "publicKey": ""}})

    errors = response.json()["errors"]
    assert response.status_code == 400
    assert errors["config.secretKey"] == [ADDRESS_CHANGED]
    assert "metadata" in " ".join(errors["config.host"]) and errors["config.publicKey"]


def test_an_integration_without_secrets_moves_freely(api, team) -> None:
    integration = make_integration(team, replace(CASES["webhook"], config={"url": "https://a.test/x"}))

    response = patch(api, integration, {"config": {"url": "https://b.test/y"}})

    assert response.status_code == 200, response.content
    assert AuditEvent.objects.get(action="integration.update").data["address_changed"] == {
        "url": {"from": "https://a.test/x", "to": "https://b.test/y"}
    }


def test_a_refused_move_leaves_deliveries_and_tests_at_the_stored_address(api, team) -> None:
    """The connection test of the stored integration still goes where the secret was saved for,
    and the server the move named never hears of it."""
    with FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-stored-0001") as home, FakeWebhookReceiver() as elsewhere:
        case = CASES["langfuse"]
        integration = make_integration(team, replace(case, config={**case.config, "host": home.url}))
        assert patch(api, integration, {"config": {"host": elsewhere.url}}).status_code == 400

        checked = api.post(f"{URL}/{integration.pk}/test").json()

    assert checked["ok"] is True, checked
    assert home.requests and not elsewhere.requests


def test_the_openapi_document_states_the_rule(api) -> None:
    schema = api.get("/api/v1/schema/?format=json").json()
    description = schema["paths"]["/api/v1/integrations/{integration_id}"]["patch"]["description"]
    assert ADDRESS_CHANGED in description and "address" in description
