"""One change at a time to the rule set and the sampling policy, for the dashboard (and one
candidate rule for the dry run, `rule_trial`, which the API's ``rule`` uses too).

The rules API replaces the whole set; a page changes one rule. Each function here builds the whole
document the API would receive (the stored rules as a GET shows them, with this one change),
validates it with the API's serializers and stores it with the API's services, checked against
the version the page was rendered with (as a PUT's ``If-Match``). So a page can store nothing the
API would refuse, and a page opened before someone else saved is refused like a stale PUT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from config.problems import flatten_errors

from . import selectors, services
from .models import RoutingRule, RuleSet, SamplingPolicy
from .serializers import RoutingRuleSetSerializer, SamplingPolicySerializer
from .services import VersionConflict
from .validation import rules_context

PRIORITY_STEP = 10  # a new rule goes this far after the last one; a renumbering spaces rules so

__all__ = [
    "RuleNotFound",
    "RuleSetInvalid",
    "VersionConflict",
    "rule_delete",
    "rule_move",
    "rule_save",
    "rule_set_enabled",
    "rule_trial",
    "rules_document",
    "rules_with",
    "sampling_save",
]


class RuleNotFound(LookupError):
    """No such rule in this team (another team's rule is not found either)."""


class RuleSetInvalid(ValueError):
    """The changed document does not validate. ``errors`` are the API's paths
    (``rules[2].condition``); ``index`` is the changed rule's place in the document."""

    def __init__(self, errors: dict[str, list[str]], index: int | None, names: Sequence[str]) -> None:
        super().__init__(next(iter(errors.values()), ["invalid"])[0])
        self.errors = errors
        self.index = index
        self.names = list(names)

    def for_rule(self) -> dict[str, list[str]]:
        """The changed rule's errors, by field path inside the rule (``condition``, ``destinations[0].name``)."""
        if self.index is None:
            return {}
        prefix = f"rules[{self.index}]"
        out: dict[str, list[str]] = {}
        for path, messages in self.errors.items():
            if path == prefix:
                out.setdefault("", []).extend(messages)
            elif path.startswith(prefix + ".") or path.startswith(prefix + "["):
                out.setdefault(path[len(prefix) :].lstrip("."), []).extend(messages)
        return out

    def others(self) -> dict[str, list[str]]:
        """The errors that are not the changed rule's, by their paths in the document."""
        mine = f"rules[{self.index}]" if self.index is not None else None
        return {
            path: messages
            for path, messages in self.errors.items()
            if not (mine and (path == mine or path.startswith(mine + ".") or path.startswith(mine + "[")))
        }

    def elsewhere(self) -> list[str]:
        """Errors in the other (stored) rules: say which rule, in words."""
        out: list[str] = []
        for path, messages in self.others().items():
            where = path
            if path.startswith("rules["):
                index = int(path[6 : path.index("]")])
                if index < len(self.names):
                    rest = path[path.index("]") + 1 :].lstrip(".")
                    where = f"Rule '{self.names[index]}'" + (f" ({rest})" if rest else "")
            out.extend(f"{where}: {m}" if where else m for m in messages)
        return out


def rules_document(team_id: int) -> list[dict[str, Any]]:
    """The stored rules as the API's GET shows them (and a PUT takes them back), in order."""
    out = []
    for rule in selectors.routing_rules(team_id):
        body = selectors.rule_as_dict(rule)
        body.pop("created_at")
        body.pop("updated_at")
        out.append(body)
    return out


def _check_version(team_id: int, version: int) -> None:
    current = selectors.rule_set(team_id).version
    if current != version:
        raise VersionConflict(current, {version})


def _validated(team_id: int, rules: list[dict[str, Any]], index: int | None) -> list[dict[str, Any]]:
    """The document through the API's serializer: its validated rules, or `RuleSetInvalid`."""
    serializer = RoutingRuleSetSerializer(data={"rules": rules}, context=rules_context(team_id))
    if not serializer.is_valid():
        names = [str(r.get("name", "")) for r in rules]
        raise RuleSetInvalid(flatten_errors(serializer.errors), index, names)
    return list(serializer.validated_data["rules"])


def _store(
    team_id: int, rules: list[dict[str, Any]], *, actor: str, version: int, index: int | None = None
) -> tuple[RuleSet, list[RoutingRule]]:
    return services.routing_rules_replace(
        team_id=team_id, rules=_validated(team_id, rules, index), actor=actor, expected_versions={version}
    )


def _index_of(rules: Sequence[Mapping[str, Any]], rule_id: int) -> int:
    for i, rule in enumerate(rules):
        if rule["id"] == rule_id:
            return i
    raise RuleNotFound(rule_id)


def rules_with(team_id: int, rule: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The stored rules (as a PUT carries them) with ``rule`` (the API's rule shape) in place of the
    stored rule its ``id`` names, or, without an ``id``, added after the last one; and its index.
    A rule without a priority keeps the one it replaces, or (added) goes `PRIORITY_STEP` after the
    last. `RuleNotFound` when the ``id`` is no stored rule of this team."""
    rules = rules_document(team_id)
    body = dict(rule)
    rule_id = body.get("id")
    if rule_id is None:
        if body.get("priority") is None:
            body["priority"] = max((r["priority"] for r in rules), default=0) + PRIORITY_STEP
        rules.append(body)
        return rules, len(rules) - 1
    if not isinstance(rule_id, int) or isinstance(rule_id, bool):
        rules.append(body)  # the serializer refuses the id, at this rule
        return rules, len(rules) - 1
    index = _index_of(rules, rule_id)
    if body.get("priority") is None:
        body["priority"] = rules[index]["priority"]
    rules[index] = body
    return rules, index


def rule_trial(*, team_id: int, rule: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rule set a dry run of ``rule`` routes by: `rules_with`, validated as `rule_save` would
    validate it (`RuleSetInvalid`, with the rule's own errors at ``index``), stored nowhere."""
    rules, index = rules_with(team_id, rule)
    return _validated(team_id, rules, index)


def rule_save(
    *, team_id: int, rule: Mapping[str, Any], rule_id: int | None, version: int, actor: str
) -> tuple[RuleSet, RoutingRule]:
    """Create (``rule_id`` None) or replace one rule, given in the API's rule shape. A new rule
    without a priority runs after the last one."""
    _check_version(team_id, version)
    body = {**rule, "id": rule_id} if rule_id is not None else {k: v for k, v in rule.items() if k != "id"}
    rules, index = rules_with(team_id, body)
    header, stored = _store(team_id, rules, actor=actor, version=version, index=index)
    name = str(body["name"]).strip()
    return header, next(r for r in stored if r.name == name)


def rule_delete(*, team_id: int, rule_id: int, version: int, actor: str) -> RuleSet:
    _check_version(team_id, version)
    rules = rules_document(team_id)
    del rules[_index_of(rules, rule_id)]
    return _store(team_id, rules, actor=actor, version=version)[0]


def rule_set_enabled(*, team_id: int, rule_id: int, enabled: bool, version: int, actor: str) -> RuleSet:
    _check_version(team_id, version)
    rules = rules_document(team_id)
    rules[_index_of(rules, rule_id)]["enabled"] = enabled
    return _store(team_id, rules, actor=actor, version=version)[0]


def rule_move(*, team_id: int, rule_id: int, version: int, actor: str, by: int = 0, to: int | None = None) -> RuleSet:
    """Move a rule ``by`` places (-1: up, runs earlier; the up/down buttons), or ``to`` a place in
    the list (1: first; a drag and drop). The rules keep the priority numbers they had, in their
    new order, when those are all different; otherwise (equal priorities run in the order they
    were created, which a move cannot change) they are renumbered 10, 20, 30 … A ``to`` outside
    the list is `RuleSetInvalid` under ``position``."""
    _check_version(team_id, version)
    rules = rules_document(team_id)
    index = _index_of(rules, rule_id)
    if to is None:
        target = max(0, min(len(rules) - 1, index + by))
    elif 1 <= to <= len(rules):
        target = to - 1
    else:
        raise RuleSetInvalid({"position": [f"Choose a place from 1 to {len(rules)}, not {to}."]}, None, [])
    priorities = [r["priority"] for r in rules]
    rules.insert(target, rules.pop(index))
    if len(set(priorities)) != len(priorities):
        priorities = [(i + 1) * PRIORITY_STEP for i in range(len(rules))]
    for rule, priority in zip(rules, priorities, strict=True):
        rule["priority"] = priority
    return _store(team_id, rules, actor=actor, version=version)[0]


def sampling_save(*, team_id: int, document: Mapping[str, Any], version: int, actor: str) -> SamplingPolicy:
    """Replace the sampling policy (the API's document shape), if it is still at ``version``.
    Raises `RuleSetInvalid` (paths ``default_sample_rate``, ``rules[0].condition`` …) or `VersionConflict`."""
    current = selectors.sampling_policy(team_id).version
    if current != version:
        raise VersionConflict(current, {version})
    serializer = SamplingPolicySerializer(data=dict(document))
    if not serializer.is_valid():
        raise RuleSetInvalid(flatten_errors(serializer.errors), None, [])
    return services.sampling_policy_replace(
        team_id=team_id,
        default_sample_rate=serializer.validated_data["default_sample_rate"],
        rules=serializer.validated_data["rules"],
        actor=actor,
        expected_versions={version},
    )
