"""`/analytics`: the dashboard's figures, from the selector GET /api/v1/analytics answers with
(`analytics.selectors`), filtered by the trace feed's own filter form (`FeedFilterForm`, which
parses with `traces.filters`), with SVG charts (`analytics.charts`) whose every bar and point opens
the trace feed filtered to the traces behind it (`analytics.page`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.access import DashboardRequest, team_view
from traces.filters import FilterError
from traces.scores import score_names
from traces.views.forms import FeedFilterForm

from . import page, selectors

DEFAULT_RANGE = "24h"
RANGE_CHOICES = [
    ("1h", "Last hour"),
    ("24h", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("custom", "Custom (from / until)"),
]
INTERVAL_CHOICES = [("", "Automatic"), ("minute", "Per minute"), ("hour", "Per hour"), ("day", "Per day")]
BREAKDOWNS = (("model", "Models"), ("provider", "Providers"), ("tag", "Tags"))
BREAKDOWN_LIMIT = 8
BREAKDOWN_ALL = 200  # "Show all" (?show=<group_by>): every group up to this many


class AnalyticsFilterForm(FeedFilterForm):
    """The feed's filters, with ranges up to 30 days, the series' interval and the score to chart
    (the API's `score=<name>`: its average per interval)."""

    time_range = forms.CharField(label="Time range", required=False, widget=forms.Select(choices=RANGE_CHOICES))
    interval = forms.CharField(label="Interval", required=False, widget=forms.Select(choices=INTERVAL_CHOICES))
    score = forms.CharField(label="Score chart", required=False, widget=forms.Select(choices=[("", "No score chart")]))

    def __init__(
        self, params: QueryDict, *, score_names: Sequence[str] = (), numeric_names: Sequence[str] = ()
    ) -> None:
        super().__init__(params, score_names=score_names)
        chosen = str(params.get("score") or "")
        names = list(dict.fromkeys([*numeric_names, *([chosen] if chosen else [])]))
        self.fields["score"].widget.choices = [("", "No score chart"), *((n, n) for n in names)]  # type: ignore[attr-defined]


@team_view()
def analytics_page(request: DashboardRequest) -> HttpResponse:
    has_blanks = any(not v.strip() for _, vs in request.GET.lists() for v in vs)
    params = request.GET.copy()
    if not any(params.get(k, "").strip() for k in ("time_range", "since", "until")):
        params["time_range"] = DEFAULT_RANGE
    form = AnalyticsFilterForm(
        params, score_names=score_names(request.team.pk), numeric_names=score_names(request.team.pk, numeric=True)
    )
    if has_blanks and not request.htmx:
        return redirect(_url(form))  # a GET form sends its empty fields: share a clean URL
    context: dict[str, Any] = {"form": form, "query": form.query(), "clear_url": reverse("analytics-page")}
    show_all = request.GET.get("show", "")
    show_all = show_all if show_all in dict(BREAKDOWNS) else ""
    body = _figures(request.team.pk, form, show_all)
    if body is None:
        return render(request, "analytics/page.html", {**context, "invalid": True}, status=400)
    filters = {k: v for k, v in form.filter_params().items() if k != "score"}  # (the chart's, not a filter)
    context.update(page.context(body, filters, groups=body.pop("breakdowns")))
    for b in context["breakdowns"]:  # "Show all" where the top BREAKDOWN_LIMIT may not be all
        here = reverse("analytics-page") + "?" + form.query()
        if b["group_by"] == show_all:
            b["show_top_url"] = f"{here}#breakdown-{b['group_by']}"
        elif len(b["rows"]) >= BREAKDOWN_LIMIT:
            b["show_all_url"] = f"{here}&{urlencode({'show': b['group_by']})}#breakdown-{b['group_by']}"
    return render(request, "analytics/page.html", context)


def _figures(team_id: int, form: AnalyticsFilterForm, show_all: str = "") -> dict[str, Any] | None:
    """The selector's answer plus one breakdown per BREAKDOWNS entry (the top BREAKDOWN_LIMIT groups;
    ``show_all``'s up to BREAKDOWN_ALL), or None with the error added next to its field."""
    if form.trace_filter() is None:  # the error is next to its field already
        return None
    params = QueryDict(form.query())
    try:
        query = selectors.parse_query(params, now=None, limit=BREAKDOWN_LIMIT)
        body = selectors.analytics_for_team(team_id=team_id, query=query)
    except (FilterError, selectors.AnalyticsError) as exc:
        form.add_error(exc.param if exc.param in form.fields else None, exc.message)
        return None
    breakdowns: dict[str, Any] = {}
    for group_by, _title in BREAKDOWNS:
        try:
            # (The tables show the p95 latency: no TTFT histograms read.)
            asked = replace(query, limit=BREAKDOWN_ALL) if group_by == show_all else query
            breakdowns[group_by] = selectors.analytics_groups(
                team_id=team_id, query=asked, group_by=group_by, ttft=False
            )
        except selectors.AnalyticsError as exc:
            breakdowns[group_by] = exc.message  # shown in that card instead of its table
    body["breakdowns"] = breakdowns
    return body


def _url(form: AnalyticsFilterForm) -> str:
    query = form.query()
    return reverse("analytics-page") + (f"?{query}" if query else "")
