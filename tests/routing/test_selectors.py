"""compiled_routing: cached per (team, rules version, sampling version), invalidated by writes."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from routing import selectors, services
from routing.models import RoutingRule, RuleSet, SamplingPolicy
from routing.router import route
from tests.factories import RoutingRuleFactory
from traces.records import TraceRecord

pytestmark = pytest.mark.django_db


def rule(name: str, destination: str, condition: str = "", priority: int = 1) -> dict:
    return {
        "name": name,
        "description": "",
        "priority": priority,
        "enabled": True,
        "conditions": None,
        "condition": condition,
        "destinations": [{"name": destination, "sample_rate": 1.0, "tags": [], "fallback": []}],
        "sample_rate": 1.0,
        "tags": [],
        "stop": False,
    }


def ctx(**overrides) -> dict:
    return TraceRecord(trace_id="trc_1", team_id=1, model="gpt-4o", **overrides).condition_context()


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(selectors.compiled_cache, "clock", lambda: now[0])
    return now


def test_a_team_without_rules_routes_nowhere_and_keeps_everything(team):
    compiled = selectors.compiled_routing(team.id)
    assert compiled.rules == ()
    assert compiled.default_sample_rate == 1.0
    assert (compiled.version, compiled.sampling_version) == (0, 0)


def test_it_compiles_the_stored_rules_in_priority_order(team):
    services.routing_rules_replace(
        team_id=team.id, rules=[rule("b", "y", priority=2), rule("a", "x", "error", priority=1)], actor="test"
    )
    compiled = selectors.compiled_routing(team.id)
    assert [r.name for r in compiled.rules] == ["a", "b"]
    assert route(ctx(status="error"), compiled).destinations == ["x", "y"]
    assert compiled.version == 1


def test_it_answers_from_memory_between_checks(team, clock):
    first = selectors.compiled_routing(team.id)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(100):
            assert selectors.compiled_routing(team.id) is first
    assert len(queries) == 0


def test_after_the_recheck_interval_it_asks_the_cache_not_the_database(team, clock):
    first = selectors.compiled_routing(team.id)
    clock[0] += selectors.RECHECK_SECONDS + 0.1
    with CaptureQueriesContext(connection) as queries:
        assert selectors.compiled_routing(team.id) is first
    assert len(queries) == 0


def test_a_put_in_this_process_is_seen_at_once(team, clock):
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "x")], actor="test")
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["x"]
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "y")], actor="test")
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["y"]


def test_another_processs_put_is_seen_within_the_recheck_interval(team, clock, django_capture_on_commit_callbacks):
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "x")], actor="test")
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["x"]

    # Another process stores new rules: its commit publishes the new versions to the shared cache.
    # (Here the local copy is kept, as it would be in a process that did not make the change.)
    kept = dict(selectors.compiled_cache.entries)
    with django_capture_on_commit_callbacks(execute=True):
        services.routing_rules_replace(team_id=team.id, rules=[rule("a", "z")], actor="other process")
    selectors.compiled_cache.entries.update(kept)
    assert cache.get(selectors.versions_cache_key(team.id)) == [2, 0]

    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["x"]  # not yet rechecked
    clock[0] += selectors.RECHECK_SECONDS + 0.1
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["z"]


def test_without_the_cache_entry_it_reads_the_versions_from_the_database(team, clock):
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "x")], actor="test")
    selectors.compiled_routing(team.id)
    RuleSet.objects.filter(team=team).update(version=5)
    RoutingRule.objects.filter(team=team).update(destinations=[{"name": "w", "sample_rate": 1.0, "tags": []}])
    cache.delete(selectors.versions_cache_key(team.id))
    clock[0] += selectors.RECHECK_SECONDS + 0.1
    compiled = selectors.compiled_routing(team.id)
    assert compiled.version == 5
    assert route(ctx(), compiled).destinations == ["w"]
    assert cache.get(selectors.versions_cache_key(team.id)) == [5, 0]


def test_a_versions_entry_read_from_the_database_never_overwrites_a_newer_one(team):
    cache.set(selectors.versions_cache_key(team.id), [9, 9], 60)
    assert selectors.current_versions(team.id) == (9, 9)
    cache.delete(selectors.versions_cache_key(team.id))
    assert selectors.current_versions(team.id) == (0, 0)


def test_a_sampling_policy_change_recompiles(team, clock):
    selectors.compiled_routing(team.id)
    services.sampling_policy_replace(
        team_id=team.id, default_sample_rate=0.25, rules=[{"condition": "error", "sample_rate": 1.0}], actor="t"
    )
    compiled = selectors.compiled_routing(team.id)
    assert compiled.default_sample_rate == 0.25
    assert compiled.sampling_version == 1
    assert [s.condition for s in compiled.sampling_rules] == ["error"]


def test_teams_are_compiled_apart(team, other_team):
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "mine")], actor="t")
    services.routing_rules_replace(team_id=other_team.id, rules=[rule("a", "theirs")], actor="t")
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["mine"]
    assert route(ctx(), selectors.compiled_routing(other_team.id)).destinations == ["theirs"]


def test_a_broken_stored_rule_does_not_break_compiling(team):
    RoutingRuleFactory(team=team, name="broken", condition="model ===", priority=1)
    RoutingRuleFactory(team=team, name="fine", priority=2)
    result = route(ctx(), selectors.compiled_routing(team.id))
    assert result.destinations == ["webhook"]
    assert result.errors[0][0] == "broken"


def test_the_cache_holds_a_bounded_number_of_teams(team, monkeypatch):
    monkeypatch.setattr(selectors.compiled_cache, "max_teams", 3)
    for team_id in range(10_000, 10_005):
        selectors.compiled_routing(team_id)
    assert len(selectors.compiled_cache.entries) == 3
    assert set(selectors.compiled_cache.entries) == {10_002, 10_003, 10_004}


def test_the_default_policy_is_unsaved(team):
    policy = selectors.sampling_policy(team.id)
    assert policy.pk is None and policy.default_sample_rate == 1.0
    assert not SamplingPolicy.objects.exists()


class BrokenCache:
    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise ConnectionError("redis is down")

        return fail


def test_a_dead_cache_falls_back_to_the_database(team, clock, monkeypatch):
    services.routing_rules_replace(team_id=team.id, rules=[rule("a", "x")], actor="test")
    monkeypatch.setattr(selectors.compiled_cache, "shared", BrokenCache())
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["x"]
    RuleSet.objects.filter(team=team).update(version=7)
    RoutingRule.objects.filter(team=team).update(destinations=[{"name": "y", "sample_rate": 1.0, "tags": []}])
    clock[0] += selectors.RECHECK_SECONDS + 0.1
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["y"]


def test_a_put_still_stores_when_the_cache_is_dead(team, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(selectors.compiled_cache, "shared", BrokenCache())
    with django_capture_on_commit_callbacks(execute=True):
        header, _ = services.routing_rules_replace(team_id=team.id, rules=[rule("a", "x")], actor="test")
    assert header.version == 1
    assert route(ctx(), selectors.compiled_routing(team.id)).destinations == ["x"]
