"""Issue 22, item 3: `GET /api/v1/runs` and `GET /api/v1/runs/{run_id}`, over runs sent through the
REST API in any order; the per-run summary rows stay right whatever order and grouping spans arrive
in (they equal the summaries rebuilt from the spans)."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections
from django.utils import timezone

from analytics.retention import retention_enforce
from traces.models import Run, Trace
from traces.runs import selectors
from traces.runs.summary import rebuild

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db

T0 = "2026-01-31T12:00:00Z"


def post(client, body, path="/api/v1/traces"):
    r = client.post(path, body, format="json")
    assert r.status_code in (200, 201, 207), r.json()
    return r.json()


def agent_run(run_id: str = "run-a") -> list[dict]:
    """The issue's check: an invoke_agent root, a tool span, two chat spans of different models under
    different parents; the root is sent last."""
    return [
        {"id": f"{run_id}-tool", "run_id": run_id, "parent_id": f"{run_id}-root", "kind": "tool",
         "name": "execute_tool search", "timestamp": "2026-01-31T12:00:01Z", "latency_ms": 300},
        {"id": f"{run_id}-chat1", "run_id": run_id, "parent_id": f"{run_id}-root", "kind": "llm",
         "name": "chat gpt-4o", "model": "gpt-4o", "prompt_tokens": 1000, "completion_tokens": 100,
         "timestamp": "2026-01-31T12:00:00.500Z", "latency_ms": 400},
        {"id": f"{run_id}-chat2", "run_id": run_id, "parent_id": f"{run_id}-tool", "model": "claude-3-5-haiku-latest",
         "provider": "anthropic", "name": "chat claude", "prompt_tokens": 200, "completion_tokens": 20,
         "timestamp": "2026-01-31T12:00:01.100Z", "latency_ms": 150, "status": "error", "error": "overloaded"},
        {"id": f"{run_id}-root", "run_id": run_id, "kind": "agent", "name": "invoke_agent planner",
         "timestamp": T0, "latency_ms": 2000, "user_id": "u-7", "session_id": "s-1",
         "prompt_tokens": 1200, "completion_tokens": 120},  # the wrapper repeats its calls' usage
    ]  # fmt: skip


def test_the_agent_run_comes_back_whole_with_its_totals(api):
    for span in agent_run():
        post(api, span)
    r = api.get("/api/v1/runs/run-a")
    assert r.status_code == 200 and r["Content-Type"] == "application/json"
    body = r.json()
    assert body["run_id"] == "run-a" and body["truncated"] is False
    spans = {s["id"]: s for s in body["spans"]}
    assert [s["id"] for s in body["spans"]] == ["run-a-root", "run-a-chat1", "run-a-tool", "run-a-chat2"]
    assert {i: s["parent_id"] for i, s in spans.items()} == {
        "run-a-root": None,
        "run-a-chat1": "run-a-root",
        "run-a-tool": "run-a-root",
        "run-a-chat2": "run-a-tool",
    }
    assert [spans[i]["kind"] for i in ("run-a-root", "run-a-tool", "run-a-chat1")] == ["agent", "tool", "llm"]
    root, chat1, chat2 = spans["run-a-root"], spans["run-a-chat1"], spans["run-a-chat2"]
    assert (root["timestamp"], chat1["timestamp"]) == ("2026-01-31T12:00:00Z", "2026-01-31T12:00:00.500000Z")
    assert (root["cost"], root["unpriced"], root["name"]) == (None, False, "invoke_agent planner")
    assert chat2["error"] == {"type": "", "message": "overloaded"} and chat2["status"] == "error"
    # each span as the trace API shows it (same figures)
    shown = api.get("/api/v1/traces/run-a-chat1").json()
    for key in ("model", "provider", "prompt_tokens", "completion_tokens", "latency_ms", "cost", "timestamp"):
        assert chat1[key] == shown[key], key
    cost = chat1["cost"] + chat2["cost"]
    assert body["totals"] == {
        "spans": 4,
        "llm_calls": 2,  # only the two chat spans are calls
        "cost": pytest.approx(cost),
        "unpriced_calls": 0,
        "prompt_tokens": 1200,  # the agent's own usage is not added again
        "completion_tokens": 120,
        "duration_ms": 2000,
        "errors": 1,
    }
    (listed,) = api.get("/api/v1/runs").json()["data"]
    assert listed == {
        "run_id": "run-a",
        "name": "invoke_agent planner",
        "root_id": "run-a-root",
        "started_at": T0,
        "duration_ms": 2000,
        "status": "error",
        "spans": 4,
        "errors": 1,
        "llm_calls": 2,
        "cost": pytest.approx(cost),
        "unpriced_calls": 0,
        "prompt_tokens": 1200,
        "completion_tokens": 120,
        "user_id": "u-7",
        "session_id": "s-1",
    }


def test_the_summary_is_right_whatever_the_order_and_grouping(api, team):
    spans = agent_run("run-b") + [
        {"id": f"b-{i}", "run_id": "run-b", "parent_id": "run-b-tool", "kind": random.choice(["event", "llm"]),
         "model": "gpt-4o-mini", "prompt_tokens": i, "completion_tokens": 1,
         "timestamp": f"2026-01-31T12:00:{i % 60:02d}Z", "latency_ms": i * 10}
        for i in range(40)
    ]  # fmt: skip
    random.Random(7).shuffle(spans)
    post(api, spans[0])
    post(api, {"traces": spans[1:15]}, "/api/v1/traces/batch")
    for span in spans[15:20]:
        post(api, span)
    post(api, {"traces": spans[20:]}, "/api/v1/traces/batch")
    post(api, {"traces": spans[:5]}, "/api/v1/traces/batch")  # sent again: already stored, not counted twice
    kept = Run.objects.values().get(run_id="run-b")
    rebuild(team.id, ["run-b"])
    rebuilt = Run.objects.values().get(run_id="run-b")
    ignore = {"id", "updated_at"}
    assert {k: v for k, v in kept.items() if k not in ignore} == {k: v for k, v in rebuilt.items() if k not in ignore}
    assert kept["spans"] == 44 and kept["name"] == "invoke_agent planner"
    totals = api.get("/api/v1/runs/run-b").json()["totals"]
    assert (totals["spans"], totals["llm_calls"]) == (44, kept["llm_calls"])


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_adding_to_one_run_add_up(api, team):
    spans = [{"id": f"c-{i}", "run_id": "run-c", "kind": "tool", "latency_ms": 5} for i in range(60)]
    errors: list[BaseException] = []

    def send(part: list[dict]) -> None:
        try:
            for start in range(0, len(part), 5):
                r = api.post("/api/v1/traces/batch", {"traces": part[start : start + 5]}, format="json")
                assert r.status_code == 200
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=send, args=(spans[i::3],)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert Run.objects.get(run_id="run-c").spans == 60 == len(api.get("/api/v1/runs/run-c").json()["spans"])


def test_a_record_without_run_id_is_a_run_of_its_own(api):
    body = post(api, {"model": "gpt-4o", "prompt_tokens": 10, "completion_tokens": 2, "name": "lone"})
    run = api.get(f"/api/v1/runs/{body['id']}").json()
    assert [s["id"] for s in run["spans"]] == [body["id"]] and run["totals"]["llm_calls"] == 1
    (listed,) = api.get("/api/v1/runs").json()["data"]
    assert (listed["run_id"], listed["name"], listed["root_id"]) == (body["id"], "lone", body["id"])


def test_unpriced_calls_and_structural_spans(api):
    post(api, {"id": "u1", "run_id": "run-u", "kind": "workflow", "name": "wf"})
    post(api, {"id": "u2", "run_id": "run-u", "parent_id": "u1", "model": "house-model-9", "prompt_tokens": 5})
    body = api.get("/api/v1/runs/run-u").json()
    assert (body["totals"]["cost"], body["totals"]["unpriced_calls"], body["totals"]["llm_calls"]) == (None, 1, 1)
    assert [s["unpriced"] for s in body["spans"]] == [False, True]  # the workflow span is never unpriced
    post(api, {"id": "u3", "run_id": "run-u", "parent_id": "u1", "model": "gpt-4o", "prompt_tokens": 5})
    totals = api.get("/api/v1/runs/run-u").json()["totals"]
    assert totals["cost"] > 0 and totals["unpriced_calls"] == 1  # the priced part, and what is not in it
    only_structure = post(api, {"id": "w1", "run_id": "run-w", "kind": "chain"})
    assert only_structure["unpriced"] is False
    assert api.get("/api/v1/runs/run-w").json()["totals"]["cost"] == 0


def test_an_unknown_run_or_another_teams_is_a_404_problem(api, other_team):
    TraceFactory(team=other_team, trace_id="theirs", run_id="their-run")
    for run_id in ("their-run", "nope"):
        r = api.get(f"/api/v1/runs/{run_id}")
        assert r.status_code == 404 and r["Content-Type"] == "application/problem+json"
        assert run_id in r.json()["detail"]
    assert api.get("/api/v1/runs").json()["data"] == []


def _runs(api, **params) -> list[str]:
    r = api.get("/api/v1/runs", params)
    assert r.status_code == 200, r.json()
    return [x["run_id"] for x in r.json()["data"]]


def test_the_list_is_newest_first_filtered_and_paginated(api):
    base = timezone.now() - timedelta(hours=1)
    for i in range(7):
        stamp = (base + timedelta(minutes=i)).isoformat()
        post(api, {"id": f"r{i}-root", "run_id": f"r{i}", "kind": "agent", "name": "even" if i % 2 == 0 else "odd",
                   "timestamp": stamp, "user_id": f"u{i % 3}", "session_id": "s" if i < 2 else ""})  # fmt: skip
        post(api, {"run_id": f"r{i}", "parent_id": f"r{i}-root", "model": "gpt-4o", "timestamp": stamp,
                   "status": "error" if i == 3 else "success"})  # fmt: skip
    assert _runs(api) == [f"r{i}" for i in range(6, -1, -1)]
    assert _runs(api, status="error") == ["r3"]
    assert "r3" not in _runs(api, status="success") and len(_runs(api, status="success")) == 6
    assert _runs(api, name="odd") == ["r5", "r3", "r1"]
    assert _runs(api, user_id="u1") == ["r4", "r1"]
    assert _runs(api, session_id="s") == ["r1", "r0"]
    since = (base + timedelta(minutes=2)).isoformat()
    until = (base + timedelta(minutes=5)).isoformat()
    assert _runs(api, since=since, until=until) == ["r4", "r3", "r2"]
    seen, cursor = [], None
    while True:
        page = api.get("/api/v1/runs", {"limit": 3, **({"cursor": cursor} if cursor else {})}).json()
        seen += [x["run_id"] for x in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"r{i}" for i in range(6, -1, -1)]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"status": "failed"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"limit": "0"}, "limit"),
        ({"model": "gpt-4o"}, "model"),
        ({"name": "x" * 201}, "name"),
    ],
)
def test_bad_list_parameters_are_a_400_naming_them(api, params, param):
    r = api.get("/api/v1/runs", params)
    assert r.status_code == 400 and r["Content-Type"] == "application/problem+json"
    assert param in r.json()["errors"]


def test_the_run_api_needs_a_key_with_read_scope(client, api, team):
    assert client.get("/api/v1/runs").status_code == 401
    assert client.get("/api/v1/runs/x").status_code == 401


def test_a_run_larger_than_one_answer_says_so_and_counts_all(team):
    for i in range(5):
        TraceFactory(team=team, trace_id=f"big-{i}", run_id="big", kind="tool", model="", cost=None)
    run = selectors.run_spans(team_id=team.id, run_id="big", limit=3)
    assert run is not None and run.truncated and run.totals["spans"] == 5
    import orjson

    assert len(orjson.loads(run.spans_json)) == 3


def test_retention_takes_the_runs_with_their_spans(team, settings):
    now = timezone.now()
    for i, days in enumerate((100, 100, 1)):
        TraceFactory(team=team, trace_id=f"old-{i}", run_id="mixed", kind="tool", timestamp=now - timedelta(days=days))
    TraceFactory(team=team, trace_id="gone", timestamp=now - timedelta(days=100))
    retention_enforce(now=now)
    assert not Run.objects.filter(run_id="gone").exists()
    assert Run.objects.get(run_id="mixed").spans == 1 == Trace.objects.filter(run_id="mixed").count()
