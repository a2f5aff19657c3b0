"""`/dashboards`: the team's boards (every role reads them; members, admins and owners add, edit,
reorder, duplicate and delete boards and widgets). The same checks (`dashboards.definition`),
services and selectors as the API; each widget answered by the analytics selectors (`answers`).

Every change names the board version the page showed: a change made from a stale page is refused
with the board as it is now, never applied to a widget that moved meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import DashboardRequest, request_actor, team_view
from accounts.roles import Permission

from . import selectors, services
from .answers import widget_answer
from .cards import card
from .definition import MAX_WIDGETS, Board, BoardError, check_widget, parse_board
from .forms import BoardForm, WidgetForm, widget_initial
from .models import Dashboard

STALE = "Someone changed this board meanwhile: nothing was changed. This is the board as it is now."


def _dashboard(request: DashboardRequest, dashboard_id: int) -> Dashboard:
    dashboard = selectors.dashboard_for_team(request.team.pk, dashboard_id)
    if dashboard is None:
        raise Http404("No such dashboard in this team.")
    return dashboard


def _version(request: DashboardRequest) -> int | None:
    raw = request.POST.get("version", "")
    return int(raw) if raw.isascii() and raw.isdigit() else None


@team_view()
def dashboard_list(request: DashboardRequest) -> HttpResponse:
    boards = list(selectors.dashboards_for_team(request.team.pk))
    form = BoardForm()
    return render(request, "dashboards/list.html", {"boards": boards, "form": form})


@require_POST
@team_view(Permission.MANAGE_DASHBOARDS)
def dashboard_new(request: DashboardRequest) -> HttpResponse:
    form = BoardForm(request.POST)
    if form.is_valid():
        try:
            board = parse_board({"name": form.cleaned_data["name"], "widgets": []})
        except BoardError as exc:
            for message in exc.errors.get("name", []):
                form.add_error("name", message)
        else:
            dashboard = services.dashboard_create(
                team_id=request.team.pk, board=board, actor=request_actor(request), user=request.user
            )
            messages.success(request, f"Dashboard “{dashboard.name}” made: add its first widget.")
            return redirect("dashboard-detail", dashboard.pk)
    boards = list(selectors.dashboards_for_team(request.team.pk))
    return render(request, "dashboards/list.html", {"boards": boards, "form": form}, status=400)


@team_view()
def dashboard_detail(request: DashboardRequest, dashboard_id: int) -> HttpResponse:
    dashboard = _dashboard(request, dashboard_id)
    cards = [card(widget_answer(team_id=request.team.pk, widget=w)) for w in dashboard.widgets or []]
    context = {
        "dashboard": dashboard,
        "cards": cards,
        "rename": BoardForm(initial={"name": dashboard.name, "version": dashboard.version}),
        "full": len(dashboard.widgets or []) >= MAX_WIDGETS,
    }
    return render(request, "dashboards/detail.html", context)


@require_POST
@team_view(Permission.MANAGE_DASHBOARDS)
def dashboard_rename(request: DashboardRequest, dashboard_id: int) -> HttpResponse:
    dashboard = _dashboard(request, dashboard_id)
    form = BoardForm(request.POST)
    if form.is_valid():
        try:
            board = parse_board({"name": form.cleaned_data["name"]}, base=services.board_of(dashboard))
        except BoardError as exc:
            for message in exc.errors.get("name", []):
                form.add_error("name", message)
        else:
            return _store(request, dashboard, board, "Dashboard renamed.")
    messages.error(request, "; ".join(str(m) for ms in form.errors.values() for m in ms))
    return redirect("dashboard-detail", dashboard.pk)


@require_POST
@team_view(Permission.MANAGE_DASHBOARDS)
def dashboard_duplicate(request: DashboardRequest, dashboard_id: int) -> HttpResponse:
    copy = services.dashboard_duplicate(
        dashboard=_dashboard(request, dashboard_id), actor=request_actor(request), user=request.user
    )
    messages.success(request, f"Dashboard duplicated as “{copy.name}”.")
    return redirect("dashboard-detail", copy.pk)


@require_POST
@team_view(Permission.MANAGE_DASHBOARDS)
def dashboard_delete(request: DashboardRequest, dashboard_id: int) -> HttpResponse:
    dashboard = _dashboard(request, dashboard_id)
    name = dashboard.name
    services.dashboard_delete(dashboard=dashboard, actor=request_actor(request))
    messages.success(request, f"Dashboard “{name}” deleted.")
    return redirect("dashboards")


@team_view(Permission.MANAGE_DASHBOARDS)
def widget_new(request: DashboardRequest, dashboard_id: int) -> HttpResponse:
    return _widget_form(request, _dashboard(request, dashboard_id), None)


@team_view(Permission.MANAGE_DASHBOARDS)
def widget_edit(request: DashboardRequest, dashboard_id: int, index: int) -> HttpResponse:
    dashboard = _dashboard(request, dashboard_id)
    if index >= len(dashboard.widgets or []):
        raise Http404("No such widget on this board.")
    return _widget_form(request, dashboard, index)


def _widget_form(request: DashboardRequest, dashboard: Dashboard, index: int | None) -> HttpResponse:
    widgets = list(dashboard.widgets or [])
    if request.method == "POST":
        form = WidgetForm(request.POST)
        if form.is_valid():
            try:
                widget = check_widget(form.widget_data())
            except BoardError as exc:
                form.add_api_errors(exc.errors)
            else:
                if index is None:
                    widgets.append(widget)
                else:
                    widgets[index] = widget
                board = _board(dashboard, widgets)
                if board is None:
                    form.add_error(None, f"A board holds at most {MAX_WIDGETS} widgets.")
                else:
                    try:
                        services.dashboard_update(
                            dashboard=dashboard,
                            board=board,
                            actor=request_actor(request),
                            expected_version=form.cleaned_data.get("version") or 0,
                        )
                    except services.StaleBoard:
                        # Keep what was typed: the form comes back with the board's new version.
                        dashboard.refresh_from_db()
                        data = request.POST.copy()
                        data["version"] = str(dashboard.version)
                        form = WidgetForm(data)
                        form.is_valid()
                        form.add_error(None, "Someone changed this board meanwhile: check the board, then save again.")
                    else:
                        messages.success(request, "Widget added." if index is None else "Widget saved.")
                        return redirect("dashboard-detail", dashboard.pk)
    else:
        initial = widget_initial(widgets[index]) if index is not None else {}
        form = WidgetForm(initial={**initial, "version": dashboard.version})
    context = {"dashboard": dashboard, "form": form, "index": index}
    return render(request, "dashboards/widget_form.html", context, status=400 if form.errors else 200)


def _move(step: int) -> Callable[[list[dict[str, Any]], int], list[dict[str, Any]]]:
    def move(widgets: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
        j = min(max(i + step, 0), len(widgets) - 1)
        widgets[i], widgets[j] = widgets[j], widgets[i]
        return widgets

    return move


WIDGET_ACTIONS: dict[str, tuple[Callable[[list[dict[str, Any]], int], list[dict[str, Any]]], str]] = {
    "up": (_move(-1), "Widget moved up."),
    "down": (_move(1), "Widget moved down."),
    "duplicate": (lambda ws, i: [*ws[: i + 1], dict(ws[i]), *ws[i + 1 :]], "Widget duplicated."),
    "delete": (lambda ws, i: [*ws[:i], *ws[i + 1 :]], "Widget deleted."),
}


@require_POST
@team_view(Permission.MANAGE_DASHBOARDS)
def widget_action(request: DashboardRequest, dashboard_id: int, index: int, action: str) -> HttpResponse:
    dashboard = _dashboard(request, dashboard_id)
    widgets = list(dashboard.widgets or [])
    if action not in WIDGET_ACTIONS or index >= len(widgets):
        raise Http404("No such widget on this board.")
    change, done = WIDGET_ACTIONS[action]
    board = _board(dashboard, change(widgets, index))
    if board is None:
        messages.error(request, f"A board holds at most {MAX_WIDGETS} widgets.")
        return redirect("dashboard-detail", dashboard.pk)
    return _store(request, dashboard, board, done, version=_version(request))


def _board(dashboard: Dashboard, widgets: list[dict[str, Any]]) -> Board | None:
    if len(widgets) > MAX_WIDGETS:
        return None
    return Board(name=dashboard.name, widgets=widgets)


def _store(
    request: DashboardRequest, dashboard: Dashboard, board: Board, done: str, *, version: int | None = None
) -> HttpResponse:
    expected = version if version is not None else _version(request)
    if expected is None:
        messages.error(request, STALE)
        return redirect("dashboard-detail", dashboard.pk)
    try:
        services.dashboard_update(
            dashboard=dashboard, board=board, actor=request_actor(request), expected_version=expected
        )
    except services.StaleBoard:
        messages.error(request, STALE)
    else:
        messages.success(request, done)
    return redirect("dashboard-detail", dashboard.pk)
