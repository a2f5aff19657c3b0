"""The OpenAPI document describes the trace and plant operations completely."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_is_served_without_a_key(anon_api):
    r = anon_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    assert r.json()["openapi"].startswith("3.")
    assert anon_api.get("/api/v1/docs/").status_code == 200


def test_a_problem_component_describes_every_error(schema):
    problem = schema["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}
    assert "errors" in problem["properties"]


@pytest.mark.parametrize(
    ("path", "method", "codes"),
    [
        ("/api/v1/traces", "get", {"200", "400", "401", "403"}),
        ("/api/v1/traces", "post", {"200", "201", "400", "401", "403", "413", "415"}),
        ("/api/v1/traces/batch", "post", {"200", "207", "400", "401", "403", "413", "415"}),
        ("/api/v1/traces/{trace_id}", "get", {"200", "401", "403", "404"}),
        ("/plants", "get", {"200", "400", "401", "403"}),
    ],
)
def test_each_operation_declares_its_answers(schema, path, method, codes):
    operation = schema["paths"][path][method]
    assert operation["tags"] == ["Trace Management"]
    assert codes <= set(operation["responses"])
    for code, response in operation["responses"].items():
        if code.startswith(("4", "5")):
            assert list(response["content"]) == [PROBLEM], (path, method, code)
            assert response["content"][PROBLEM]["schema"] == {"$ref": "#/components/schemas/Problem"}
    # An API key; a person's user token with X-Team is listed too (docs/cli.md): it reads with the role's
    # scopes and never ingests (403), which the operation's 403 answer covers.
    assert {"ApiKey": []} in operation["security"] and set().union(*operation["security"]) <= {"ApiKey", "UserToken"}


def test_plants_is_an_array_of_name_and_tag(schema):
    ok = schema["paths"]["/plants"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["type"] == "array"
    plant = schema["components"]["schemas"][ok["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(plant["properties"]) == {"name", "tag"}
    [limit] = schema["paths"]["/plants"]["get"]["parameters"]
    assert limit["name"] == "limit" and limit["schema"]["minimum"] == 1


def test_the_feed_documents_every_filter(schema):
    names = {p["name"] for p in schema["paths"]["/api/v1/traces"]["get"]["parameters"]}
    assert names >= {
        "model", "provider", "status", "cost_min", "cost_max", "latency_min", "latency_max", "destination",
        "tag", "metadata.<key>", "environment", "since", "until", "time_range", "limit", "cursor",
    }  # fmt: skip


def test_the_api_key_scheme_is_bearer(schema):
    assert schema["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"


def test_the_docs_page_needs_no_cdn(anon_api):
    page = anon_api.get("/api/v1/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert "cdn" not in page.lower()
    assert anon_api.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js").status_code == 200
