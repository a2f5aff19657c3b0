"""The integrations API: CRUD, secrets (encrypted at rest, masked, kept on PATCH), validation per
platform, the connection test against fake servers, scopes, team isolation and the URL guard."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from accounts.models import AuditEvent
from config.crypto import decrypt_json
from integrations.models import Integration
from tests.factories import IntegrationFactory
from tests.fakes import FakeLangfuse, FakeWebhookReceiver, Reply

URL = "/api/v1/integrations"
PROBLEM = "application/problem+json"

LANGFUSE = {
    "name": "langfuse-prod",
    "platform": "langfuse",
    "config": {"publicKey": "pk-lf-public", "secretKey": "sk-lf-0123456789abcdef", "host": "http://127.0.0.1:3000"},
    "default_tags": ["tracerelay", "prod"],
    "metadata_mapping": {"customer": "account", "internal": None},
    "timeout_s": 5,
    "retry_policy": {"max_attempts": 5},
}


def create(api, body: dict[str, Any] | None = None, **overrides: Any):
    payload = {**(body or LANGFUSE), **overrides}
    return api.post(URL, payload, format="json")


def assert_problem(response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["type"].startswith("https://")
    return body


# --- create / read -------------------------------------------------------------------------------


def test_it_creates_an_integration_and_masks_its_secrets(api, team) -> None:
    response = create(api)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "langfuse-prod"
    assert body["platform"] == "langfuse"
    assert body["config"] == {"publicKey": "pk-lf-public", "secretKey": "****cdef", "host": "http://127.0.0.1:3000"}
    assert body["secrets_set"] == ["secretKey"]
    assert body["default_tags"] == ["tracerelay", "prod"]
    assert body["metadata_mapping"] == {"customer": "account", "internal": None}
    assert body["timeout_s"] == 5
    assert body["retry_policy"] == {"max_attempts": 5, "base_delay_s": 1.0, "max_delay_s": 300.0}
    assert body["enabled"] is True
    assert "sk-lf-0123456789abcdef" not in response.content.decode()


def test_the_secret_is_encrypted_in_the_database_row(api, team) -> None:
    create(api)
    row = Integration.objects.get(team=team, name="langfuse-prod")

    assert "secretKey" not in row.config
    assert "sk-lf-0123456789abcdef" not in row.secrets
    assert row.secrets.startswith("gAAAAA")  # a Fernet token
    assert decrypt_json(row.secrets) == {"secretKey": "sk-lf-0123456789abcdef"}


def test_secrets_never_appear_in_list_or_detail(api, team) -> None:
    integration_id = create(api).json()["id"]

    listed = api.get(URL)
    detail = api.get(f"{URL}/{integration_id}")

    assert listed.status_code == 200 and detail.status_code == 200
    for response in (listed, detail):
        assert "sk-lf-0123456789abcdef" not in response.content.decode()
    assert [i["name"] for i in listed.json()["data"]] == ["langfuse-prod"]
    assert detail.json()["config"]["secretKey"] == "****cdef"


def test_credential_headers_of_a_webhook_are_secret_too(api, team) -> None:
    body = {
        "name": "hook",
        "platform": "custom-webhook",
        "config": {
            "url": "http://127.0.0.1:9/hook",
            "headers": {"Authorization": "Bearer very-secret-token", "X-Team": "blue"},
            "secret": "whsec_abcdefghijklmnop",
        },
    }
    response = create(api, body)

    assert response.status_code == 201, response.content
    out = response.json()
    assert out["platform"] == "webhook"
    assert out["config"]["headers"] == {"X-Team": "blue", "Authorization": "****oken"}
    assert out["config"]["secret"] == "****mnop"
    assert out["secrets_set"] == ["headers.Authorization", "secret"]
    row = Integration.objects.get(team=team, name="hook")
    assert row.config["headers"] == {"X-Team": "blue"}
    assert "very-secret-token" not in str(row.config) + row.secrets


def test_snake_case_config_keys_are_accepted(api) -> None:
    body = {"name": "dd", "platform": "datadog", "config": {"api_key": "dd-0123456789", "ml_app": "shop"}}
    response = create(api, body)

    assert response.status_code == 201, response.content
    assert response.json()["config"] == {"apiKey": "****6789", "mlApp": "shop", "site": "datadoghq.com"}


def test_creating_writes_an_audit_event_without_secrets(api, team) -> None:
    create(api)
    event = AuditEvent.objects.get(team=team, action="integration.create")

    assert event.target == "langfuse-prod"
    assert event.actor.startswith("key:")
    assert "sk-lf" not in str(event.data)
    assert event.data["secrets"] == ["secretKey"]


def test_a_name_is_unique_per_team(api, other_api) -> None:
    assert create(api).status_code == 201

    clash = create(api)

    body = assert_problem(clash, 409)
    assert "name" in body["errors"]
    assert create(other_api).status_code == 201  # another team may use it


def test_a_name_may_not_be_another_platforms_name(api) -> None:
    body = assert_problem(create(api, name="helicone"), 400)
    assert "name" in body["errors"]
    assert create(api, name="langfuse").status_code == 201  # its own platform's name is fine


# --- validation ----------------------------------------------------------------------------------

INVALID_CONFIGS = [
    ("langfuse", {"publicKey": "pk"}, "config.secretKey"),
    ("langfuse", {"publicKey": "pk", "secretKey": "sk", "host": "not a url"}, "config.host"),
    ("langfuse", {"publicKey": "pk", "secretKey": "sk", "colour": "red"}, "config.colour"),
    ("langsmith", {"projectId": "p"}, "config.apiKey"),
    ("langsmith", {"apiKey": 12.5 == 0}, "config.apiKey"),
    ("helicone", {}, "config.apiKey"),
    ("datadog", {"apiKey": "k"}, "config.mlApp"),
    ("datadog", {"apiKey": "k", "mlApp": "Has Spaces"}, "config.mlApp"),
    ("datadog", {"apiKey": "k", "mlApp": "a", "site": "datadoghq.moon"}, "config.site"),
    ("mlflow", {"host": "http://127.0.0.1:5000"}, "config.experimentId"),
    ("mlflow", {"host": "http://127.0.0.1:5000", "experimentId": "1", "username": "u"}, "config.password"),
    ("phoenix", {"projectName": "x"}, "config.host"),
    ("weave", {"apiKey": "k", "entity": "acme"}, "config.project"),
    ("weave", {"apiKey": "k", "projectId": "no-slash"}, "config.projectId"),
    ("otlp", {"endpoint": "ftp://collector/v1/traces"}, "config.endpoint"),
    ("otlp", {"endpoint": "http://127.0.0.1:4318", "headers": {"Content-Type": "text/plain"}}, "config.headers"),
    ("otlp", {"endpoint": "http://127.0.0.1:4318", "headers": {"Bad Header": "x"}}, "config.headers"),
    ("otlp", {"endpoint": "http://127.0.0.1:4318", "headers": {"X-A": "line\nbreak"}}, "config.headers"),
    ("otlp", {"endpoint": "http://127.0.0.1:4318", "compression": "brotli"}, "config.compression"),
    ("webhook", {"headers": {}}, "config.url"),
    ("webhook", {"url": "http://127.0.0.1/h", "secret": "short"}, "config.secret"),
]


@pytest.mark.parametrize(("platform", "config", "field"), INVALID_CONFIGS)
def test_bad_config_is_a_400_naming_the_field(api, platform: str, config: dict, field: str) -> None:
    response = create(api, {"name": f"bad-{platform}", "platform": platform, "config": config})

    body = assert_problem(response, 400)
    assert field in body["errors"], body


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"platform": "splunk"}, "platform"),
        ({"name": ""}, "name"),
        ({"name": "-starts-with-dash"}, "name"),
        ({"config": "not an object"}, "config"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": 500}, "timeout_s"),
        ({"retry_policy": {"max_attempts": 0}}, "retry_policy.max_attempts"),
        ({"retry_policy": {"max_attempts": 3, "jitter": True}}, "retry_policy.jitter"),
        ({"retry_policy": {"base_delay_s": 10, "max_delay_s": 5}}, "retry_policy.max_delay_s"),
        ({"default_tags": "prod"}, "default_tags"),
        ({"default_tags": [" "]}, "default_tags"),
        ({"metadata_mapping": {"a": 5}}, "metadata_mapping.a"),
        ({"enabled": "maybe"}, "enabled"),
    ],
)
def test_bad_fields_are_400s(api, overrides: dict, field: str) -> None:
    body = assert_problem(create(api, **overrides), 400)
    assert any(key == field or key.startswith((field + ".", field + "[")) for key in body["errors"]), body


def test_a_body_that_is_not_an_object_is_a_400(api) -> None:
    assert_problem(api.post(URL, [1, 2], format="json"), 400)


def test_malformed_json_is_a_400(api) -> None:
    assert_problem(api.post(URL, "{not json", content_type="application/json"), 400)


def test_a_non_json_body_is_a_415(api) -> None:
    assert_problem(api.post(URL, "name=x", content_type="application/x-www-form-urlencoded"), 415)


# --- PATCH ---------------------------------------------------------------------------------------


def test_patch_without_the_secret_keeps_it(api, team) -> None:
    integration_id = create(api).json()["id"]

    response = api.patch(f"{URL}/{integration_id}", {"config": {"publicKey": "pk-lf-other"}}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["config"]["publicKey"] == "pk-lf-other"
    row = Integration.objects.get(pk=integration_id)
    assert decrypt_json(row.secrets) == {"secretKey": "sk-lf-0123456789abcdef"}


def test_patch_of_the_host_without_the_secret_is_refused_and_changes_nothing(api, team) -> None:
    integration_id = create(api).json()["id"]

    response = api.patch(f"{URL}/{integration_id}", {"config": {"host": "http://127.0.0.1:3001"}}, format="json")

    body = assert_problem(response, 400)
    assert body["errors"] == {"config.secretKey": ["Give the secret again: the address changed"]}
    row = Integration.objects.get(pk=integration_id)
    assert row.config["host"] == "http://127.0.0.1:3000"
    assert decrypt_json(row.secrets) == {"secretKey": "sk-lf-0123456789abcdef"}
    assert not AuditEvent.objects.filter(team=team, action="integration.update").exists()


def test_patch_of_the_host_with_the_secret_given_again_moves_it(api, team) -> None:
    integration_id = create(api).json()["id"]

    response = api.patch(
        f"{URL}/{integration_id}",
        {"config": {"host": "http://127.0.0.1:3001", "secretKey": "sk-lf-0123456789abcdef"}},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["config"]["host"] == "http://127.0.0.1:3001"
    event = AuditEvent.objects.get(team=team, action="integration.update")
    assert event.data["address_changed"] == {"host": {"from": "http://127.0.0.1:3000", "to": "http://127.0.0.1:3001"}}
    assert event.data["secrets_changed"] == []


def test_patch_with_the_masked_secret_sent_back_keeps_it(api) -> None:
    created = create(api).json()

    response = api.patch(f"{URL}/{created['id']}", {"config": created["config"]}, format="json")

    assert response.status_code == 200, response.content
    row = Integration.objects.get(pk=created["id"])
    assert decrypt_json(row.secrets) == {"secretKey": "sk-lf-0123456789abcdef"}


def test_patch_with_a_new_secret_replaces_it_and_audits_the_change(api, team) -> None:
    integration_id = create(api).json()["id"]

    response = api.patch(f"{URL}/{integration_id}", {"config": {"secretKey": "sk-lf-rotated-9999"}}, format="json")

    assert response.status_code == 200
    assert response.json()["config"]["secretKey"] == "****9999"
    assert decrypt_json(Integration.objects.get(pk=integration_id).secrets) == {"secretKey": "sk-lf-rotated-9999"}
    event = AuditEvent.objects.get(team=team, action="integration.update")
    assert event.data["secrets_changed"] == ["secretKey"]
    assert "rotated" not in str(event.data)


def test_patch_keeps_masked_credential_headers(api) -> None:
    body = {
        "name": "collector",
        "platform": "otlp",
        "config": {"endpoint": "http://127.0.0.1:4318", "headers": {"Authorization": "Bearer abcdefgh-1234"}},
    }
    created = create(api, body).json()
    shown = created["config"]["headers"]
    assert shown == {"Authorization": "****1234"}

    response = api.patch(f"{URL}/{created['id']}", {"config": {"headers": {**shown, "X-Scope": "a"}}}, format="json")

    assert response.status_code == 200, response.content
    row = Integration.objects.get(pk=created["id"])
    assert decrypt_json(row.secrets)["headers"] == {"Authorization": "Bearer abcdefgh-1234"}
    assert row.config["headers"] == {"X-Scope": "a"}


def test_patch_changes_other_fields_and_leaves_the_rest(api) -> None:
    integration_id = create(api).json()["id"]

    response = api.patch(
        f"{URL}/{integration_id}",
        {"enabled": False, "default_tags": ["x"], "retry_policy": {"max_delay_s": 60}, "name": "lf"},
        format="json",
    )

    body = response.json()
    assert response.status_code == 200
    assert body["enabled"] is False
    assert body["default_tags"] == ["x"]
    assert body["retry_policy"] == {"max_attempts": 5, "base_delay_s": 1.0, "max_delay_s": 60}
    assert body["name"] == "lf"
    assert body["timeout_s"] == 5
    assert body["metadata_mapping"] == {"customer": "account", "internal": None}


def test_patch_may_not_change_the_platform(api) -> None:
    integration_id = create(api).json()["id"]
    body = assert_problem(api.patch(f"{URL}/{integration_id}", {"platform": "helicone"}, format="json"), 400)
    assert "platform" in body["errors"]


def test_patch_validates_the_merged_config(api) -> None:
    integration_id = create(api).json()["id"]
    body = assert_problem(api.patch(f"{URL}/{integration_id}", {"config": {"secretKey": None}}, format="json"), 400)
    assert "config.secretKey" in body["errors"]


def test_patch_to_a_taken_name_is_a_409(api) -> None:
    create(api)
    other = create(api, name="second").json()["id"]
    assert_problem(api.patch(f"{URL}/{other}", {"name": "langfuse-prod"}, format="json"), 409)


# --- delete --------------------------------------------------------------------------------------


def test_delete_removes_it_and_audits(api, team) -> None:
    integration_id = create(api).json()["id"]

    response = api.delete(f"{URL}/{integration_id}")

    assert response.status_code == 204
    assert not Integration.objects.filter(pk=integration_id).exists()
    assert AuditEvent.objects.filter(team=team, action="integration.delete", target="langfuse-prod").exists()
    assert_problem(api.get(f"{URL}/{integration_id}"), 404)


# --- scopes and teams ----------------------------------------------------------------------------


def test_a_development_key_may_read_but_not_write(api, dev_api) -> None:
    integration_id = create(api).json()["id"]

    assert dev_api.get(URL).status_code == 200
    assert dev_api.get(f"{URL}/{integration_id}").status_code == 200
    assert assert_problem(create(dev_api, name="x"), 403)["required_scope"] == "integrations:write"
    assert_problem(dev_api.patch(f"{URL}/{integration_id}", {"enabled": False}, format="json"), 403)
    assert_problem(dev_api.delete(f"{URL}/{integration_id}"), 403)
    assert_problem(dev_api.post(f"{URL}/{integration_id}/test"), 403)


def test_a_ci_key_may_not_even_read(api, ci_api) -> None:
    integration_id = create(api).json()["id"]

    assert assert_problem(ci_api.get(URL), 403)["required_scope"] == "integrations:read"
    assert_problem(ci_api.get(f"{URL}/{integration_id}"), 403)
    assert_problem(create(ci_api, name="y"), 403)


def test_no_key_is_a_401(anon_api) -> None:
    assert_problem(anon_api.get(URL), 401)


def test_another_teams_integration_is_a_404(api, other_api, other_team) -> None:
    theirs = IntegrationFactory(team=other_team, name="theirs")

    for response in (
        api.get(f"{URL}/{theirs.pk}"),
        api.patch(f"{URL}/{theirs.pk}", {"enabled": False}, format="json"),
        api.delete(f"{URL}/{theirs.pk}"),
        api.post(f"{URL}/{theirs.pk}/test"),
    ):
        assert_problem(response, 404)
    assert api.get(URL).json()["data"] == []
    assert Integration.objects.get(pk=theirs.pk).enabled is True


# --- URL guard -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/", "http://metadata.google.internal/"]
)
def test_metadata_urls_are_refused(api, url: str) -> None:
    body = assert_problem(create(api, {"name": "evil", "platform": "webhook", "config": {"url": url}}), 400)
    assert "metadata" in body["errors"]["config.url"][0]


def test_private_urls_follow_the_setting(api) -> None:
    hook = {"name": "local", "platform": "webhook", "config": {"url": "http://127.0.0.1:8080/hook"}}
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        body = assert_problem(create(api, hook), 400)
        assert "private" in body["errors"]["config.url"][0]
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=True):
        assert create(api, hook).status_code == 201


# --- connection test -----------------------------------------------------------------------------


def test_the_connection_test_passes_against_a_real_server(api) -> None:
    with FakeLangfuse(public_key="pk-lf-public", secret_key="sk-lf-0123456789abcdef") as server:
        config = {**LANGFUSE["config"], "host": server.url}
        integration_id = create(api, config=config).json()["id"]

        response = api.post(f"{URL}/{integration_id}/test")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True, body
    assert body["status_code"] == 200
    assert isinstance(body["latency_ms"], int)
    assert set(body) == {"ok", "message", "status_code", "latency_ms"}
    assert server.requests[0].path == "/api/public/projects"


def test_the_connection_test_reports_bad_credentials(api) -> None:
    with FakeLangfuse(public_key="pk-lf-public", secret_key="another-secret") as server:
        config = {**LANGFUSE["config"], "host": server.url}
        integration_id = create(api, config=config).json()["id"]

        body = api.post(f"{URL}/{integration_id}/test").json()

    assert body["ok"] is False
    assert body["status_code"] == 401
    assert "Authentication failed" in body["message"]


def test_the_connection_test_reports_an_unreachable_host(api) -> None:
    with FakeWebhookReceiver() as server:
        url = server.url
    integration_id = create(api, {"name": "gone", "platform": "webhook", "config": {"url": url + "/hook"}}).json()["id"]

    body = api.post(f"{URL}/{integration_id}/test").json()

    assert body["ok"] is False
    assert "connection failed" in body["message"]
    assert body["status_code"] is None


def test_the_connection_test_honours_the_timeout(api) -> None:
    with FakeWebhookReceiver() as server:
        server.queue(Reply(200, b"", delay_s=2))
        body = {"name": "slow", "platform": "webhook", "config": {"url": server.url + "/hook"}, "timeout_s": 0.5}
        integration_id = create(api, body).json()["id"]
        result = api.post(f"{URL}/{integration_id}/test").json()

    assert result["ok"] is False
    assert "timed out after 0.5s" in result["message"]


def test_the_webhook_test_sends_a_ping_with_the_stored_secret(api) -> None:
    secret = "whsec_abcdefghijklmnop"
    with FakeWebhookReceiver(secret=secret) as server:
        body = {"name": "signed", "platform": "webhook", "config": {"url": server.url + "/hook", "secret": secret}}
        integration_id = create(api, body).json()["id"]
        result = api.post(f"{URL}/{integration_id}/test").json()

    assert result["ok"] is True, result
    assert server.pings and server.problems == []


def test_an_unsaved_config_can_be_tested(api) -> None:
    with FakeLangfuse(public_key="pk", secret_key="sk") as server:
        response = api.post(
            f"{URL}/test",
            {"platform": "langfuse", "config": {"publicKey": "pk", "secretKey": "sk", "host": server.url}},
            format="json",
        )

    assert response.status_code == 200
    assert response.json()["ok"] is True


def test_testing_an_invalid_unsaved_config_is_a_400(api) -> None:
    response = api.post(f"{URL}/test", {"platform": "langfuse", "config": {}}, format="json")
    body = assert_problem(response, 400)
    assert "config.publicKey" in body["errors"]


def test_the_api_is_in_the_openapi_schema_with_problem_responses(api) -> None:
    response = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json() if response["Content-Type"].startswith("application/json") else None
    if schema is None:
        import yaml  # drf-spectacular serves YAML by default

        schema = yaml.safe_load(response.content)
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/integrations"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/integrations/{integration_id}"])
    create_op = paths["/api/v1/integrations"]["post"]
    assert "application/problem+json" in create_op["responses"]["409"]["content"]
    assert "application/problem+json" in create_op["responses"]["400"]["content"]
    assert "post" in paths["/api/v1/integrations/{integration_id}/test"]


@pytest.mark.parametrize("field, value", [("enabled", 0), ("enabled", "true"), ("name", 5)])
def test_json_types_are_not_coerced(api, field, value):
    body = assert_problem(create(api, **{field: value}), 400)
    assert field in body["errors"]
