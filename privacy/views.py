"""`/settings/privacy`: the team's PII policy (every role reads it; admins and owners change it) and
a "try it" box backed by the same scan as `POST /api/v1/pii/scan`. The same validation
(`clean_policy`) and service (`pii_policy_replace`) as the API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from . import selectors, services
from .detection import BUILTIN_KINDS
from .models import Mode
from .validation import clean_policy

MANAGE = Permission.MANAGE_INTEGRATIONS  # what reaches which destination is an integration setting
INHERIT = ""  # a destination without an entry gets what was stored
PATTERN_ROWS = 3  # empty rows offered for new custom patterns
MAX_TRY_CHARS = 20_000

MODE_HELP = {
    Mode.OFF: "Nothing is scanned.",
    Mode.DETECT: "Text kept; the kinds found are counted on the trace.",
    Mode.REDACT: "Each value becomes a placeholder like [EMAIL].",
    Mode.HASH: "Each value becomes a stable pseudonym like [EMAIL:3f9a1c0b7d2e].",
    Mode.DROP: "The field holding PII is removed or emptied.",
}


@dataclass
class PatternRow:
    index: int
    name: str = ""
    regex: str = ""
    name_errors: tuple[str, ...] = ()
    regex_errors: tuple[str, ...] = ()


def _context(request: DashboardRequest, data: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    names = sorted(selectors.integration_names(request.team.pk))
    destinations = data.get("destinations", {})
    rows: list[PatternRow] = []
    row_of = data.get("_pattern_rows") or list(range(len(data.get("custom_patterns", []))))
    for i, pattern in enumerate(data.get("custom_patterns", [])):
        rows.append(
            PatternRow(
                index=row_of[i],
                name=pattern.get("name", ""),
                regex=pattern.get("regex", ""),
                name_errors=tuple(errors.get(f"custom_patterns[{i}].name", ())),
                regex_errors=tuple(errors.get(f"custom_patterns[{i}]", ()))
                + tuple(errors.get(f"custom_patterns[{i}].regex", ())),
            )
        )
    start = max((r.index for r in rows), default=-1) + 1
    rows.extend(PatternRow(index=start + i) for i in range(PATTERN_ROWS))
    kinds = set(data.get("kinds", BUILTIN_KINDS))
    kind_errors = [m for key, msgs in errors.items() if key.startswith("kinds") for m in msgs]
    return {
        "modes": [(m.value, m.label, MODE_HELP[m]) for m in Mode],
        "stored_mode": data.get("stored", {}).get("mode", Mode.OFF),
        "stored_errors": errors.get("stored", []) + errors.get("stored.mode", []),
        "destinations": [
            {
                "name": name,
                "mode": destinations.get(name, {}).get("mode", INHERIT),
                "errors": errors.get(f"destinations.{name}", []) + errors.get(f"destinations.{name}.mode", []),
            }
            for name in names
        ],
        "stale_destinations": sorted(set(destinations) - set(names)),
        "kinds": [(kind, kind in kinds) for kind in BUILTIN_KINDS],
        "kind_errors": kind_errors,
        "patterns": rows,
        "pattern_errors": errors.get("custom_patterns", []),
        "has_errors": bool(errors),
    }


def _page(
    request: DashboardRequest,
    data: dict[str, Any] | None = None,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    policy = selectors.pii_policy(request.team.pk)
    context = _context(request, data if data is not None else selectors.policy_as_dict(policy), errors or {})
    context["policy"] = policy
    return render(request, "privacy/settings.html", context, status=status)


@team_view()
def privacy_settings(request: DashboardRequest) -> HttpResponse:
    return _page(request)


def _posted_policy(request: DashboardRequest) -> dict[str, Any]:
    """The form → the API's policy document (so `clean_policy` checks it the same way)."""
    post = request.POST
    names = selectors.integration_names(request.team.pk)
    destinations = {
        name: {"mode": post.get(f"destination-{name}", INHERIT)}
        for name in sorted(names)
        if post.get(f"destination-{name}", INHERIT) != INHERIT
    }
    patterns: list[dict[str, str]] = []
    rows: list[int] = []
    indexes = sorted({int(k.split("-")[1]) for k in post if k.startswith("pattern-") and k.split("-")[1].isdigit()})
    for i in indexes:
        name, regex = post.get(f"pattern-{i}-name", "").strip(), post.get(f"pattern-{i}-regex", "")
        if name or regex.strip():
            patterns.append({"name": name, "regex": regex})
            rows.append(i)
    return {
        "stored": {"mode": post.get("stored", Mode.OFF)},
        "destinations": destinations,
        "kinds": post.getlist("kinds"),
        "custom_patterns": patterns,
        "_pattern_rows": rows,
    }


@require_POST
@team_view(MANAGE)
def privacy_settings_save(request: DashboardRequest) -> HttpResponse:
    data = _posted_policy(request)
    document = {k: v for k, v in data.items() if not k.startswith("_")}
    cleaned = clean_policy(document, known_destinations=selectors.integration_names(request.team.pk))
    if isinstance(cleaned, dict):
        return _page(request, data, cleaned, status=400)
    row = services.pii_policy_replace(team_id=request.team.pk, policy=cleaned, actor=request_actor(request))
    messages.success(
        request,
        f"PII policy saved (version {row.version}). It applies to every trace ingested from now on; "
        "traces already stored are not changed.",
    )
    return redirect("settings-privacy")


@require_POST
@team_view()
def privacy_try(request: DashboardRequest) -> HttpResponse:
    text = request.POST.get("text", "")
    context: dict[str, Any] = {"text": text}
    status = 200
    if len(text) > MAX_TRY_CHARS:
        context["try_error"] = f"At most {MAX_TRY_CHARS:,} characters; this is {len(text):,}."
        status = 400
    elif text.strip():
        context["result"] = selectors.scan_text(request.team.pk, text)
    template = "privacy/settings.html#try-result" if request.htmx else "privacy/settings.html"
    if not request.htmx:
        policy = selectors.pii_policy(request.team.pk)
        context.update(_context(request, selectors.policy_as_dict(policy), {}), policy=policy)
    return render(request, template, context, status=status)
