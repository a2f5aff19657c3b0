"""`/routing/sampling`: the team's sampling policy (every role reads it; admins and owners change
it), through the API's serializer and service (`routing.edits.sampling_save`), against the
version the page was rendered with."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from .. import edits, selectors
from ..edits import RuleSetInvalid, VersionConflict
from .rules import posted_version

EMPTY_ROWS = 2
# Example policy rules the page offers (condition, rate, what it does); a test saves them all.
EXAMPLES = (
    ('environment == "development"', "0.1", "a tenth of development traffic"),
    ("!error && cost < 0.001", "0.2", "a fifth of cheap calls that succeeded"),
    ('model.startsWith("gpt-4o-mini")', "0.5", "half of a high-volume model"),
    ('"healthcheck" in tags', "0", "none of the health checks"),
    ('metadata.plan == "free"', "0.25", "a quarter of free-plan traffic"),
)
_ROW_RE = re.compile(r"^rule-(\d{1,3})-")
_PATH_RE = re.compile(r"^rules\[(\d+)\](?:\.(condition|sample_rate))?")


@dataclass
class PolicyRow:
    index: int
    condition: str = ""
    sample_rate: str = ""
    errors: dict[str, list[str]] = field(default_factory=dict)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)


def _rows_from_policy(policy: Any) -> list[PolicyRow]:
    return [
        PolicyRow(i, _text(rule.get("condition")), _text(rule.get("sample_rate")))
        for i, rule in enumerate(policy.rules or ())
    ]


def _page(
    request: DashboardRequest,
    *,
    default: str | None = None,
    rows: list[PolicyRow] | None = None,
    version: int | None = None,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
    conflict: dict[str, Any] | None = None,
) -> HttpResponse:
    policy = selectors.sampling_policy(request.team.pk)
    rows = rows if rows is not None else _rows_from_policy(policy)
    start = max((r.index for r in rows), default=-1) + 1
    if request.membership.may.manage_rules:
        rows = rows + [PolicyRow(start + i) for i in range(EMPTY_ROWS)]
    context = {
        "tab": "sampling",
        "policy": policy,
        "default": default if default is not None else _text(policy.default_sample_rate),
        "rows": rows,
        "version": policy.version if version is None else version,
        "errors": errors or {},
        "conflict": conflict,
        "theirs": _rows_from_policy(policy) if conflict else None,
        "editable": request.membership.may.manage_rules,
        "rows_have_errors": any(r.errors for r in rows),
        "examples": EXAMPLES,
    }
    return render(request, "routing/sampling.html", context, status=status)


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text  # the API's validation refuses it, with its own words


def _condition(text: str) -> Any:
    """A CEL string, or an object condition written as JSON (as the API takes both)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


@team_view(Permission.READ, write=Permission.MANAGE_RULES)
def sampling_policy(request: DashboardRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request)
    post = request.POST
    default = post.get("default_sample_rate", "").strip()
    indexes = sorted({int(m.group(1)) for key in post if (m := _ROW_RE.match(key))})
    rows = []
    for i in indexes:
        condition = post.get(f"rule-{i}-condition", "").replace("\r\n", "\n")
        rate = post.get(f"rule-{i}-sample_rate", "").strip()
        if condition.strip() or rate:
            rows.append(PolicyRow(i, condition, rate))
    document: dict[str, Any] = {
        "rules": [{"condition": _condition(r.condition), "sample_rate": _number(r.sample_rate)} for r in rows]
    }
    if default:
        document["default_sample_rate"] = _number(default)
    version = posted_version(request)
    try:
        policy = edits.sampling_save(
            team_id=request.team.pk, document=document, version=version, actor=request_actor(request)
        )
    except VersionConflict as exc:
        conflict = {"current": exc.current}
        return _page(request, default=default, rows=rows, version=exc.current, status=409, conflict=conflict)
    except RuleSetInvalid as exc:
        errors: dict[str, list[str]] = {}
        for path, found in exc.errors.items():
            match = _PATH_RE.match(path)
            if match and int(match.group(1)) < len(rows):
                row = rows[int(match.group(1))]
                row.errors.setdefault(match.group(2) or "condition", []).extend(found)
            else:
                errors.setdefault(path or "rules", []).extend(found)
        return _page(request, default=default, rows=rows, version=version, errors=errors, status=400)
    messages.success(
        request, f"Sampling policy saved (version {policy.version}). It applies to traces ingested from now on."
    )
    return redirect("routing-sampling-page")
