"""`/routing`: the rule list (reorder, enable/disable, delete) and the rule form (create, edit).

Every change goes through `routing.edits`: the API's serializer and service, against the version
the page was rendered with, so a page opened before someone else saved is refused and says so.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from .. import edits, selectors
from ..builder import Row
from ..destinations import DestinationChecker
from ..edits import RuleNotFound, RuleSetInvalid, VersionConflict
from .forms import (
    FALLBACK_SLOTS,
    DestRow,
    FormInvalid,
    RuleState,
    apply_errors,
    cel_check,
    destination_choices,
    field_choices,
    operator_choices,
    state_from_post,
    state_from_rule,
    to_document,
)
from .test import blank_trial, trace_choices

MANAGE = Permission.MANAGE_RULES


def posted_version(request: HttpRequest) -> int:
    """The rule-set version the page was rendered with (a hidden field); -1 when missing, which no
    stored version equals, so a form without one is treated as stale."""
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        return -1


def _rule_views(team_id: int, focus: tuple[int, str] | None) -> list[dict[str, Any]]:
    """The rules for the list; ``focus`` (rule id, "up"|"down"|"toggle") names the button that
    keeps the keyboard focus after an htmx swap (the other arrow once a rule reaches an end)."""
    rules = [selectors.rule_as_dict(r) for r in selectors.routing_rules(team_id)]
    for i, rule in enumerate(rules):
        rule["focus"] = ""
        if focus is not None and focus[0] == rule["id"]:
            kind = focus[1]
            if kind == "up" and i == 0:
                kind = "down"
            elif kind == "down" and i == len(rules) - 1:
                kind = "up"
            rule["focus"] = kind
    return rules


def _list_page(
    request: DashboardRequest, status: int = 200, focus: tuple[int, str] | None = None, **extra: Any
) -> HttpResponse:
    team_id = request.team.pk
    context = {
        "rules": _rule_views(team_id, focus),
        "header": selectors.rule_set(team_id),
        "policy": selectors.sampling_policy(team_id),
        "tab": "rules",
        **extra,
    }
    template = "routing/rules.html#rule-list" if request.htmx else "routing/rules.html"
    return render(request, template, context, status=status)


@team_view()
def routing_rules(request: DashboardRequest) -> HttpResponse:
    return _list_page(request)


def _list_action(request: DashboardRequest, rule_id: int, what: str, focus: str, change: Any) -> HttpResponse:
    """Run one list action; a stale page gets the current list back (409) saying so."""
    version = posted_version(request)
    try:
        change(version)
    except VersionConflict:
        header = selectors.rule_set(request.team.pk)
        return _list_page(request, status=409, conflict={"header": header, "attempt": what})
    except RuleNotFound:
        raise Http404("No such rule in this team.") from None
    except RuleSetInvalid as exc:
        return _list_page(request, status=400, refused={"attempt": what, "errors": exc.elsewhere()})
    if request.htmx:
        return _list_page(request, focus=(rule_id, focus))
    return redirect(f"{reverse('routing-page')}#rule-{rule_id}")


def _rule_name(request: DashboardRequest, rule_id: int) -> str:
    rule = selectors.routing_rule(request.team.pk, rule_id)
    if rule is None:
        raise Http404("No such rule in this team.")
    return rule.name


@require_POST
@team_view(MANAGE)
def rule_move(request: DashboardRequest, rule_id: int) -> HttpResponse:
    """Up/down (``direction``), or a drag and drop (``position``: the place it was dropped at, 1 first)."""
    name = _rule_name(request, rule_id)
    actor = request_actor(request)
    position = request.POST.get("position")
    if position is not None:
        try:
            to = int(position)
        except ValueError:
            problem = f"position: A place in the list is a whole number, not '{position}'."
            return _list_page(request, status=400, refused={"attempt": f"move '{name}'", "errors": [problem]})
        return _list_action(
            request,
            rule_id,
            f"move '{name}' to place {to}",
            "up",
            lambda v: edits.rule_move(team_id=request.team.pk, rule_id=rule_id, to=to, version=v, actor=actor),
        )
    by = -1 if request.POST.get("direction") == "up" else 1
    return _list_action(
        request,
        rule_id,
        f"move '{name}' {'up' if by < 0 else 'down'}",
        "up" if by < 0 else "down",
        lambda v: edits.rule_move(team_id=request.team.pk, rule_id=rule_id, by=by, version=v, actor=actor),
    )


@require_POST
@team_view(MANAGE)
def rule_toggle(request: DashboardRequest, rule_id: int) -> HttpResponse:
    enabled = request.POST.get("enabled") == "true"
    name = _rule_name(request, rule_id)
    return _list_action(
        request,
        rule_id,
        f"{'enable' if enabled else 'disable'} '{name}'",
        "toggle",
        lambda v: edits.rule_set_enabled(
            team_id=request.team.pk, rule_id=rule_id, enabled=enabled, version=v, actor=request_actor(request)
        ),
    )


@require_POST
@team_view(MANAGE)
def rule_delete(request: DashboardRequest, rule_id: int) -> HttpResponse:
    name = _rule_name(request, rule_id)
    version = posted_version(request)
    try:
        edits.rule_delete(team_id=request.team.pk, rule_id=rule_id, version=version, actor=request_actor(request))
    except VersionConflict:
        header = selectors.rule_set(request.team.pk)
        return _list_page(request, status=409, conflict={"header": header, "attempt": f"delete '{name}'"})
    except RuleSetInvalid as exc:
        return _list_page(request, status=400, refused={"attempt": f"delete '{name}'", "errors": exc.elsewhere()})
    messages.success(request, f"Rule '{name}' deleted. Traces ingested from now on are routed without it.")
    return redirect("routing-page")


# ---------------------------------------------------------------------------------------------
# The rule form


def form_page(
    request: DashboardRequest,
    state: RuleState,
    *,
    rule_id: int | None,
    version: int,
    status: int = 200,
    conflict: dict[str, Any] | None = None,
    trial: dict[str, Any] | None = None,
    partial: bool = False,
) -> HttpResponse:
    """The rule form; ``trial``: "Test this rule" with what it ran (``partial``: only the editor, for htmx)."""
    checker = DestinationChecker(request.team.pk)
    current = [d.name for d in state.destinations] + [f for d in state.destinations for f in d.fallbacks]
    if state.mode == "cel" and state.cel_error is None and state.cel.strip():
        state.cel_error = cel_check(state.cel)
    context = {
        "state": state.padded(spare=request.method != "POST"),
        "rule_id": rule_id,
        "version": version,
        "conflict": conflict,
        "fields": field_choices(),
        "operators": operator_choices(),
        "choices": destination_choices(checker, current),
        "fallback_slots": range(FALLBACK_SLOTS),
        "blank_row": Row(),
        "blank_dest": DestRow(index=0),
        "editable": request.membership.may.manage_rules,
        "tab": "rules",
        "trial": trial or blank_trial(),
        "attempt": "tested" if trial else "saved",
        **trace_choices(),
    }
    template = "routing/rule_form.html#editor" if partial else "routing/rule_form.html"
    return render(request, template, context, status=status)


@team_view(MANAGE)
def rule_new(request: DashboardRequest) -> HttpResponse:
    if request.method != "POST":
        return form_page(request, RuleState(), rule_id=None, version=selectors.rule_set(request.team.pk).version)
    return _save(request, state_from_post(request.POST), None)


@team_view(Permission.READ, write=MANAGE)
def rule_edit(request: DashboardRequest, rule_id: int) -> HttpResponse:
    if request.method == "POST":  # a rule deleted since the page was opened is a stale page, not a 404
        return _save(request, state_from_post(request.POST), rule_id)
    rule = selectors.routing_rule(request.team.pk, rule_id)
    if rule is None:
        raise Http404("No such rule in this team.")
    state = state_from_rule(selectors.rule_as_dict(rule))
    return form_page(request, state, rule_id=rule_id, version=selectors.rule_set(request.team.pk).version)


def _save(request: DashboardRequest, state: RuleState, rule_id: int | None) -> HttpResponse:
    team_id = request.team.pk
    version = posted_version(request)
    stored = selectors.routing_rule(team_id, rule_id) if rule_id is not None else None
    previous = selectors.rule_as_dict(stored) if stored is not None else None
    try:
        document, rows = to_document(state, previous)
    except FormInvalid:
        return form_page(request, state, rule_id=rule_id, version=version, status=400)
    try:
        _, rule = edits.rule_save(
            team_id=team_id, rule=document, rule_id=rule_id, version=version, actor=request_actor(request)
        )
    except VersionConflict as exc:
        theirs = selectors.routing_rule(team_id, rule_id) if rule_id is not None else None
        conflict = {
            "header": selectors.rule_set(team_id),
            "theirs": selectors.rule_as_dict(theirs) if theirs is not None else None,
            "deleted": rule_id is not None and theirs is None,
        }
        # The form now carries the current version: saving again (after reading theirs) replaces it.
        return form_page(request, state, rule_id=rule_id, version=exc.current, status=409, conflict=conflict)
    except RuleNotFound:
        raise Http404("No such rule in this team.") from None
    except RuleSetInvalid as exc:
        apply_errors(state, exc.for_rule(), rows)
        state.general.extend(exc.elsewhere())
        return form_page(request, state, rule_id=rule_id, version=version, status=400)
    verb = "created" if rule_id is None else "saved"
    messages.success(request, f"Rule '{rule.name}' {verb}. Traces ingested from now on are routed by it.")
    return redirect(f"{reverse('routing-page')}#rule-{rule.pk}")


@require_POST
@team_view()
def condition_check(request: DashboardRequest) -> HttpResponse:
    """htmx, as the CEL condition is typed: the compiler's verdict, at its line and column."""
    source = request.POST.get("cel", "").replace("\r\n", "\n")
    check = cel_check(source)
    return render(
        request,
        "routing/rule_form.html#cel-status",
        {"state": RuleState(mode="cel", cel=source, cel_error=check)},
        status=200 if check.ok else 422,
    )
