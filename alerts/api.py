"""The spend alerts API (issue 10, Spend alerts).

GET    /api/v1/alerts                 list (the built-in "Unpriced traffic" alert among them)
POST   /api/v1/alerts                 create → 201, with the webhook signing secret shown once
GET    /api/v1/alerts/{id}            one
PATCH  /api/v1/alerts/{id}            change (fields given)
DELETE /api/v1/alerts/{id}            delete
GET    /api/v1/alerts/{id}/events     fired and resolved, newest first (the last 100)
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, json_object, problem_responses, validation_problem
from traces.api import json_response

from . import selectors, services
from .definition import BUILTIN_FIXED, AlertError, parse_alert
from .models import Alert
from .serializers import AlertInSerializer, AlertListSerializer, AlertOutSerializer, EventListSerializer

TAG = "Alerts"
AlertPermission = scoped(Scope.ALERTS_READ, Scope.ALERTS_WRITE)
EXAMPLE = OpenApiExample(
    "Monthly budget",
    value={
        "name": "Monthly budget",
        "metric": "cost",
        "threshold": 500,
        "window": {"type": "calendar", "period": "month"},
        "scope": {"environment": "production"},
        "notify": {"emails": ["oncall@example.com"], "webhooks": [{"url": "https://hooks.example.com/tracerelay"}]},
    },
    request_only=True,
)


def _alert(request: Request, alert_id: int) -> Alert:
    alert = selectors.alert_for_team(principal_of(request).team_id, alert_id)
    if alert is None:
        raise Problem(404, "not-found", f"No alert {alert_id} in this team.")
    return alert


def _name_taken(exc: services.NameTaken) -> Problem:
    return Problem(409, "name-taken", str(exc), errors={"name": [str(exc)]})


class AlertListCreate(APIView):
    permission_classes = [AlertPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_list",
        summary="List alerts",
        responses={200: AlertListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        alerts = selectors.alerts_for_team(principal_of(request).team_id)
        return json_response({"data": [selectors.alert_json(a) for a in alerts]})

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_create",
        summary="Create a spend alert",
        description="Fires once per window when the value reaches `threshold`, resolves when it is back under; "
        "evaluated every 20 s. `window` is rolling (`minutes`, 1 to 44,640) or calendar (`period`: day, "
        "week from Monday, month; UTC). Webhook URLs pass the outbound URL guard. Errors name the field "
        "(`window.minutes`, `scope.<key>`, `notify.webhooks[0].url`).",
        request=AlertInSerializer,
        examples=[EXAMPLE],
        responses={201: AlertOutSerializer, **problem_responses(400, 401, 403, 409, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        try:
            spec = parse_alert(json_object(request))
            alert, secret = services.alert_create(team_id=principal.team_id, spec=spec, actor=principal.actor)
        except AlertError as exc:
            raise validation_problem(exc.errors, title="Invalid alert")
        except services.NameTaken as exc:
            raise _name_taken(exc)
        return json_response({**selectors.alert_json(alert), "signing_secret": secret}, status=201)


class AlertDetail(APIView):
    permission_classes = [AlertPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_retrieve",
        summary="One alert",
        responses={200: AlertOutSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, alert_id: int) -> HttpResponse:
        return json_response(selectors.alert_json(_alert(request, alert_id)))

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_partial_update",
        summary="Change an alert",
        description="Fields left out stay. The built-in alert takes `enabled`, `notify` and `threshold` only.",
        request=AlertInSerializer,
        responses={200: AlertOutSerializer, **problem_responses(400, 401, 403, 404, 409, 415)},
    )
    def patch(self, request: Request, alert_id: int) -> HttpResponse:
        alert = _alert(request, alert_id)
        data = json_object(request)
        fixed = sorted(set(data) & BUILTIN_FIXED) if alert.builtin else []
        if fixed:  # (unknown fields are parse_alert's: "Unknown field.")
            raise validation_problem({f: ["The built-in alert's own setting."] for f in fixed}, title="Invalid alert")
        try:
            spec = parse_alert(data, base=services.spec_of(alert))
            services.alert_update(alert=alert, spec=spec, actor=principal_of(request).actor)
        except AlertError as exc:
            raise validation_problem(exc.errors, title="Invalid alert")
        except services.NameTaken as exc:
            raise _name_taken(exc)
        return json_response(selectors.alert_json(alert))

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_destroy",
        summary="Delete an alert (the built-in one can only be disabled)",
        responses={204: None, **problem_responses(401, 403, 404, 409)},
    )
    def delete(self, request: Request, alert_id: int) -> HttpResponse:
        alert = _alert(request, alert_id)
        if alert.builtin:
            raise Problem(
                409, "builtin-alert", 'The built-in alert cannot be deleted; PATCH {"enabled": false} turns it off.'
            )
        services.alert_delete(alert=alert, actor=principal_of(request).actor)
        return HttpResponse(status=204)


class AlertEvents(APIView):
    permission_classes = [AlertPermission]

    @extend_schema(
        tags=[TAG],
        operation_id="alerts_events",
        summary="An alert's history: fired and resolved, newest first",
        responses={200: EventListSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, alert_id: int) -> HttpResponse:
        events = selectors.events_for_alert(_alert(request, alert_id))
        return json_response({"data": [selectors.event_json(e) for e in events]})
