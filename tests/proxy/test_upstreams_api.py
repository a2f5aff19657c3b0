"""/api/v1/upstreams: CRUD with masked secrets, scopes, team isolation, validation; and the admin."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from traces.models import Upstream
from traces.proxy import services

GROQ = {"name": "groq", "base_url": "https://api.groq.com/openai/v1", "provider": "groq", "api_key": "gsk_secret1234"}


@pytest.fixture
def groq(team) -> Upstream:
    return services.upstream_create(team_id=team.pk, data=services.UpstreamInput(**GROQ), actor="test")


def test_it_creates_an_upstream_with_its_secrets_encrypted_and_masked(api, team):
    response = api.post(
        "/api/v1/upstreams",
        {**GROQ, "headers": {"X-Title": "app", "Authorization": "Bearer other-secret"}},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "groq" and body["kind"] == "openai" and body["provider"] == "groq"
    assert body["api_key"] == "****1234"
    assert body["headers"] == {"x-title": "app", "authorization": "****cret"}
    assert body["proxy_path"] == "/api/v1/proxy/u/groq"
    row = Upstream.objects.get(team=team, name="groq")
    assert "gsk_secret1234" not in row.api_key and "other-secret" not in row.api_key
    assert row.headers == {"x-title": "app"}
    assert AuditEvent.objects.filter(team=team, action="upstream.create", target="groq").exists()


def test_it_lists_and_reads_only_the_teams_upstreams(api, other_api, groq, other_team):
    services.upstream_create(
        team_id=other_team.pk, data=services.UpstreamInput(name="theirs", base_url="https://x.example/v1"), actor="t"
    )

    listed = api.get("/api/v1/upstreams").json()["data"]
    assert [u["name"] for u in listed] == ["groq"]
    assert listed[0]["api_key"] == "****1234"
    assert api.get(f"/api/v1/upstreams/{groq.pk}").json()["name"] == "groq"
    assert other_api.get(f"/api/v1/upstreams/{groq.pk}").status_code == 404
    assert other_api.patch(f"/api/v1/upstreams/{groq.pk}", {"provider": "x"}, format="json").status_code == 404
    assert other_api.delete(f"/api/v1/upstreams/{groq.pk}").status_code == 404


def test_patch_keeps_a_masked_key_replaces_a_new_one_and_removes_an_empty_one(api, groq):
    url = f"/api/v1/upstreams/{groq.pk}"

    kept = api.patch(url, {"api_key": "****1234", "provider": "groq-eu"}, format="json")
    assert kept.status_code == 200 and kept.json()["provider"] == "groq-eu"
    assert services.masked_key(Upstream.objects.get(pk=groq.pk)) == "****1234"
    from traces.proxy.upstreams import stored_secrets

    assert stored_secrets(Upstream.objects.get(pk=groq.pk))["api_key"] == "gsk_secret1234"

    assert api.patch(url, {"api_key": "gsk_newkey9876"}, format="json").json()["api_key"] == "****9876"
    assert api.patch(url, {"api_key": ""}, format="json").json()["api_key"] is None


def test_one_default_per_family(api, team):
    first = api.post("/api/v1/upstreams", {**GROQ, "is_default": True}, format="json").json()
    claude = api.post(
        "/api/v1/upstreams",
        {"name": "claude", "kind": "anthropic", "base_url": "https://api.anthropic.com", "is_default": True},
        format="json",
    ).json()
    second = api.post(
        "/api/v1/upstreams", {"name": "vllm", "base_url": "http://10.0.0.5:8000/v1", "is_default": True}, format="json"
    ).json()

    defaults = {u["name"]: u["is_default"] for u in api.get("/api/v1/upstreams").json()["data"]}
    assert defaults == {"groq": False, "claude": True, "vllm": True}
    assert first["is_default"] and claude["is_default"] and second["is_default"]


def test_it_deletes(api, groq, team):
    assert api.delete(f"/api/v1/upstreams/{groq.pk}").status_code == 204
    assert not Upstream.objects.filter(pk=groq.pk).exists()
    assert AuditEvent.objects.filter(team=team, action="upstream.delete").exists()
    assert api.get(f"/api/v1/upstreams/{groq.pk}").status_code == 404


def test_a_taken_name_is_a_409(api, groq):
    response = api.post("/api/v1/upstreams", GROQ, format="json")
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert "name" in response.json()["errors"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "Bad Name!", "base_url": "https://x.example/v1"}, "name"),
        ({"name": "ok", "base_url": "ftp://x.example/v1"}, "base_url"),
        ({"name": "ok", "base_url": "http://169.254.169.254/latest"}, "base_url"),
        ({"name": "ok", "base_url": "http://metadata.google.internal/v1"}, "base_url"),
        ({"name": "ok", "base_url": "https://x.example/v1", "kind": "bedrock"}, "kind"),
        ({"name": "ok", "base_url": "https://x.example/v1", "headers": {"Host": "evil"}}, "headers"),
        ({"name": "ok", "base_url": "https://x.example/v1", "headers": {"X-Service-Key": "k"}}, "headers"),
        ({"name": "ok", "base_url": "https://x.example/v1", "headers": {"bad name": "v"}}, "headers"),
        ({"name": "ok", "base_url": "https://x.example/v1", "headers": {"X-A": "line\r\nX-B: injected"}}, "headers"),
        ({"base_url": "https://x.example/v1"}, "name"),
        ({"name": "ok"}, "base_url"),
        ({"name": "ok", "base_url": "https://x.example/v1", "is_default": 0}, "is_default"),
        ({"name": 5, "base_url": "https://x.example/v1"}, "name"),
    ],
)
def test_bad_input_is_a_400_problem(api, body, field):
    response = api.post("/api/v1/upstreams", body, format="json")

    assert response.status_code == 400, response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert field in response.json()["errors"]
    assert not Upstream.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(api):
    response = api.post("/api/v1/upstreams", ["x"], format="json")
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"


def test_development_keys_may_read_but_not_write(dev_api, groq):
    assert dev_api.get("/api/v1/upstreams").status_code == 200
    for response in (
        dev_api.post("/api/v1/upstreams", {**GROQ, "name": "x"}, format="json"),
        dev_api.patch(f"/api/v1/upstreams/{groq.pk}", {"provider": "x"}, format="json"),
        dev_api.delete(f"/api/v1/upstreams/{groq.pk}"),
    ):
        assert response.status_code == 403
        assert response.json()["type"].endswith("/insufficient-scope")


def test_ci_keys_and_no_key_are_refused(ci_api, anon_api):
    assert ci_api.get("/api/v1/upstreams").status_code == 403
    assert anon_api.get("/api/v1/upstreams").status_code == 401


def test_the_openapi_schema_documents_the_upstreams_api_and_the_proxy(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    assert {"get", "post"} <= set(schema["paths"]["/api/v1/upstreams"])
    assert {"get", "patch", "delete"} <= set(schema["paths"]["/api/v1/upstreams/{upstream_id}"])
    proxy = schema["paths"]["/api/v1/proxy/{path}"]["post"]
    assert {p["name"] for p in proxy["parameters"]} >= {"path", "X-Service-Metadata", "X-Service-Upstream"}
    assert "X-Service-ID" in proxy["responses"]["200"]["headers"]
    assert "/api/v1/proxy/anthropic/{path}" in schema["paths"]
    assert "/api/v1/proxy/u/{upstream}/{path}" in schema["paths"]
    assert schema["components"]["securitySchemes"]["ServiceKey"]["name"] == "X-Service-Key"


def test_the_admin_creates_and_edits_upstreams_with_an_encrypted_key(client, team, django_user_model):
    admin_user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)

    assert client.get("/admin/traces/upstream/").status_code == 200
    response = client.post(
        "/admin/traces/upstream/add/",
        {
            "team": team.pk,
            "name": "ollama",
            "kind": "openai",
            "base_url": "http://127.0.0.1:11434/v1",
            "provider": "ollama",
            "new_api_key": "ollama-secret-key",
            "headers": '{"X-Extra": "1"}',
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    row = Upstream.objects.get(team=team, name="ollama")
    assert services.masked_key(row) == "****-key"
    assert "ollama-secret-key" not in row.api_key

    page = client.get(f"/admin/traces/upstream/{row.pk}/change/").content.decode()
    assert "****-key" in page and "ollama-secret-key" not in page

    bad = client.post(
        f"/admin/traces/upstream/{row.pk}/change/",
        {"team": team.pk, "name": "ollama", "kind": "openai", "base_url": "http://169.254.169.254/", "headers": "{}"},
    )
    assert bad.status_code == 200  # the form again, with the error
    assert "metadata" in bad.content.decode()
    assert Upstream.objects.get(pk=row.pk).base_url == "http://127.0.0.1:11434/v1"
