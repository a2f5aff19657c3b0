"""PATCH /api/v1/upstreams/{id} and the admin's upstream form: a stored provider key or credential
header only goes to the base URL it was saved with. A new base URL must give each again (else a 400
naming each); a cosmetic change of the URL, or a change of anything else, keeps them."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from traces.models import Upstream
from traces.proxy import services
from traces.proxy.upstreams import stored_secrets

ADDRESS_CHANGED = "Give the secret again: the address changed"
BASE = "http://127.0.0.1:8401/openai/v1"
GROQ = {
    "name": "groq",
    "base_url": BASE,
    "provider": "groq",
    "api_key": "gsk_stored_1234",
    "headers": {"Authorization": "Bearer hdr-stored-5678", "X-Title": "app"},
}


@pytest.fixture
def groq(team) -> Upstream:
    return services.upstream_create(team_id=team.pk, data=services.UpstreamInput(**GROQ), actor="test")


def patch(api, upstream: Upstream, body: dict[str, Any]):
    return api.patch(f"/api/v1/upstreams/{upstream.pk}", body, format="json")


def snapshot(upstream: Upstream) -> tuple[str, dict[str, Any], dict[str, Any]]:
    row = Upstream.objects.get(pk=upstream.pk)
    return row.base_url, dict(row.headers), stored_secrets(row)


def test_a_new_base_url_without_the_secrets_is_a_400_naming_each(api, groq):
    before = snapshot(groq)

    response = patch(api, groq, {"base_url": "http://127.0.0.1:8402/openai/v1"})

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["errors"] == {
        "api_key": [ADDRESS_CHANGED],
        "headers.authorization": [ADDRESS_CHANGED],
    }
    assert snapshot(groq) == before
    assert not AuditEvent.objects.filter(action="upstream.update").exists()


def test_sending_back_what_get_showed_with_a_new_base_url_is_refused_too(api, groq):
    shown = api.get(f"/api/v1/upstreams/{groq.pk}").json()
    body = {"base_url": "https://api.groq.com/openai/v1", "api_key": shown["api_key"], "headers": shown["headers"]}

    response = patch(api, groq, body)

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"api_key", "headers.authorization"}
    assert snapshot(groq)[0] == BASE


def test_only_the_secrets_not_given_are_named(api, groq):
    response = patch(api, groq, {"base_url": "http://127.0.0.1:8402/openai/v1", "api_key": "gsk_new_9999"})

    assert response.status_code == 400
    assert response.json()["errors"] == {"headers.authorization": [ADDRESS_CHANGED]}


def test_a_new_base_url_with_every_secret_given_again_is_saved_and_audited(api, groq):
    moved = "http://127.0.0.1:8402/openai/v1"
    body = {"base_url": moved, "api_key": "gsk_stored_1234", "headers": GROQ["headers"]}

    response = patch(api, groq, body)

    assert response.status_code == 200, response.content
    base_url, headers, secrets = snapshot(groq)
    assert base_url == moved and headers == {"x-title": "app"}
    assert secrets == {"api_key": "gsk_stored_1234", "headers": {"authorization": "Bearer hdr-stored-5678"}}
    event = AuditEvent.objects.get(action="upstream.update")
    assert event.data["address_changed"] == {"base_url": {"from": BASE, "to": moved}}
    assert "stored" not in str(event.data)


def test_secrets_removed_in_the_same_request_need_not_be_given(api, groq):
    response = patch(api, groq, {"base_url": "https://openrouter.ai/api/v1", "api_key": "", "headers": {}})

    assert response.status_code == 200, response.content
    assert snapshot(groq) == ("https://openrouter.ai/api/v1", {}, {})


@pytest.mark.parametrize(
    "cosmetic",
    [
        "http://127.0.0.1:8401/openai/v1/",
        "HTTP://127.0.0.1:8401/openai/v1",
        " http://127.0.0.1:8401/openai/v1 ",
    ],
)
def test_a_cosmetic_change_of_the_base_url_keeps_the_secrets(api, groq, cosmetic):
    secrets_before = snapshot(groq)[2]

    response = patch(api, groq, {"base_url": cosmetic})

    assert response.status_code == 200, response.content
    assert snapshot(groq)[2] == secrets_before
    assert AuditEvent.objects.get(action="upstream.update").data["address_changed"] == {}


def test_the_default_port_and_the_hosts_case_are_no_change(api, team):
    upstream = services.upstream_create(
        team_id=team.pk,
        data=services.UpstreamInput(name="oai", base_url="https://api.openai.example/v1", api_key="sk-stored-1"),
        actor="test",
    )

    response = patch(api, upstream, {"base_url": "https://API.OpenAI.example:443/v1/"})

    assert response.status_code == 200, response.content
    assert stored_secrets(Upstream.objects.get(pk=upstream.pk)) == {"api_key": "sk-stored-1"}


def test_changing_anything_else_keeps_the_secrets(api, groq):
    shown = api.get(f"/api/v1/upstreams/{groq.pk}").json()
    secrets_before = snapshot(groq)[2]

    response = patch(api, groq, {"provider": "groq-eu", "is_default": True, "headers": shown["headers"]})

    assert response.status_code == 200, response.content
    assert snapshot(groq)[2] == secrets_before


def test_an_upstream_without_secrets_moves_freely(api, team):
    upstream = services.upstream_create(
        team_id=team.pk, data=services.UpstreamInput(name="ollama", base_url="http://127.0.0.1:11434/v1"), actor="t"
    )

    response = patch(api, upstream, {"base_url": "http://127.0.0.1:11435/v1"})

    assert response.status_code == 200, response.content


def test_the_openapi_document_states_the_rule(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    description = schema["paths"]["/api/v1/upstreams/{upstream_id}"]["patch"]["description"]
    assert "base_url" in description and ADDRESS_CHANGED in description


# --- the Django admin's form -----------------------------------------------------------------------


@pytest.fixture
def superuser_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def admin_form(team, **changes: str) -> dict[str, Any]:
    """The change form as the admin posts it untouched: headers shown masked, the key field empty."""
    return {
        "team": team.pk,
        "name": "groq",
        "kind": "openai",
        "base_url": BASE,
        "provider": "groq",
        "headers": '{"x-title": "app", "authorization": "****5678"}',
        **changes,
    }


def test_the_admin_asks_for_the_secrets_again_under_their_fields(superuser_client, team, groq):
    before = snapshot(groq)

    response = superuser_client.post(
        f"/admin/traces/upstream/{groq.pk}/change/", admin_form(team, base_url="http://127.0.0.1:8402/v1")
    )

    assert response.status_code == 200  # the form again
    errors = response.context["adminform"].form.errors
    assert errors["new_api_key"] == [ADDRESS_CHANGED]
    assert errors["headers"] == [f"authorization: {ADDRESS_CHANGED}"]
    assert snapshot(groq) == before


def test_the_admin_moves_an_upstream_with_the_secrets_typed_again(superuser_client, team, groq):
    form = admin_form(
        team,
        base_url="http://127.0.0.1:8402/v1",
        new_api_key="gsk_typed_0000",
        headers='{"x-title": "app", "authorization": "Bearer hdr-typed-0000"}',
    )

    response = superuser_client.post(f"/admin/traces/upstream/{groq.pk}/change/", form)

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert snapshot(groq) == (
        "http://127.0.0.1:8402/v1",
        {"x-title": "app"},
        {"api_key": "gsk_typed_0000", "headers": {"authorization": "Bearer hdr-typed-0000"}},
    )


def test_the_admin_saves_other_changes_with_the_secrets_left_as_shown(superuser_client, team, groq):
    secrets_before = snapshot(groq)[2]

    response = superuser_client.post(f"/admin/traces/upstream/{groq.pk}/change/", admin_form(team, provider="x"))

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert snapshot(groq)[2] == secrets_before


# --- what the proxy sends -------------------------------------------------------------------------


def test_the_proxy_sends_the_stored_key_only_to_its_address(api, http, fake_upstream, team):
    chat = {"model": "llama-3.1-8b-instant", "messages": [{"role": "user", "content": "Hi"}]}
    upstream = services.upstream_create(
        team_id=team.pk,
        data=services.UpstreamInput(name="groq", base_url=fake_upstream.url + "/v1", api_key="gsk_stored_key"),
        actor="test",
    )
    # The same server by another name: a new address to the rule, so the key must be typed again.
    elsewhere = fake_upstream.url.replace("127.0.0.1", "localhost") + "/v1"

    assert patch(api, upstream, {"base_url": elsewhere}).status_code == 400
    http.post("/u/groq/chat/completions", json=chat)
    assert fake_upstream.last().headers["Host"].startswith("127.0.0.1")
    assert fake_upstream.last().headers["Authorization"] == "Bearer gsk_stored_key"

    assert patch(api, upstream, {"base_url": elsewhere, "api_key": "gsk_typed_key"}).status_code == 200
    http.post("/u/groq/chat/completions", json=chat)
    assert fake_upstream.last().headers["Host"].startswith("localhost")
    assert fake_upstream.last().headers["Authorization"] == "Bearer gsk_typed_key"
