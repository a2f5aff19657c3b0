"""Issue 22, item 1 through the REST API: a record is a span of a run (`run_id`, `parent_id`, `kind`,
`name`). Accepted by POST /api/v1/traces and /batch, shown by GET, filtered in the feed; `model` is
required of calls only; only calls are priced (or ever unpriced); bad run fields are clear 400s."""

from __future__ import annotations

import pytest

from traces.models import Trace

pytestmark = pytest.mark.django_db

CALL = {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 100, "completion_tokens": 50}


def post(client, body, path="/api/v1/traces"):
    return client.post(path, body, format="json")


def test_a_record_without_run_fields_is_an_llm_call_and_a_run_of_its_own(api):
    body = post(api, CALL).json()
    assert (body["run_id"], body["parent_id"], body["kind"], body["name"]) == (body["id"], None, "llm", "")
    assert body["cost"] > 0 and body["unpriced"] is False
    shown = api.get(f"/api/v1/traces/{body['id']}").json()
    assert (shown["run_id"], shown["parent_id"], shown["kind"]) == (body["id"], None, "llm")


def test_the_run_fields_are_stored_and_shown(api):
    root = post(api, {"id": "root-1", "run_id": "run-1", "kind": "agent", "name": "invoke_agent planner"})
    call = post(api, {**CALL, "id": "c-1", "run_id": "run-1", "parent_id": "root-1", "name": "chat gpt-4o"})
    assert (root.status_code, call.status_code) == (201, 201)
    shown = api.get("/api/v1/traces/c-1").json()
    assert (shown["run_id"], shown["parent_id"], shown["kind"], shown["name"]) == (
        "run-1",
        "root-1",
        "llm",
        "chat gpt-4o",
    )
    row = Trace.objects.get(trace_id="root-1")
    assert (row.run_id, row.parent_id, row.kind, row.name, row.model) == (
        "run-1",
        "",
        "agent",
        "invoke_agent planner",
        "",
    )


def test_a_root_may_name_its_own_id_as_its_run(api):
    r = post(api, {"id": "r", "run_id": "r", "kind": "chain", "parent_id": None})
    assert r.status_code == 201 and r.json()["run_id"] == "r" and r.json()["parent_id"] is None


@pytest.mark.parametrize("kind", ["agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other"])
def test_a_structural_span_needs_no_model_and_is_never_priced_nor_unpriced(api, kind):
    r = post(
        api,
        {"run_id": "run", "kind": kind, "name": "step", "input": "a long question " * 20, "output": {"ok": True},
         "latency_ms": 1200, "metadata": {"k": "v"}, "status": "error", "error": "boom"},
    )  # fmt: skip
    assert r.status_code == 201, r.json()
    body = r.json()
    assert (body["cost"], body["unpriced"], body["price_source"], body["price_version"]) == (None, False, "", "")
    # no usage of its own to estimate
    assert (body["prompt_tokens"], body["completion_tokens"], body["usage_estimated"]) == (0, 0, False)
    assert (body["latency_ms"], body["status"], body["output"], body["metadata"]) == (
        1200,
        "error",
        {"ok": True},
        {"k": "v"},
    )


def test_a_structural_span_with_a_model_and_usage_keeps_them_unpriced_never(api):
    # an OpenTelemetry agent span names its model and repeats its calls' usage: kept, never priced
    r = post(api, {"run_id": "run", "kind": "agent", "model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 5})
    body = r.json()
    assert (body["model"], body["prompt_tokens"], body["cost"], body["unpriced"]) == ("gpt-4o", 10, None, False)


def test_an_unknown_model_is_unpriced_only_as_a_call(api):
    call = post(api, {"model": "house-model-7", "kind": "embedding", "prompt_tokens": 10}).json()
    assert (call["cost"], call["unpriced"]) == (None, True)


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"kind": "llm"}, "model", "required"),
        ({"kind": "embedding", "model": ""}, "model", "empty"),
        ({}, "model", "required"),
        ({"model": "gpt-4o", "kind": "planner"}, "kind", "Unknown kind 'planner'"),
        ({"model": "gpt-4o", "kind": 3}, "kind", "Unknown kind"),
        ({"model": "gpt-4o", "id": "a", "run_id": "r", "parent_id": "a"}, "parent_id", "own parent"),
        ({"model": "gpt-4o", "run_id": "r" * 129}, "run_id", "at most 128"),
        ({"model": "gpt-4o", "run_id": 5}, "run_id", "string"),
        ({"model": "gpt-4o", "run_id": "a/b"}, "run_id", "control characters"),
        ({"model": "gpt-4o", "run_id": "a\u0000b"}, "run_id", "control characters"),
        ({"model": "gpt-4o", "run_id": "   "}, "run_id", "control characters"),
        ({"model": "gpt-4o", "parent_id": "p"}, "parent_id", "needs the run_id"),
        ({"model": "gpt-4o", "run_id": "r", "parent_id": "has space"}, "parent_id", "id of another span"),
        ({"kind": "tool", "name": "n" * 201}, "name", "at most 200"),
        ({"kind": "tool", "name": 7}, "name", "string"),
    ],
)
def test_bad_run_fields_are_a_problem_naming_the_field(api, body, field, words):
    r = post(api, body)
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"
    problem = r.json()
    assert field in problem["errors"] and words in " ".join(problem["errors"][field]), problem
    assert not Trace.objects.exists()


def test_a_batch_takes_spans_and_refuses_bad_ones_alone(api):
    items = [
        {"id": "a", "run_id": "R", "kind": "agent", "name": "root"},
        {**CALL, "id": "b", "run_id": "R", "parent_id": "a"},
        {"id": "c", "run_id": "R", "parent_id": "a", "kind": "bogus"},
        {"id": "d", "run_id": "R", "parent_id": "a", "kind": "tool"},
    ]
    r = post(api, {"traces": items}, "/api/v1/traces/batch")
    assert r.status_code == 207
    assert [x["status"] for x in r.json()["results"]] == [201, 201, 400, 201]
    assert "kind" in r.json()["results"][2]["errors"]
    assert sorted(Trace.objects.filter(run_id="R").values_list("trace_id", flat=True)) == ["a", "b", "d"]


def test_a_child_may_arrive_before_its_parent(api):
    assert post(api, {**CALL, "id": "kid", "run_id": "R2", "parent_id": "late-root"}).status_code == 201
    assert post(api, {"id": "late-root", "run_id": "R2", "kind": "workflow"}).status_code == 201
    spans = {t.trace_id: t.parent_id for t in Trace.objects.filter(run_id="R2")}
    assert spans == {"kid": "late-root", "late-root": ""}


def test_the_feed_filters_by_run_and_kind(api):
    post(api, {"id": "x1", "run_id": "RX", "kind": "agent"})
    post(api, {**CALL, "id": "x2", "run_id": "RX", "parent_id": "x1"})
    post(api, {**CALL, "id": "y1"})
    ids = lambda params: sorted(t["id"] for t in api.get("/api/v1/traces", params).json()["data"])  # noqa: E731
    assert ids({"run_id": "RX"}) == ["x1", "x2"]
    assert ids({"kind": "llm"}) == ["x2", "y1"]
    assert ids({"kind": "agent,tool"}) == ["x1"]
    assert ids({"run_id": "y1"}) == ["y1"]  # a record sent without run_id is the run of its own id
    listed = api.get("/api/v1/traces", {"run_id": "RX", "kind": "agent"}).json()["data"]
    assert [(t["id"], t["run_id"], t["parent_id"], t["kind"]) for t in listed] == [("x1", "RX", None, "agent")]


@pytest.mark.parametrize(("params", "param"), [({"kind": "planner"}, "kind"), ({"run_id": "r" * 129}, "run_id")])
def test_bad_feed_filters_are_a_400(api, params, param):
    r = api.get("/api/v1/traces", params)
    assert r.status_code == 400 and param in r.json()["errors"]


def test_a_pre_runs_sdk_block_is_read_as_a_structural_span(api):
    # what the Python SDK sent for a `tracerelay.trace()` block before runs: a fake call
    body = post(api, {"model": "span:checkout", "provider": "span", "latency_ms": 5, "metadata": {"span": "checkout"}})
    shown = body.json()
    assert (shown["kind"], shown["name"], shown["model"], shown["provider"]) == ("other", "checkout", "", "")
    assert (shown["cost"], shown["unpriced"]) == (None, False)
