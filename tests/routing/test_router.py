"""The router: priority order, stop, dedup, consistent sampling, policy rates and reasons."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.conditions import ALWAYS, compile_condition
from routing.router import (
    CompiledRouting,
    CompiledRule,
    DestinationSpec,
    RoutingResult,
    policy_rate,
    route,
    sample_point,
)
from routing.selectors import compile_routing
from traces.records import TraceRecord


def ctx(trace_id: str = "trc_a", **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"trace_id": trace_id, "team_id": 1, "model": "gpt-4o", "provider": "openai"}
    fields.update(overrides)
    return TraceRecord(**fields).condition_context()


def rule(name: str, priority: int, destinations: list[Any], condition: Any = None, **extra: Any) -> dict[str, Any]:
    dests = [{"name": d} if isinstance(d, str) else d for d in destinations]
    return {"name": name, "priority": priority, "destinations": dests, "condition": condition, **extra}


def routing(*rules: dict[str, Any], **policy: Any) -> CompiledRouting:
    return compile_routing(rules, **policy)


def id_with_point(low: float, high: float) -> str:
    """A trace id whose sample point lies in [low, high)."""
    for i in range(100_000):
        candidate = f"trc_{i}"
        if low <= sample_point(candidate) < high:
            return candidate
    raise AssertionError("no such id")


# --- Evaluation order, stop, dedup -------------------------------------------------------------


def test_it_routes_to_every_matching_rules_destinations_in_priority_order():
    compiled = routing(
        rule("late", 30, ["c"]),
        rule("early", 10, ["a"]),
        rule("middle", 20, ["b"], "error"),
        rule("skipped", 5, ["z"], 'model == "claude"'),
    )
    result = route(ctx(status="error"), compiled)
    assert result.destinations == ["a", "b", "c"]
    assert result.matched_rules == ("early", "middle", "late")
    assert [d.rule for d in result.decisions] == ["early", "middle", "late"]


def test_equal_priorities_keep_the_given_order():
    compiled = routing(rule("first", 1, ["a"]), rule("second", 1, ["b"]), rule("third", 1, ["c"]))
    assert route(ctx(), compiled).destinations == ["a", "b", "c"]


def test_a_matching_rule_with_stop_ends_evaluation():
    compiled = routing(
        rule("errors only here", 1, ["errors"], "error", stop=True),
        rule("everything", 2, ["all"]),
    )
    assert route(ctx(status="error"), compiled).destinations == ["errors"]
    assert route(ctx(), compiled).destinations == ["all"]


def test_a_stop_rule_that_does_not_match_does_not_stop():
    compiled = routing(rule("never", 1, ["x"], "false", stop=True), rule("always", 2, ["y"]))
    assert route(ctx(), compiled).destinations == ["y"]


def test_a_stop_rule_with_no_destinations_drops_the_trace():
    compiled = routing(rule("drop health checks", 1, [], '"healthcheck" in tags', stop=True), rule("all", 2, ["a"]))
    assert route(ctx(tags=("healthcheck",)), compiled).decisions == ()
    assert route(ctx(), compiled).destinations == ["a"]


def test_disabled_rules_are_skipped():
    compiled = routing(rule("off", 1, ["a"], enabled=False, stop=True), rule("on", 2, ["b"]))
    assert route(ctx(), compiled).destinations == ["b"]


def test_a_destination_is_delivered_once_and_the_first_rule_decides():
    compiled = routing(
        rule("errors", 1, [{"name": "langfuse", "tags": ["error"]}], "error"),
        rule("all", 2, [{"name": "langfuse", "tags": ["all"]}, "helicone"]),
    )
    result = route(ctx(status="error"), compiled)
    assert result.destinations == ["langfuse", "helicone"]
    assert result.decisions[0].rule == "errors"
    assert result.decisions[0].destination.tags == ("error",)


def test_a_later_rule_that_keeps_a_destination_wins_over_an_earlier_one_that_sampled_it_out():
    trace_id = id_with_point(0.5, 1.0)
    compiled = routing(
        rule("10% of everything", 1, [{"name": "langfuse", "sample_rate": 0.1}]),
        rule("every error", 2, ["langfuse"], "error"),
    )
    result = route(ctx(trace_id, status="error"), compiled)
    assert result.destinations == ["langfuse"]
    (decision,) = result.decisions
    assert decision.kept and decision.rule == "every error" and decision.rate == 1.0
    assert "rule '10% of everything' sampled it out" in decision.reason

    success = route(ctx(trace_id), compiled)
    (decision,) = success.decisions
    assert not decision.kept and decision.rule == "10% of everything"


def test_when_no_rule_keeps_a_destination_the_first_sampled_out_decision_is_reported():
    trace_id = id_with_point(0.9, 1.0)
    compiled = routing(
        rule("a", 1, [{"name": "x", "sample_rate": 0.1}]),
        rule("b", 2, [{"name": "x", "sample_rate": 0.5}]),
    )
    (decision,) = route(ctx(trace_id), compiled).decisions
    assert (decision.rule, decision.kept, decision.rate) == ("a", False, 0.1)


def test_rule_tags_go_on_every_destination_and_fallback():
    compiled = routing(
        rule(
            "tagged",
            1,
            [{"name": "a", "tags": ["dest"], "fallback": [{"name": "b", "tags": ["fb"]}]}],
            tags=["rule", "dest"],
        )
    )
    (decision,) = route(ctx(), compiled).decisions
    assert decision.destination.tags == ("rule", "dest")
    assert decision.destination.fallback[0].tags == ("rule", "dest", "fb")


def test_no_rules_route_nowhere():
    result = route(ctx(), CompiledRouting())
    assert result == RoutingResult((), sample_point("trc_a"), 1.0, "default sample rate", ())


def test_hand_built_rules_work_and_a_condition_failing_at_run_time_does_not_match():
    failing = compile_condition('metadata.env == "prod"')  # no `env` key in this trace's metadata
    compiled = CompiledRouting(
        rules=(
            CompiledRule("plain", 1, ALWAYS, (DestinationSpec("a"),)),
            CompiledRule("broken", 2, failing, (DestinationSpec("b"),)),
        )
    )
    result = route(ctx(), compiled)
    assert result.destinations == ["a"]
    assert [rule for rule, _ in result.errors] == ["broken"] and result.errors[0][1]


# --- Reasons and explanations ----------------------------------------------------------------


def test_sampled_out_decisions_say_why():
    trace_id = id_with_point(0.8, 0.9)
    compiled = routing(
        rule("some", 1, [{"name": "x", "sample_rate": 0.5}], sample_rate=0.8),
        default_sample_rate=0.5,
    )
    (decision,) = route(ctx(trace_id), compiled).decisions
    assert not decision.kept
    assert decision.rate == pytest.approx(0.2)
    assert decision.reason.startswith(f"sampled out: {sample_point(trace_id):.4f} ≥ rate 0.2")
    assert "(default sample rate 0.5 × rule 0.8 × destination 0.5)" in decision.reason


def test_kept_decisions_name_the_rule_and_the_sampling():
    trace_id = id_with_point(0.0, 0.1)
    compiled = routing(rule("all", 1, ["a", {"name": "b", "sample_rate": 0.5}]))
    first, second = route(ctx(trace_id), compiled).decisions
    assert first.reason == "matched rule 'all'"
    assert second.reason.startswith("matched rule 'all', kept by sampling (")


def test_explain_reports_every_rule():
    compiled = routing(
        rule("off", 1, ["a"], enabled=False),
        rule("no", 2, ["b"], 'model == "claude"'),
        rule("broken", 3, ["c"], 'metadata.env == "prod"'),
        rule("yes", 4, ["d"], stop=True),
        rule("after", 5, ["e"]),
    )
    result = route(ctx(), compiled, explain=True)
    assert [(e.rule, e.matched) for e in result.evaluations] == [
        ("off", None),
        ("no", False),
        ("broken", False),
        ("yes", True),
        ("after", None),
    ]
    reasons = [e.reason for e in result.evaluations]
    assert reasons[0] == "disabled"
    assert reasons[1] == "condition did not match"
    assert reasons[2] == "condition error, counted as no match: no such key 'env'"
    assert reasons[3] == "no condition: matches every trace; stop"
    assert reasons[4] == "not evaluated: 'yes' stops"
    assert result.errors == (("broken", "no such key 'env'"),)
    assert route(ctx(), compiled).evaluations == ()  # ingest does not pay for explanations


def test_a_stored_condition_that_no_longer_compiles_never_matches_and_says_why():
    compiled = routing(rule("old", 1, ["a"], "model ==="), rule("fine", 2, ["b"]))
    result = route(ctx(), compiled, explain=True)
    assert result.destinations == ["b"]
    assert result.errors[0][0] == "old"
    assert result.errors[0][1].startswith("the condition does not compile: Syntax error")


def test_a_rule_with_both_condition_spellings_stored_never_matches():
    compiled = routing({**rule("both", 1, ["a"], "true"), "conditions": {"error": False}})
    assert route(ctx(), compiled).errors == (
        ("both", "the condition does not compile: the rule has both 'condition' and 'conditions'"),
    )


def test_result_as_dict():
    compiled = routing(rule("all", 1, ["a"]))
    body = route(ctx(), compiled, explain=True).as_dict()
    assert body["decisions"] == [
        {"destination": "a", "rule": "all", "kept": True, "rate": 1.0, "reason": "matched rule 'all'"}
    ]
    assert body["policy"] == {"rate": 1.0, "reason": "default sample rate"}
    assert body["evaluations"][0]["matched"] is True


# --- The sampling policy ------------------------------------------------------------------------


def test_the_first_matching_policy_rule_sets_the_rate():
    compiled = routing(
        rule("all", 1, ["a"]),
        default_sample_rate=0.9,
        sampling_rules=[
            {"condition": 'environment == "development"', "sample_rate": 0.1},
            {"condition": {"error": True}, "sample_rate": 1.0},
            {"condition": "true", "sample_rate": 0.5},
        ],
    )
    assert policy_rate(ctx(environment="development", status="error"), compiled) == (
        0.1,
        "sampling rule 'environment == \"development\"'",
    )
    assert policy_rate(ctx(status="error"), compiled)[0] == 1.0
    assert policy_rate(ctx(), compiled)[0] == 0.5
    assert policy_rate(ctx(), routing(default_sample_rate=0.9)) == (0.9, "default sample rate")


def test_the_policy_rate_multiplies_the_rule_and_destination_rates():
    compiled = routing(
        rule("r", 1, [{"name": "a", "sample_rate": 0.5}], sample_rate=0.5),
        sampling_rules=[{"condition": "true", "sample_rate": 0.4}],
    )
    (decision,) = route(ctx(), compiled).decisions
    assert decision.rate == pytest.approx(0.1)


def test_a_policy_rule_that_errors_is_skipped():
    compiled = routing(
        rule("r", 1, ["a"]),
        sampling_rules=[{"condition": 'metadata.env == "dev"', "sample_rate": 0.0}],
    )
    result = route(ctx(), compiled)
    assert result.policy_rate == 1.0
    assert result.errors == (('sampling: metadata.env == "dev"', "no such key 'env'"),)


@pytest.mark.parametrize(("rate", "kept"), [(0.0, False), (1.0, True)])
def test_rates_zero_and_one_are_absolute(rate, kept):
    compiled = routing(rule("r", 1, [{"name": "a", "sample_rate": rate}]))
    for i in range(500):
        assert route(ctx(f"trc_{i}"), compiled).decisions[0].kept is kept


# --- Consistent sampling: properties ------------------------------------------------------------

IDS = [f"trc_{i:06d}" for i in range(100_000)]


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.1, 0.5, 0.9])
def test_sampling_rates_hold_over_100k_ids(rate):
    kept = sum(1 for trace_id in IDS if sample_point(trace_id) < rate)
    assert abs(kept / len(IDS) - rate) < 0.01


def test_the_router_keeps_the_configured_fraction():
    compiled = routing(rule("r", 1, [{"name": "a", "sample_rate": 0.1}, {"name": "b", "sample_rate": 0.5}]))
    counts = {"a": 0, "b": 0}
    for trace_id in IDS[:20_000]:
        for name in route(ctx(trace_id), compiled).destinations:
            counts[name] += 1
    assert abs(counts["a"] / 20_000 - 0.1) < 0.01
    assert abs(counts["b"] / 20_000 - 0.5) < 0.01


@settings(max_examples=300, deadline=None)
@given(
    trace_id=st.text(min_size=1, max_size=64),
    low=st.floats(min_value=0, max_value=1),
    high=st.floats(min_value=0, max_value=1),
)
def test_a_trace_kept_at_a_low_rate_is_kept_at_every_higher_rate(trace_id, low, high):
    low, high = sorted((low, high))
    compiled = routing(
        rule("low", 1, [{"name": "low", "sample_rate": low}]),
        rule("high", 2, [{"name": "high", "sample_rate": high}]),
    )
    result = route(ctx(trace_id), compiled)
    kept = {d.destination.name: d.kept for d in result.decisions}
    if kept["low"]:
        assert kept["high"]


@settings(max_examples=300, deadline=None)
@given(trace_id=st.text(min_size=1, max_size=128), rate=st.floats(min_value=0, max_value=1))
def test_the_same_trace_gets_the_same_decision_everywhere(trace_id, rate):
    u = sample_point(trace_id)
    assert 0.0 <= u < 1.0
    assert u == sample_point(trace_id)
    one = routing(rule("r", 1, [{"name": "a", "sample_rate": rate}, {"name": "b", "sample_rate": rate}]))
    other = routing(rule("other", 7, [{"name": "c", "sample_rate": rate}]))
    first = route(ctx(trace_id), one)
    assert first == route(ctx(trace_id), one)
    assert first.decisions[0].kept == first.decisions[1].kept == route(ctx(trace_id), other).decisions[0].kept


@settings(max_examples=200, deadline=None)
@given(
    rules=st.lists(
        st.tuples(
            st.integers(min_value=-5, max_value=5),
            st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=3),
            st.sampled_from([None, "error", "!error", 'model == "gpt-4o"']),
            st.booleans(),
        ),
        max_size=6,
    ),
    status=st.sampled_from(["success", "error"]),
)
def test_routing_invariants(rules, status):
    specs = [
        rule(f"r{i}", priority, dests, condition, stop=stop)
        for i, (priority, dests, condition, stop) in enumerate(rules)
    ]
    compiled = routing(*specs)
    result = route(ctx(status=status), compiled)
    names = [d.destination.name for d in result.decisions]
    assert len(names) == len(set(names)), "each destination at most once"
    # matched rules come in priority order, and nothing matches after a stop rule
    order = {r.name: (r.priority, i) for i, r in enumerate(compiled.rules)}
    matched = list(result.matched_rules)
    assert matched == sorted(matched, key=order.__getitem__)
    stops = [name for name in matched if next(r for r in compiled.rules if r.name == name).stop]
    if stops:
        assert matched[-1] == stops[0]
    # every destination of every matched rule is decided (rates are 1: all kept)
    expected = {d["name"] for s in specs if s["name"] in matched for d in s["destinations"]}
    assert set(names) == expected and all(d.kept for d in result.decisions)


# --- Runs: sampled whole, and the span fields conditions see -------------------------------------


def test_every_span_of_a_run_draws_the_runs_sample_point():
    compiled = routing(rule("sampled", 1, [{"name": "langfuse", "sample_rate": 0.5}]))
    runs = [f"run-{n}" for n in range(200)]
    for run in runs:
        spans = [ctx(f"{run}-{i}", run_id=run, kind=kind) for i, kind in enumerate(["agent", "tool", "llm", "llm"])]
        results = [route(span, compiled) for span in spans]
        assert {r.sample_point for r in results} == {sample_point(run)}
        assert len({tuple(r.destinations) for r in results}) == 1  # kept or dropped whole
    kept = sum(1 for run in runs if route(ctx("x", run_id=run), compiled).destinations)
    assert 60 < kept < 140  # and the rate still holds across runs


def test_a_trace_without_a_run_samples_by_its_own_id_as_before():
    result = route(ctx("trc_solo"), routing(rule("all", 1, ["langfuse"])))
    assert result.sample_point == sample_point("trc_solo")
    assert ctx("trc_solo")["run_id"] == "trc_solo"


@pytest.mark.parametrize(
    ("condition", "matches"),
    [
        ('kind == "tool"', {"tool"}),
        ({"kind": ["agent", "tool"]}, {"agent", "tool"}),
        ('name.startsWith("execute_tool")', {"tool"}),
        ({"name": "chat*"}, {"llm"}),
        ('run_id == "run-7"', {"agent", "tool", "llm"}),
        ({"run_id": "run-7"}, {"agent", "tool", "llm"}),
        ('parent_id == ""', {"agent"}),
        ("cost > 0.0", set()),  # structural spans have no cost; this call is unpriced here
    ],
)
def test_rules_test_kind_name_run_id_and_parent_id_like_any_field(condition, matches):
    compiled = routing(rule("r", 1, ["hook"], condition))
    spans = {
        "agent": ctx("a", run_id="run-7", kind="agent", name="invoke_agent planner", model=""),
        "tool": ctx("t", run_id="run-7", parent_id="a", kind="tool", name="execute_tool search", model=""),
        "llm": ctx("c", run_id="run-7", parent_id="a", kind="llm", name="chat gpt-4o", unpriced=True),
    }
    assert {kind for kind, span in spans.items() if route(span, compiled).destinations} == matches


def test_a_cost_condition_on_a_structural_span_says_it_has_no_cost_and_is_no_error():
    compiled = routing(rule("costly", 1, ["hook"], "cost > 0.5"))
    result = route(ctx("t", kind="tool", model=""), compiled, explain=True)
    assert result.errors == ()
    assert result.evaluations[0].reason == "condition did not match: no cost: not an LLM or embedding call"


def test_an_unknown_kind_in_an_object_condition_is_refused():
    from routing.conditions import ConditionError

    with pytest.raises(ConditionError, match="'kind' is one of llm, embedding"):
        compile_condition({"kind": "agnet"})
