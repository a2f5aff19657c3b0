"""Writes for routing rules and the sampling policy.

Both are replaced whole (PUT semantics), inside one transaction that locks the team's header
row, so two concurrent PUTs serialise and `If-Match` is checked against the version they will
actually replace. The callers validated everything first: these functions only store.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from accounts.services import audit

from .models import RoutingRule, RuleSet, SamplingPolicy
from .selectors import forget_compiled_routing, publish_versions

RULE_FIELDS: tuple[str, ...] = ("name", "description", "priority", "enabled", "conditions", "condition", "destinations")
RULE_FIELDS += ("sample_rate", "tags", "stop")


class VersionConflict(Exception):
    """``If-Match`` named a version that is no longer current."""

    def __init__(self, current: int, expected: Collection[int]) -> None:
        super().__init__(f"version is {current}, not {', '.join(map(str, sorted(expected)))}")
        self.current = current
        self.expected = expected


def _changed(team_id: int) -> None:
    # This process forgets its compiled copy now; every process hears of the new versions on commit.
    forget_compiled_routing(team_id)
    transaction.on_commit(lambda: publish_versions(team_id), robust=True)


@transaction.atomic
def routing_rules_replace(
    *,
    team_id: int,
    rules: Sequence[Mapping[str, Any]],
    actor: str,
    expected_versions: Collection[int] | None = None,
) -> tuple[RuleSet, list[RoutingRule]]:
    """Replace the team's rule set with ``rules`` (validated, normalised dicts).

    A rule keeps its row (and id, and owning service) when it carries that ``id``, or else has the
    name of an existing rule; the rest are created, and stored rules not in ``rules`` are deleted.
    """
    header = _locked_header(team_id, expected_versions)
    stored = _replace(team_id, RoutingRule.objects.filter(team_id=team_id), rules, service="")
    _bump(header, actor)
    audit(
        team=team_id,
        actor=actor,
        action="routing.rules.replace",
        target=f"v{header.version}",
        data={"version": header.version, "rules": [_audit_rule(r) for r in stored]},
    )
    _changed(team_id)
    stored.sort(key=lambda r: (r.priority, r.id))
    return header, stored


@transaction.atomic
def service_rules_replace(
    *,
    team_id: int,
    service: str,
    rules: Sequence[Mapping[str, Any]],
    actor: str,
    expected_versions: Collection[int] | None = None,
) -> tuple[RuleSet, list[RoutingRule]]:
    """Replace only the rules ``service`` owns (the SDK's ``routing_rules``); every other rule keeps
    its row and priority. Same matching as `routing_rules_replace`, within the service's rules; the
    caller checked that no name is held by another owner (names are unique per team)."""
    header = _locked_header(team_id, expected_versions)
    scope = RoutingRule.objects.filter(team_id=team_id, service=service)
    stored = _replace(team_id, scope, rules, service=service)
    _bump(header, actor)
    audit(
        team=team_id,
        actor=actor,
        action="routing.rules.replace_service",
        target=f"v{header.version}",  # the service (up to 200 characters itself) is in data
        data={"version": header.version, "service": service, "rules": [_audit_rule(r) for r in stored]},
    )
    _changed(team_id)
    stored.sort(key=lambda r: (r.priority, r.id))
    return header, stored


def _locked_header(team_id: int, expected_versions: Collection[int] | None) -> RuleSet:
    RuleSet.objects.get_or_create(team_id=team_id)
    header = RuleSet.objects.select_for_update().get(team_id=team_id)
    if expected_versions is not None and header.version not in expected_versions:
        raise VersionConflict(header.version, expected_versions)
    return header


def _bump(header: RuleSet, actor: str) -> None:
    header.version += 1
    header.updated_at = timezone.now()
    header.updated_by = actor
    header.save(update_fields=["version", "updated_at", "updated_by"])


def _replace(
    team_id: int, scope: QuerySet[RoutingRule], rules: Sequence[Mapping[str, Any]], *, service: str
) -> list[RoutingRule]:
    """Make the rows of ``scope`` be ``rules``; new rows are owned by ``service``."""
    now = timezone.now()
    existing = {r.id: r for r in scope}
    by_name = {r.name: r for r in existing.values()}
    claimed: dict[int, Mapping[str, Any]] = {}
    for data in rules:
        if data.get("id") in existing:
            claimed[data["id"]] = data
    for data in rules:
        if data.get("id") not in existing:
            row = by_name.get(data["name"])
            if row is not None and row.id not in claimed:
                claimed[row.id] = data

    scope.exclude(id__in=claimed).delete()
    # Names are unique per team: park renamed rows under a placeholder first, so a swap of two
    # names never collides half-way.
    renamed = [existing[i] for i, data in claimed.items() if existing[i].name != data["name"]]
    for row in renamed:
        RoutingRule.objects.filter(id=row.id).update(name=f"~renaming~{uuid.uuid4().hex}")

    stored: list[RoutingRule] = []
    claimed_by_data = {id(data): row_id for row_id, data in claimed.items()}
    for data in rules:
        row_id = claimed_by_data.get(id(data))
        values = {field: data[field] for field in RULE_FIELDS}
        if row_id is None:
            stored.append(
                RoutingRule.objects.create(team_id=team_id, service=service, created_at=now, updated_at=now, **values)
            )
            continue
        row = existing[row_id]
        if any(getattr(row, field) != value for field, value in values.items()) or row in renamed:
            for field, value in values.items():
                setattr(row, field, value)
            row.updated_at = now
            row.save()
        stored.append(row)
    return stored


def _audit_rule(rule: RoutingRule) -> dict[str, Any]:
    return {"id": rule.id, "service": rule.service, **{field: getattr(rule, field) for field in RULE_FIELDS}}


@transaction.atomic
def sampling_policy_replace(
    *,
    team_id: int,
    default_sample_rate: float,
    rules: Sequence[Mapping[str, Any]],
    actor: str,
    expected_versions: Collection[int] | None = None,
) -> SamplingPolicy:
    SamplingPolicy.objects.get_or_create(team_id=team_id)
    policy = SamplingPolicy.objects.select_for_update().get(team_id=team_id)
    if expected_versions is not None and policy.version not in expected_versions:
        raise VersionConflict(policy.version, expected_versions)
    policy.default_sample_rate = default_sample_rate
    policy.rules = [{"condition": r["condition"], "sample_rate": r["sample_rate"]} for r in rules]
    policy.version += 1
    policy.updated_at = timezone.now()
    policy.save(update_fields=["default_sample_rate", "rules", "version", "updated_at"])
    audit(
        team=team_id,
        actor=actor,
        action="routing.sampling.replace",
        target=f"v{policy.version}",
        data={"version": policy.version, "default_sample_rate": default_sample_rate, "rules": policy.rules},
    )
    _changed(team_id)
    return policy


@transaction.atomic
def routing_rules_touched(*, team_id: int, actor: str) -> RuleSet:
    """Rules changed outside `routing_rules_replace` (the Django admin): move the version on, so
    ETags change and every process recompiles."""
    RuleSet.objects.get_or_create(team_id=team_id)
    header = RuleSet.objects.select_for_update().get(team_id=team_id)
    header.version += 1
    header.updated_at = timezone.now()
    header.updated_by = actor
    header.save(update_fields=["version", "updated_at", "updated_by"])
    _changed(team_id)
    return header


@transaction.atomic
def sampling_policy_touched(*, team_id: int) -> None:
    """The sampling policy changed outside `sampling_policy_replace` (the Django admin)."""
    SamplingPolicy.objects.filter(team_id=team_id).update(version=F("version") + 1, updated_at=timezone.now())
    _changed(team_id)
