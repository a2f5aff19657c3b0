"""POST /api/v1/routing/test: where traces would go, and why."""

from __future__ import annotations

import pytest

from routing.models import RoutingRule, SamplingPolicy
from routing.router import sample_point
from traces.models import Trace

URL = "/api/v1/routing/test"
RULES_URL = "/api/v1/routing/rules"
PROBLEM = "application/problem+json"


def assert_problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    return response.json()


def some_id_with_point(low: float, high: float) -> str:
    for i in range(100_000):
        if low <= sample_point(f"dry-{i}") < high:
            return f"dry-{i}"
    raise AssertionError


@pytest.fixture
def rules(api, integrations):
    response = api.put(
        RULES_URL,
        {
            "rules": [
                {"name": "errors", "priority": 1, "conditions": {"error": True}, "destination": "langfuse"},
                {"name": "expensive", "priority": 2, "condition": "cost > 0.05", "destination": "lf-prod"},
                {
                    "name": "sampled",
                    "priority": 3,
                    "destinations": [{"name": "helicone", "sample_rate": 0.1}],
                },
                {
                    "name": "prod only",
                    "priority": 4,
                    "condition": 'metadata.env == "prod"',
                    "destination": "audit-hook",
                },
            ]
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_it_explains_one_trace(api, rules):
    trace_id = some_id_with_point(0.5, 1.0)
    response = api.post(URL, {"id": trace_id, "model": "gpt-4o", "status": "error"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["rules_version"] == 1 and body["sampling_version"] == 0
    (result,) = body["results"]
    assert result["trace_id"] == trace_id
    assert result["destinations"] == ["langfuse"]
    assert [d["destination"] for d in result["sampled_out"]] == ["helicone"]
    assert result["sampled_out"][0]["rule"] == "sampled"
    assert result["sampled_out"][0]["reason"].startswith("sampled out:")
    assert result["sampled_out"][0]["spec"] == {"name": "helicone", "sample_rate": 0.1, "tags": [], "fallback": []}
    assert result["matched_rules"] == ["errors", "sampled"]
    assert result["sample_point"] == sample_point(trace_id)
    assert result["policy"] == {"rate": 1.0, "reason": "default sample rate"}
    assert [(e["rule"], e["matched"]) for e in result["evaluations"]] == [
        ("errors", True),
        ("expensive", False),
        ("sampled", True),
        ("prod only", False),
    ]
    assert result["evaluations"][3]["reason"] == "condition error, counted as no match: no such key 'env'"
    assert result["errors"] == [{"rule": "prod only", "error": "no such key 'env'"}]
    assert result["trace"]["error"] is True and result["trace"]["provider"] == "openai"
    assert not Trace.objects.exists(), "a dry run stores nothing"


def test_cost_conditions_see_the_computed_cost(api, rules):
    body = api.post(
        URL, {"id": "pricey", "model": "gpt-4o", "prompt_tokens": 20_000, "completion_tokens": 5_000}, format="json"
    ).json()
    (result,) = body["results"]
    assert result["trace"]["cost"] > 0.05
    assert "lf-prod" in result["destinations"]
    assert "expensive" in result["matched_rules"]


def test_conditions_see_the_token_parts(api, integrations):
    rules = [
        {"name": "cached", "condition": "cached_tokens * 2 > prompt_tokens", "destination": "lf-prod"},
        {"name": "thinking", "condition": {"reasoning_tokens": ">=500"}, "destination": "audit-hook"},
        {"name": "cache writes", "condition": {"cache_write_tokens": ">0"}, "destination": "langfuse"},
    ]
    traces = [
        {"id": "mostly-cached", "model": "gpt-4o", "prompt_tokens": 1000, "cached_tokens": 800},
        {"id": "thinks", "model": "o3", "prompt_tokens": 10, "completion_tokens": 900, "reasoning_tokens": 600},
        {"id": "plain", "model": "gpt-4o", "prompt_tokens": 1000, "completion_tokens": 10},
    ]
    body = api.post(URL, {"traces": traces, "rules": rules}, format="json").json()
    by_id = {r["trace_id"]: r for r in body["results"]}
    assert by_id["mostly-cached"]["matched_rules"] == ["cached"]
    assert by_id["thinks"]["matched_rules"] == ["thinking"]
    assert by_id["plain"]["matched_rules"] == []
    assert by_id["mostly-cached"]["trace"]["cached_tokens"] == 800
    assert by_id["thinks"]["trace"]["reasoning_tokens"] == 600
    assert by_id["plain"]["trace"]["cache_write_tokens"] == 0


def test_a_token_part_larger_than_its_whole_is_refused(api, integrations):
    body = {"model": "gpt-4o", "prompt_tokens": 10, "cached_tokens": 11}
    problem = assert_problem(api.post(URL, body, format="json"), 400)
    assert "cached_tokens" in problem["errors"], problem["errors"]


def test_an_unpriced_trace_is_not_routed_as_costing_nothing(api, rules):
    body = api.post(
        URL,
        {
            "traces": [{"id": "mystery", "model": "no-such-model-anywhere", "prompt_tokens": 10}],
            "rules": [
                {"name": "cheap", "condition": "cost < 0.5", "destination": "lf-prod"},
                {"name": "cheap object", "condition": {"cost": "<0.5"}, "destination": "lf-prod"},
                {"name": "unknown", "condition": {"unpriced": True}, "destination": "audit-hook"},
            ],
        },
        format="json",
    ).json()
    (result,) = body["results"]
    assert result["trace"]["cost"] is None and result["trace"]["unpriced"] is True
    assert result["destinations"] == ["audit-hook"]
    reasons = {e["rule"]: e["reason"] for e in result["evaluations"]}
    assert reasons["cheap"] == "condition did not match: cost unknown: model unpriced"
    assert reasons["cheap object"] == "condition did not match: cost unknown: model unpriced"
    assert result["errors"] == []


def test_it_takes_a_list_of_traces(api, rules):
    traces = [
        {"id": "a", "model": "gpt-4o", "metadata": {"env": "prod"}},
        {"id": "b", "model": "gpt-4o", "status": "rate_limited"},
    ]
    body = api.post(URL, {"traces": traces}, format="json").json()
    assert [r["trace_id"] for r in body["results"]] == ["a", "b"]
    assert "audit-hook" in body["results"][0]["destinations"]
    assert "langfuse" in body["results"][1]["destinations"]
    assert api.post(URL, traces, format="json").json()["results"][0]["trace_id"] == "a"
    assert api.post(URL, {"trace": traces[0]}, format="json").json()["results"][0]["trace_id"] == "a"


def test_the_same_id_gives_the_same_answer(api, rules):
    first = api.post(URL, {"id": "same", "model": "x"}, format="json").json()["results"][0]
    second = api.post(URL, {"id": "same", "model": "x"}, format="json").json()["results"][0]
    assert first["decisions"] == second["decisions"] and first["sample_point"] == second["sample_point"]


def test_it_tries_candidate_rules_without_storing_them(api, rules):
    body = api.post(
        URL,
        {
            "traces": [{"id": "c", "model": "claude-3-5-sonnet"}],
            "rules": [{"name": "claude", "condition": 'model.startsWith("claude")', "destination": "lf-prod"}],
        },
        format="json",
    ).json()
    assert body["rules_version"] is None
    assert body["results"][0]["destinations"] == ["lf-prod"]
    assert list(RoutingRule.objects.order_by("priority").values_list("name", flat=True)) == [
        "errors",
        "expensive",
        "sampled",
        "prod only",
    ]


def test_it_tries_a_candidate_sampling_policy(api, rules):
    trace_id = some_id_with_point(0.2, 0.9)
    body = api.post(
        URL,
        {
            "traces": [{"id": trace_id, "model": "gpt-4o", "status": "error"}],
            "sampling": {"default_sample_rate": 0.1},
        },
        format="json",
    ).json()
    assert body["sampling_version"] is None and body["rules_version"] == 1
    (result,) = body["results"]
    assert result["policy"] == {"rate": 0.1, "reason": "default sample rate"}
    assert result["destinations"] == []
    assert not SamplingPolicy.objects.exists()


def test_the_stored_sampling_policy_applies(api, rules):
    api.put("/api/v1/routing/sampling", {"default_sample_rate": 0.0}, format="json")
    body = api.post(URL, {"id": "x", "model": "gpt-4o", "status": "error"}, format="json").json()
    assert body["sampling_version"] == 1
    assert body["results"][0]["destinations"] == []
    assert body["results"][0]["decisions"][0]["reason"].startswith("sampled out")


def test_a_team_without_rules_routes_nowhere(api):
    body = api.post(URL, {"model": "gpt-4o"}, format="json").json()
    assert body["results"][0]["destinations"] == [] and body["results"][0]["decisions"] == []


@pytest.mark.parametrize(
    ("body", "status", "path"),
    [
        ({"prompt_tokens": 3}, 400, "model"),
        ({"model": "x", "prompt_tokens": -1}, 400, "prompt_tokens"),
        ({"traces": [{"model": "x"}, {"model": ""}]}, 400, "traces[1].model"),
        ({"traces": [{"model": "x"}, "nope"]}, 400, "traces[1]"),
        ({"traces": "nope"}, 400, "traces"),
        ({"traces": []}, 400, "traces"),
        ({"trace": {"model": 5}}, 400, "trace.model"),
        ({"traces": [{"model": "x"}], "extra": 1}, 400, "extra"),
        ({"traces": [{"model": "x"}], "rules": [{"name": "a", "destination": "nope"}]}, 400, "rules[0].destination"),
        ({"traces": [{"model": "x"}], "rules": "x"}, 400, "rules"),
        ({"traces": [{"model": "x"}], "sampling": {"default_sample_rate": 3}}, 400, "sampling.default_sample_rate"),
        ({"traces": [{"model": "x"}], "sampling": [1]}, 400, "sampling"),
        ([], 400, "traces"),
        ("text", 400, ""),
    ],
)
def test_bad_dry_runs_are_problems(api, integrations, body, status, path):
    problem = assert_problem(api.post(URL, body, format="json"), status)
    assert path in problem["errors"], problem["errors"]


def test_too_many_traces_is_a_413(api):
    problem = assert_problem(api.post(URL, {"traces": [{"model": "x"}] * 101}, format="json"), 413)
    assert problem["limit_traces"] == 100


def test_the_body_must_be_json(api):
    assert_problem(api.post(URL, "model=x", content_type="application/x-www-form-urlencoded"), 415)
    assert_problem(api.post(URL, "{", content_type="application/json"), 400)


def test_development_keys_may_dry_run_but_ci_keys_may_not(dev_api, ci_api, anon_api):
    assert dev_api.post(URL, {"model": "x"}, format="json").status_code == 200
    problem = assert_problem(ci_api.post(URL, {"model": "x"}, format="json"), 403)
    assert problem["required_scope"] == "rules:test"
    assert_problem(anon_api.post(URL, {"model": "x"}, format="json"), 401)


def test_a_dry_run_uses_the_callers_team(api, rules, other_api):
    body = other_api.post(URL, {"model": "x", "status": "error"}, format="json").json()
    assert body["results"][0]["destinations"] == []


def test_candidate_rules_beside_a_bare_trace_are_refused_not_ignored(api):
    r = api.post(URL, {"model": "gpt-4o", "sampling": {"default_sample_rate": 0.0, "rules": []}}, format="json")
    assert r.status_code == 400 and "sampling" in r.json()["errors"]
