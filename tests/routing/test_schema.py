"""The routing operations in the OpenAPI document."""

from __future__ import annotations

import pytest

from routing.conditions import compile_condition


@pytest.mark.parametrize(
    ("path", "method", "codes"),
    [
        ("/api/v1/routing/rules", "get", {"200", "401", "403"}),
        ("/api/v1/routing/rules", "put", {"200", "400", "401", "403", "412", "415"}),
        ("/api/v1/routing/rules/{rule_id}", "get", {"200", "401", "403", "404"}),
        ("/api/v1/routing/sampling", "get", {"200", "401", "403"}),
        ("/api/v1/routing/sampling", "put", {"200", "400", "401", "403", "412", "415"}),
        ("/api/v1/routing/test", "post", {"200", "400", "401", "403", "413", "415"}),
    ],
)
def test_every_routing_operation_declares_its_responses(schema, path, method, codes):
    operation = schema["paths"][path][method]
    assert operation["tags"] == ["Routing"]
    assert codes <= set(operation["responses"])
    for code in codes - {"200"}:
        assert "application/problem+json" in operation["responses"][code]["content"]


def test_puts_declare_if_match_and_etag(schema):
    for path in ("/api/v1/routing/rules", "/api/v1/routing/sampling"):
        put = schema["paths"][path]["put"]
        assert any(p["name"] == "If-Match" and p["in"] == "header" for p in put["parameters"])
        assert "ETag" in put["responses"]["200"]["headers"]


def test_the_documented_examples_are_valid(schema):
    example = schema["paths"]["/api/v1/routing/rules"]["put"]["requestBody"]["content"]["application/json"]
    rules = next(iter(example["examples"].values()))["value"]["rules"]
    for rule in rules:
        compile_condition(rule.get("condition") or rule.get("conditions"))


# Each request shape whose API refuses unknown fields says so (additionalProperties: false), with
# the output-only fields a GET returns (and a PUT may send back) declared.
CLOSED = {
    "SamplingPolicyRequest": {"default_sample_rate", "rules", "version", "updated_at"},
    "SamplingRuleRequest": {"condition", "sample_rate"},
    "RoutingRuleSetRequest": {"rules", "version", "updated_at", "updated_by"},
    "RoutingRuleRequest": {
        *("id", "name", "description", "priority", "enabled", "conditions", "condition", "destination"),
        *("destinations", "sample_rate", "tags", "stop", "created_at", "updated_at", "service"),
    },
    "RetryPolicyRequest": {"max_attempts", "base_delay_s", "max_delay_s"},
    "PiiPolicyRequest": {"stored", "destinations", "kinds", "custom_patterns"},
    "PiiModeRequest": {"mode"},
    "PiiCustomPatternRequest": {"name", "regex"},
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_request_shapes_that_refuse_unknown_fields_say_so(components, name):
    assert components[name]["additionalProperties"] is False
    assert set(components[name]["properties"]) == CLOSED[name]


@pytest.mark.parametrize(
    ("url", "body", "path"),
    [
        ("/api/v1/routing/sampling", {"default_sample_rate": 1, "sample-rate": 1}, "sample-rate"),
        ("/api/v1/routing/sampling", {"rules": [{"condition": "error", "sample_rate": 1, "x": 1}]}, "rules[0].x"),
        ("/api/v1/routing/rules", {"rules": [], "verison": 3}, "verison"),
        ("/api/v1/routing/rules", {"rules": [{"name": "a", "destinations": [], "stopp": True}]}, "rules[0].stopp"),
    ],
)
def test_those_fields_are_refused_by_name(api, url, body, path):
    response = api.put(url, body, format="json")
    assert response.status_code == 400
    assert path in response.json()["errors"]


@pytest.mark.parametrize("url", ["/api/v1/routing/sampling", "/api/v1/routing/rules"])
def test_what_get_returned_may_be_sent_back(api, team, url):
    body = api.get(url).json()
    assert {"version", "updated_at"} <= set(body)
    assert api.put(url, body, format="json").status_code == 200
