"""Validation helpers shared by the rule, sampling and dry-run endpoints."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from config.problems import Problem, flatten_errors

from . import selectors
from .destinations import DestinationChecker


def validation_problem(detail: Any, data: Any, *, title: str, prefix: str = "") -> Problem:
    """Serializer errors → a 400 problem whose detail names the rule (by name) and the field."""
    errors = flatten_errors(detail, prefix)
    path, messages = next(iter(errors.items()), ("", ["Invalid input."]))
    where = f"{path}: " if path else ""
    match = re.match(r"(?:rules)\[(\d+)\]", path.removeprefix(f"{prefix}.") if prefix else path)
    rules = data.get("rules") if isinstance(data, Mapping) else data if isinstance(data, list) else None
    if match and isinstance(rules, list):
        index = int(match.group(1))
        item = rules[index] if index < len(rules) else None
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name.strip():
            where = f"Rule '{name.strip()}' ({path}): "
    return Problem(400, "validation", f"{where}{messages[0]}", title=title, errors=errors)


def rules_context(team_id: int, service: str | None = None) -> dict[str, Any]:
    """What a rule-set serializer checks against: the team's destinations, the ids the body may name,
    and (for one service's rules) the names other owners hold."""
    return {
        "destination_checker": DestinationChecker(team_id),
        "team_rule_ids": selectors.rule_ids(team_id, service),
        "names_taken": selectors.rule_owners_besides(team_id, service) if service is not None else {},
        "service": service,
    }
