"""/integrations/<id>/edit when an address changes (every platform): saving asks for each stored
secret again, with a form error on its field; "Test connection" at a changed address sends only
the secrets typed in the form, never stored ones; a cosmetic change of address keeps them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django import forms

from accounts.models import AuditEvent
from config.crypto import decrypt_json
from integrations import urlguard
from integrations.models import Integration
from integrations.views.forms import ADDRESS_HELP, IntegrationForm, pairs_text
from tests.fakes import FakeServer, FakeWebhookReceiver, Reply
from tests.integrations.address_cases import (
    ADDRESS_CHANGED,
    CASE_PARAMS,
    CASES,
    Case,
    leaked,
    make_integration,
    no_dns,
)

pytestmark = pytest.mark.django_db

# The check of these goes to the moved field; Helicone's checks its apiUrl (not its logging
# endpoint), and Datadog's site cannot name a fake server.
CHECKED_AT_THE_MOVED_FIELD = [p for p in CASE_PARAMS if p.id not in ("helicone", "datadog-site")]
# Their stored secrets are optional: the check runs without them.
RUNS_WITHOUT_THEM = {"phoenix", "mlflow", "otlp", "webhook"}


@pytest.fixture(autouse=True)
def _no_dns(monkeypatch) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", no_dns)


def browser_form(integration: Integration, **changes: str) -> dict[str, str]:
    """The edit form as a browser posts it untouched: every value shown, password fields empty."""
    form = IntegrationForm(platform=integration.platform, integration=integration)
    data: dict[str, str] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field.widget, forms.PasswordInput):
            data[name] = ""
        elif isinstance(field.widget, forms.CheckboxInput):
            if value:
                data[name] = "on"
        else:
            data[name] = "" if value is None else str(value)
    return {**data, **changes}


def typed_again(case: Case) -> dict[str, str]:
    """Every stored secret typed in its field (credential headers in the headers box)."""
    typed = {f"config_{k}": v for k, v in case.again.items() if k != "headers"}
    if "headers" in case.again:
        typed["config_headers"] = pairs_text(case.again["headers"], ": ")
    return typed


def form_errors_for(case: Case) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key in case.missing:
        _, field, *header = key.split(".")
        message = f"{header[0]}: {ADDRESS_CHANGED}" if header else ADDRESS_CHANGED
        errors.setdefault(f"config_{field}", []).append(message)
    return errors


def stored(integration: Integration) -> tuple[dict[str, Any], dict[str, Any]]:
    row = Integration.objects.get(pk=integration.pk)
    return dict(row.config), decrypt_json(row.secrets)


# --- save -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_saving_a_new_address_without_the_secrets_shows_an_error_on_each(as_role, team, case: Case):
    integration = make_integration(team, case)
    before = stored(integration)

    response = as_role("admin").post(
        f"/integrations/{integration.pk}/edit", browser_form(integration, **{f"config_{case.field}": case.new})
    )

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert {k: v for k, v in errors.items() if k in form_errors_for(case)} == form_errors_for(case), errors
    assert set(errors) == set(form_errors_for(case)), errors
    text = response.content.decode()
    assert ADDRESS_CHANGED in text and "Nothing was saved" in text
    assert not any(value in text for value in case.stored_values())
    assert stored(integration) == before
    assert not AuditEvent.objects.filter(action="integration.update").exists()


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_saving_a_new_address_with_the_secrets_typed_again_moves_it(as_role, team, case: Case):
    integration = make_integration(team, case)
    _, secrets_before = stored(integration)
    form = browser_form(integration, **{f"config_{case.field}": case.new}, **typed_again(case))

    response = as_role("owner").post(f"/integrations/{integration.pk}/edit", form)

    assert response.status_code == 302, response.context["form"].errors if response.context else response
    config, secrets = stored(integration)
    assert config[case.field] == case.new and secrets == secrets_before
    event = AuditEvent.objects.get(action="integration.update")
    assert list(event.data["address_changed"]) == [case.field]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_a_cosmetic_change_of_address_saves_with_the_secrets_left_blank(as_role, team, case: Case):
    integration = make_integration(team, case)
    _, secrets_before = stored(integration)
    field, value = next(iter(case.cosmetic.items()))

    form = browser_form(integration, **{f"config_{field}": value})

    response = as_role("admin").post(f"/integrations/{integration.pk}/edit", form)

    assert response.status_code == 302, response.context["form"].errors if response.context else response
    assert stored(integration)[1] == secrets_before
    assert AuditEvent.objects.get(action="integration.update").data["address_changed"] == {}


def test_an_address_field_says_the_secrets_will_be_asked_for_again(as_role, team):
    with_secrets = make_integration(team, CASES["webhook"])
    without = make_integration(team, replace(CASES["webhook"], config={"url": "https://a.test/x"}), "plain")
    client = as_role("admin")

    assert ADDRESS_HELP in client.get(f"/integrations/{with_secrets.pk}/edit").content.decode()
    assert ADDRESS_HELP not in client.get(f"/integrations/{without.pk}/edit").content.decode()
    assert ADDRESS_HELP not in client.get("/integrations/new/webhook").content.decode()


# --- test connection -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CHECKED_AT_THE_MOVED_FIELD)
def test_test_connection_at_a_new_address_never_sends_a_stored_secret(as_role, team, case: Case):
    integration = make_integration(team, case)
    with FakeServer(default=Reply(200, {})) as fake:
        form = browser_form(integration, **{f"config_{case.field}": fake.url + "/in"}, test="1")

        response = as_role("admin").post(f"/integrations/{integration.pk}/edit", form)

        assert leaked(fake.requests, case.stored_values()) == []
        if case.platform in RUNS_WITHOUT_THEM and case.missing != ("config.password",):
            assert response.status_code == 200, response.context["form"].errors
            assert fake.requests, "the check ran, without the stored secrets"
            assert "Stored secrets not sent: the address changed" in response.context["check"]["message"]
        else:  # a required secret: nothing to test with until it is typed
            assert response.status_code == 400
            errors = response.context["form"].errors
            assert all(errors[field] == messages for field, messages in form_errors_for(case).items()), errors
            assert fake.requests == []
    assert stored(integration)[0].get(case.field) == case.config.get(case.field, integration.config.get(case.field))


@pytest.mark.parametrize("case", CHECKED_AT_THE_MOVED_FIELD)
def test_test_connection_at_a_new_address_sends_the_secrets_typed(as_role, team, case: Case):
    integration = make_integration(team, case)
    retyped = {k: (v.replace("stored", "typed") if isinstance(v, str) else v) for k, v in typed_again(case).items()}
    typed_values = tuple(v.replace("stored", "typed") for v in case.stored_values())
    with FakeServer(default=Reply(200, {})) as fake:
        form = browser_form(integration, **{f"config_{case.field}": fake.url + "/in"}, **retyped, test="1")

        response = as_role("admin").post(f"/integrations/{integration.pk}/edit", form)

        assert response.status_code == 200, response.context["form"].errors
        assert fake.requests
        assert leaked(fake.requests, case.stored_values()) == []
        if case.platform != "webhook":  # a webhook's secret signs the ping; it is never sent itself
            assert leaked(fake.requests, typed_values) == sorted(typed_values)
        assert "not sent" not in response.context["check"]["message"]
    _, secrets = stored(integration)
    assert not any("typed" in str(value) for value in secrets.values())  # tested, not saved


def test_the_webhook_ping_at_a_new_address_is_signed_with_the_typed_secret_only(as_role, team):
    integration = make_integration(team, CASES["webhook"])
    client = as_role("admin")
    with FakeWebhookReceiver(secret="whsec-typed-0123456789") as fake:
        blank = browser_form(integration, config_url=fake.url + "/hook", test="1")
        unsigned = client.post(f"/integrations/{integration.pk}/edit", blank)
        typed = client.post(
            f"/integrations/{integration.pk}/edit", {**blank, "config_secret": "whsec-typed-0123456789"}
        )
        pings = list(fake.requests)

    assert unsigned.status_code == 200 and typed.status_code == 200
    assert "bad signature" in unsigned.context["check"]["message"]  # the receiver wanted one: none was sent
    assert "accepted a signed ping" in typed.context["check"]["message"]
    assert pings[0].header("x-tracerelay-signature") is None
    assert pings[0].header("authorization") is None
    assert typed.context["check"]["ok"] is True, typed.context["check"]  # the receiver checked the signature
    assert "not sent: the address changed (Authorization header)" in typed.context["check"]["message"]


def test_test_connection_at_the_same_address_still_uses_the_stored_secrets(as_role, team):
    with FakeServer(default=Reply(200, {})) as fake:
        case = CASES["otlp"]
        integration = make_integration(team, replace(case, config={**case.config, "endpoint": fake.url + "/v1/traces"}))
        form = browser_form(integration, config_endpoint=f"HTTP://127.0.0.1:{fake.port}/v1/traces/", test="1")

        response = as_role("admin").post(f"/integrations/{integration.pk}/edit", form)

        assert response.status_code == 200, response.context["form"].errors
        assert fake.requests and fake.requests[-1].header("authorization") == "Bearer otlp-stored-01"
    assert "not sent" not in response.context["check"]["message"]
