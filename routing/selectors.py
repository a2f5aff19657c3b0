"""Reads for routing: the stored rules and policy, and the compiled form ingest evaluates.

`compiled_routing(team_id)` runs for every ingested trace, so it is built to be cheap: each
process keeps the compiled rules per team and only asks whether they changed every
`RECHECK_SECONDS`. The question goes to the shared cache (one GET of the team's
``(rules version, sampling version)``), and to the database only when the cache has no answer.
A PUT drops this process's copy at once and, on commit, writes the new versions to the cache and
publishes the change on the invalidation bus (config/invalidation.py), which drops every other
process's copy at once; `RECHECK_SECONDS` bounds staleness only while the bus is down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import QuerySet

from config import invalidation
from config.teamcache import VersionedTeamCache

from .conditions import Broken, ConditionError, compile_condition
from .models import RoutingRule, RuleSet, SamplingPolicy
from .router import CompiledRouting, CompiledRule, DestinationSpec, SamplingRule

RECHECK_SECONDS = 2.0
VERSIONS_TTL = 60  # seconds a version pair lives in the shared cache
MAX_TEAMS = 4096  # compiled rule sets kept per process


# ---------------------------------------------------------------------------------------------
# Stored rules and policy


def routing_rules(team_id: int) -> QuerySet[RoutingRule]:
    """The team's rules in evaluation order."""
    return RoutingRule.objects.filter(team_id=team_id).order_by("priority", "id")


def service_rules(team_id: int, service: str) -> QuerySet[RoutingRule]:
    """The rules a service registered (`PUT /routing/rules/services/{service}`), in evaluation order."""
    return routing_rules(team_id).filter(service=service)


def rule_ids(team_id: int, service: str | None = None) -> set[int]:
    """The ids a rule-set PUT may name: every rule of the team, or only those ``service`` owns."""
    rows = RoutingRule.objects.filter(team_id=team_id)
    if service is not None:
        rows = rows.filter(service=service)
    return set(rows.values_list("id", flat=True))


def rule_owners_besides(team_id: int, service: str) -> dict[str, str]:
    """Name → owner ("" for the team itself) of the team's rules that ``service`` does not own: a
    service's rules may not take those names (names are unique per team)."""
    rows = RoutingRule.objects.filter(team_id=team_id).exclude(service=service).values_list("name", "service")
    return dict(rows)


def routing_rule(team_id: int, rule_id: int) -> RoutingRule | None:
    return RoutingRule.objects.filter(team_id=team_id, id=rule_id).first()


def rule_set(team_id: int) -> RuleSet:
    """The team's rule-set header; an unsaved version-0 one when the team never stored rules."""
    return RuleSet.objects.filter(team_id=team_id).first() or RuleSet(team_id=team_id, version=0)


def sampling_policy(team_id: int) -> SamplingPolicy:
    """The team's sampling policy; an unsaved keep-everything one when none was stored."""
    return SamplingPolicy.objects.filter(team_id=team_id).first() or SamplingPolicy(
        team_id=team_id, default_sample_rate=1.0, rules=[], version=0
    )


def rule_as_dict(rule: RoutingRule) -> dict[str, Any]:
    """A rule as the API shows it (and as `compile_rule` reads it)."""
    return {
        "id": rule.id,
        "name": rule.name,
        "description": rule.description,
        "priority": rule.priority,
        "enabled": rule.enabled,
        "conditions": rule.conditions if rule.conditions else None,
        "condition": rule.condition or None,
        "destinations": rule.destinations,
        "sample_rate": rule.sample_rate,
        "tags": rule.tags or [],
        "stop": rule.stop,
        "service": rule.service or None,
        "created_at": rule.created_at,
        "updated_at": rule.updated_at,
    }


# ---------------------------------------------------------------------------------------------
# Compiling


def _merged_tags(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *second]))


def destination_spec(data: Mapping[str, Any], rule_tags: Sequence[str] = ()) -> DestinationSpec:
    """A stored destination dict → spec; the rule's tags go on every destination and fallback."""
    spec = DestinationSpec.from_dict(data)
    if not rule_tags:
        return spec
    return DestinationSpec(
        name=spec.name,
        sample_rate=spec.sample_rate,
        tags=_merged_tags(rule_tags, spec.tags),
        url=spec.url,
        fallback=tuple(destination_spec(f, rule_tags) for f in data.get("fallback") or ()),
    )


def _predicate(condition: Any, conditions: Any) -> Any:
    has_object = bool(conditions)
    has_string = bool(condition and str(condition).strip())
    if has_object and has_string:
        return Broken(str(condition), "the rule has both 'condition' and 'conditions'")
    source = conditions if has_object else (condition or None)
    try:
        return compile_condition(source)
    except ConditionError as exc:
        return Broken(str(source), exc.message)


def compile_rule(data: Mapping[str, Any]) -> CompiledRule:
    """A rule in its stored/API shape (`rule_as_dict`) → `CompiledRule`."""
    tags = tuple(data.get("tags") or ())
    return CompiledRule(
        name=data["name"],
        priority=int(data.get("priority", 100)),
        predicate=_predicate(data.get("condition"), data.get("conditions")),
        destinations=tuple(destination_spec(d, tags) for d in data.get("destinations") or ()),
        sample_rate=float(data.get("sample_rate", 1.0)),
        stop=bool(data.get("stop", False)),
        enabled=bool(data.get("enabled", True)),
        id=data.get("id"),
    )


def compile_sampling_rule(data: Mapping[str, Any]) -> SamplingRule:
    """A sampling-policy rule; its condition may be a CEL string or an object, like a rule's."""
    condition = data.get("condition")
    if isinstance(condition, str):
        predicate = _predicate(condition, None)
        label = condition
    else:
        predicate = _predicate(None, condition)
        label = predicate.source
    return SamplingRule(condition=label, predicate=predicate, sample_rate=float(data.get("sample_rate", 1.0)))


def compile_routing(
    rules: Iterable[Mapping[str, Any]],
    *,
    default_sample_rate: float = 1.0,
    sampling_rules: Iterable[Mapping[str, Any]] = (),
    version: int = 0,
    sampling_version: int = 0,
) -> CompiledRouting:
    """Rules and policy in their stored/API shape → `CompiledRouting` (rules sorted by priority;
    equal priorities keep the given order)."""
    compiled = sorted((compile_rule(r) for r in rules), key=lambda r: r.priority)
    return CompiledRouting(
        rules=tuple(compiled),
        default_sample_rate=float(default_sample_rate),
        sampling_rules=tuple(compile_sampling_rule(s) for s in sampling_rules),
        version=version,
        sampling_version=sampling_version,
    )


# ---------------------------------------------------------------------------------------------
# The per-process cache (config/teamcache.py)


def stored_versions(team_id: int) -> tuple[int, int]:
    """(rule set version, sampling policy version) from the database; 0 when never stored."""
    rules_v = RuleSet.objects.filter(team_id=team_id).values_list("version", flat=True).first() or 0
    sampling_v = SamplingPolicy.objects.filter(team_id=team_id).values_list("version", flat=True).first() or 0
    return int(rules_v), int(sampling_v)


def load_compiled_routing(team_id: int) -> CompiledRouting:
    """Compile straight from the database (no caching)."""
    # Versions first: if a PUT lands between the reads, newer rules carry an older version and
    # the next check recompiles; the other order could keep old rules under a new version.
    rules_v, sampling_v = stored_versions(team_id)
    policy = sampling_policy(team_id)
    return compile_routing(
        (rule_as_dict(r) for r in routing_rules(team_id)),
        default_sample_rate=policy.default_sample_rate,
        sampling_rules=policy.rules or (),
        version=rules_v,
        sampling_version=sampling_v,
    )


def _load(team_id: int) -> tuple[tuple[int, int], CompiledRouting]:
    compiled = load_compiled_routing(team_id)
    return (compiled.version, compiled.sampling_version), compiled


compiled_cache: VersionedTeamCache[tuple[int, int], CompiledRouting] = VersionedTeamCache(
    name="routing-versions",
    topic=invalidation.ROUTING,
    stored_version=stored_versions,
    load=_load,
    recheck_seconds=RECHECK_SECONDS,
    version_ttl=VERSIONS_TTL,
    max_teams=MAX_TEAMS,
    encode=list,
    decode=lambda cached: (int(cached[0]), int(cached[1])),
)


def versions_cache_key(team_id: int) -> str:
    return compiled_cache.version_key(team_id)


def current_versions(team_id: int) -> tuple[int, int]:
    return compiled_cache.current_version(team_id)


def compiled_routing(team_id: int) -> CompiledRouting:
    """The team's compiled rules and sampling policy, cached per (team, rules version, sampling version)."""
    return compiled_cache.get(team_id)


def forget_compiled_routing(team_id: int | None = None) -> None:
    """Drop this process's compiled copy (one team, or all)."""
    compiled_cache.forget(team_id)


def publish_versions(team_id: int) -> None:
    """After a commit that changed rules or policy: tell every process."""
    compiled_cache.publish(team_id)
