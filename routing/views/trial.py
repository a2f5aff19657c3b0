"""The rule form's "Test this rule": the API's dry run with the rule as it is in the form, unsaved,
in place of the saved one (or added after the last, for a new rule) among the saved rules
(`routing_dry_run(rule=…)`, which uses `edits.rule_trial`, the document and validation `rule_save`
uses), on a trace typed into the form or the team's recent traces. Nothing is saved or sent.

The answer is the form again, as typed, with the results under the button; a rule the save would
refuse gets its errors beside its fields, as the save shows them."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, team_view

from .. import selectors
from ..edits import RuleNotFound, RuleSetInvalid
from .forms import FormInvalid, apply_errors, state_from_post, to_document
from .rules import MANAGE, form_page, posted_version
from .test import COUNT_ERROR, TraceInvalid, blank_trial, posted_count, posted_trace, recent_dry_run, typed_dry_run

TRACE_PREFIX = "trace-"  # the trace's fields on the rule form (its own "tags" is the rule's)


@require_POST
@team_view(MANAGE)
def rule_try(request: DashboardRequest, rule_id: int | None = None) -> HttpResponse:
    team_id = request.team.pk
    stored = selectors.routing_rule(team_id, rule_id) if rule_id is not None else None
    if rule_id is not None and stored is None:
        raise Http404("No such rule in this team.")
    state = state_from_post(request.POST)
    source = "recent" if request.POST.get("trial-source") == "recent" else "typed"
    typed, trace, trace_errors = posted_trace(request.POST, TRACE_PREFIX)
    count = posted_count(request.POST, "trial-count")
    trial = {**blank_trial(), "source": source, "trace": typed, "recent": count or blank_trial()["recent"]}
    if source == "typed":
        trial["errors"] = trace_errors
    elif count is None:
        trial["errors"] = {"count": [COUNT_ERROR]}

    def page(status: int = 200) -> HttpResponse:
        version = posted_version(request)  # a later save is still checked against the page's version
        return form_page(
            request, state, rule_id=rule_id, version=version, status=status, trial=trial, partial=bool(request.htmx)
        )

    try:
        document, rows = to_document(state, selectors.rule_as_dict(stored) if stored is not None else None)
    except FormInvalid:
        return page(400)
    if trial["errors"]:
        return page(400)
    if rule_id is not None:
        document["id"] = rule_id
    try:
        if source == "recent":
            trial["result"] = recent_dry_run(team_id, count or 0, rule=document)
        else:
            trial["result"] = typed_dry_run(team_id, typed, trace, rule=document)
    except RuleSetInvalid as exc:
        apply_errors(state, exc.for_rule(), rows)
        state.general.extend(exc.elsewhere())
        return page(400)
    except RuleNotFound:  # deleted since the look-up above
        raise Http404("No such rule in this team.") from None
    except TraceInvalid as exc:
        trial["errors"] = exc.errors
        return page(400)
    return page()
