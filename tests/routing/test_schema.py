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
