"""`/traces`: the live feed. Newest first, filtered by `traces.filters` (the API's parameters, kept
in the URL), paged on the (timestamp, id) cursor as the API is, and kept live by an htmx poll that
asks only for rows newer than the newest shown (`traces_newer`).

The live bar is a `<tbody id="feed-live">` at the top of the table that polls every 2 s and is
replaced by itself plus a `<tbody>` of the new rows; paused, it polls for a count only.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast
from urllib.parse import urlencode

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import push_url

from accounts.access import DashboardRequest, team_view
from config import cursors
from traces.models import FeedColumn, Trace
from traces.scores import score_names
from traces.selectors import (
    CursorError,
    encode_cursor,
    feed_columns,
    trace_page,
    traces_newer,
    traces_newer_count,
    usual_environment,
)
from traces.services import feed_columns_save

from .forms import FeedColumnsForm, FeedFilterForm
from .rows import FIXED_COLUMNS, feed_rows

PAGE = 50
LIVE_MAX = 100  # rows per poll; a bigger burst arrives over the next polls
PAUSED_CAP = 999  # a paused feed counts up to this ("999+")
POLL = "2s"
# With nothing shown yet, the poll asks for everything the filter matches (which is nothing so far).
FLOOR_CURSOR = cursors.encode_cursor(f"{datetime(1970, 1, 1, tzinfo=UTC).isoformat()}|{uuid.UUID(int=0)}")


def _url(name: str, query: str, **extra: str) -> str:
    parts = [query] if query else []
    if extra:
        parts.append(urlencode(extra))
    return reverse(name) + ("?" + "&".join(parts) if parts else "")


@team_view()
def trace_feed(request: DashboardRequest) -> HttpResponse:
    has_blanks = any(not v.strip() for _, vs in request.GET.lists() for v in vs)
    if has_blanks and not request.htmx:
        # A GET form sends its empty fields: share a clean URL.
        return redirect(_url("trace-feed", FeedFilterForm(request.GET).query()))
    return _feed(request, request.GET)


def _columns(request: DashboardRequest) -> list[str]:
    return feed_columns(cast(AbstractBaseUser, request.user).pk)


def _feed(
    request: DashboardRequest, params: QueryDict, *, columns_form: FeedColumnsForm | None = None, status: int = 200
) -> HttpResponse:
    form = FeedFilterForm(params, score_names=score_names(request.team.pk))
    query = form.query()
    columns = _columns(request)
    chosen = {c.value: c.label for c in FeedColumn if c.value in columns}
    context: dict[str, object] = {
        "form": form,
        "query": query,
        "poll": POLL,
        "columns": chosen,
        "colspan": FIXED_COLUMNS + len(chosen),
        "columns_form": columns_form or FeedColumnsForm(initial={"columns": columns, "query": query}),
    }
    trace_filter = form.trace_filter()
    if trace_filter is None:
        response = render(request, _template(request), {**context, "invalid": True}, status=400)
        return push_url(response, _url("trace-feed", query)) if request.htmx else response
    cursor = params.get("cursor") or None
    try:
        rows, next_cursor = trace_page(
            team_id=request.team.pk,
            trace_filter=trace_filter,
            limit=PAGE,
            cursor=cursor,
            with_input=FeedColumn.PROMPT in columns,
        )
    except CursorError:
        form.add_error(None, "That page link is stale or broken: start from the newest traces.")
        return render(request, _template(request), {**context, "invalid": True}, status=400)
    newest = encode_cursor(rows[0]) if rows and not cursor else FLOOR_CURSOR
    context |= {
        "rows": rows,
        "feed_rows": feed_rows(rows, usual_environment=usual_environment(request.team.pk), columns=columns),
        "paged": bool(cursor),
        "live_url": _url("trace-feed-live", query, after=newest),
        "more_url": _url("trace-feed", query, cursor=next_cursor) if next_cursor else "",
        "clear_url": reverse("trace-feed"),
        "filtered": bool(query),
    }
    response = render(request, _template(request), context, status=status)
    return push_url(response, _url("trace-feed", query)) if request.htmx.target == "feed-page" else response


@require_POST
@team_view()
def trace_feed_columns(request: DashboardRequest) -> HttpResponse:
    """Keep the person's choice of optional columns, then show the feed they came from with them."""
    form = FeedColumnsForm(request.POST)
    query = QueryDict(request.POST.get("query", ""))
    if not form.is_valid():
        return _feed(request, query, columns_form=form, status=400)
    feed_columns_save(user=cast(AbstractBaseUser, request.user), columns=form.cleaned_data["columns"])
    return redirect(_url("trace-feed", FeedFilterForm(query).query()))


def _template(request: DashboardRequest) -> str:
    if request.htmx.target == "feed-more":
        return "traces/feed.html#more"
    if request.htmx.target == "feed-page":
        return "traces/feed.html#page"
    return "traces/feed.html"


@team_view()
def trace_feed_live(request: DashboardRequest) -> HttpResponse:
    """The poll: the new rows and the live bar with the next cursor; paused, the bar with a count."""
    form = FeedFilterForm(request.GET)
    trace_filter = form.trace_filter()
    after = request.GET.get("after", "")
    if trace_filter is None or not after:
        return HttpResponse("Filters or cursor missing: reload the page.", status=400)
    query = form.query()
    paused = request.GET.get("paused") == "1"
    columns = _columns(request)
    try:
        if paused:
            count = traces_newer_count(
                team_id=request.team.pk, trace_filter=trace_filter, after=after, cap=PAUSED_CAP + 1
            )
            rows: list[Trace] = []
            newest = after
        else:
            count = 0
            rows, newest = traces_newer(
                team_id=request.team.pk,
                trace_filter=trace_filter,
                after=after,
                limit=LIVE_MAX,
                with_input=FeedColumn.PROMPT in columns,
            )
    except CursorError as exc:
        return HttpResponse(str(exc), status=400)
    context = {
        "new_rows": feed_rows(
            rows, new=True, usual_environment=usual_environment(request.team.pk) if rows else "", columns=columns
        ),
        "colspan": FIXED_COLUMNS + len(columns),
        "paused": paused,
        "count": count,
        "count_capped": count > PAUSED_CAP,
        "cap": PAUSED_CAP,
        "poll": POLL,
        "live_url": _url("trace-feed-live", query, after=newest),
        "query": query,
    }
    return render(request, "traces/feed.html#live", context)
