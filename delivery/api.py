"""The deliveries API: the outbox as the user sees it, and replay of what failed.

GET  /api/v1/deliveries                 list (filters: status, reason, destination, trace, since, until), newest first
GET  /api/v1/deliveries/{id}            one
POST /api/v1/deliveries/{id}/replay     a dead, failed or dropped delivery → a fresh pending attempt
POST /api/v1/deliveries/replay          every dead letter (optionally one destination's, or since a time)
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config import cursors
from config.fields import StrictCharField
from config.problems import Problem, json_object, problem_responses

from . import selectors
from .models import DeliveryStatus, DropReason
from .services import NotReplayable, deliveries_replay_dead, delivery_replay

DEFAULT_LIMIT = 50
MAX_LIMIT = 500

DeliveryPermission = scoped(Scope.DELIVERIES_READ, Scope.DELIVERIES_WRITE)


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    trace_id = serializers.CharField(source="public_trace_id", help_text="The trace's public id.")
    destination = serializers.CharField(help_text="The destination as routed: an integration name or platform.")
    integration = serializers.CharField(
        source="integration_name", allow_null=True, help_text="The integration it resolved to, once tried."
    )
    rule = serializers.CharField(source="rule_name", help_text="The routing rule that sent it there.")
    status = serializers.ChoiceField(choices=DeliveryStatus.choices)
    attempts = serializers.IntegerField(help_text="Sends tried since creation or the last replay.")
    next_attempt_at = serializers.DateTimeField(allow_null=True, help_text="When a pending delivery is due.")
    last_error = serializers.CharField(help_text="The most recent failure, kept after a later success.")
    last_status_code = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField(
        help_text="Why a dropped delivery was not sent: `quota` (over the integration's `config.quota`) or "
        "`environment` (not among its `config.environments`); empty otherwise."
    )
    fallback_of = serializers.IntegerField(
        source="fallback_of_id", allow_null=True, help_text="The delivery this one stands in for."
    )
    replay_count = serializers.IntegerField()
    replayed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        if data["status"] != DeliveryStatus.PENDING:
            data["next_attempt_at"] = None
        return data


class DeliveryListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=DeliveryStatus.values, required=False)
    reason = serializers.ChoiceField(
        choices=DropReason.values, required=False, help_text="Dropped deliveries by why they were not sent."
    )
    destination = serializers.CharField(required=False, max_length=200)
    trace = serializers.CharField(required=False, max_length=128, help_text="A trace's public id.")
    since = serializers.DateTimeField(required=False, help_text="Created at or after (ISO 8601).")
    until = serializers.DateTimeField(required=False, help_text="Created before (ISO 8601).")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)
    cursor = serializers.CharField(required=False, max_length=64)

    def validate_cursor(self, value: str) -> int:
        return decode_cursor(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # DRF reads an empty query value as "not given"; a typed filter left empty is a mistake.
        empty = [str(name) for name, value in self.initial_data.items() if name in self.fields and value == ""]
        if empty:
            raise serializers.ValidationError({name: ["Must not be empty."] for name in empty})
        # As on the trace feed: a mistyped filter must not silently list everything.
        unknown = sorted(str(name) for name in self.initial_data if name not in self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown parameter."] for name in unknown})
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"since": ["Must be earlier than until."]})
        return attrs


class BulkReplayBody(serializers.Serializer):
    destination = StrictCharField(required=False, max_length=200)
    since = serializers.DateTimeField(required=False, help_text="Only dead letters dead-lettered at or after this.")


def encode_cursor(last_id: int) -> str:
    return cursors.encode_cursor(f"d:{last_id}")


def decode_cursor(value: str) -> int:
    try:
        kind, _, number = cursors.decode_cursor(value).partition(":")
        if kind != "d" or not number.isdigit():
            raise ValueError(value)
        return int(number)
    except ValueError:
        raise serializers.ValidationError("Not a cursor from this list; pass next_cursor back unchanged.")


def _one(team_id: int, delivery_id: int) -> dict[str, Any]:
    row = selectors.delivery_row(team_id, delivery_id)
    if row is None:
        raise Problem(404, "not-found", f"No delivery {delivery_id} in this team.")
    return row


_LIST_RESPONSE = inline_serializer(
    "DeliveryList",
    {"data": DeliverySerializer(many=True), "next_cursor": serializers.CharField(allow_null=True)},
)


class DeliveryListView(APIView):
    permission_classes = [DeliveryPermission]

    @extend_schema(
        operation_id="deliveries_list",
        tags=["Deliveries"],
        summary="List deliveries (the outbox), newest first",
        parameters=[DeliveryListQuery],
        responses={200: _LIST_RESPONSE, **problem_responses(400)},
    )
    def get(self, request: Request) -> Response:
        query = DeliveryListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        limit = params["limit"]
        rows, more = selectors.delivery_page(principal_of(request).team_id, params, limit=limit)
        next_cursor = encode_cursor(rows[-1]["id"]) if more else None
        return Response({"data": DeliverySerializer(rows, many=True).data, "next_cursor": next_cursor})


class DeliveryDetailView(APIView):
    permission_classes = [DeliveryPermission]

    @extend_schema(operation_id="deliveries_retrieve", tags=["Deliveries"], responses={200: DeliverySerializer})
    def get(self, request: Request, delivery_id: int) -> Response:
        return Response(DeliverySerializer(_one(principal_of(request).team_id, delivery_id)).data)


class DeliveryReplayView(APIView):
    permission_classes = [DeliveryPermission]

    @extend_schema(
        operation_id="deliveries_replay",
        tags=["Deliveries"],
        summary="Replay one dead, failed or dropped delivery",
        request=None,
        responses={
            202: DeliverySerializer,
            **problem_responses(404, 409),
        },
    )
    def post(self, request: Request, delivery_id: int) -> Response:
        principal = principal_of(request)
        delivery = selectors.team_delivery(principal.team_id, delivery_id)
        if delivery is None:
            raise Problem(404, "not-found", f"No delivery {delivery_id} in this team.")
        try:
            delivery_replay(delivery=delivery, actor=principal.actor)
        except NotReplayable as exc:
            raise Problem(409, "not-replayable", str(exc), current_status=exc.status)
        return Response(DeliverySerializer(_one(principal.team_id, delivery_id)).data, status=202)


class DeliveryBulkReplayView(APIView):
    permission_classes = [DeliveryPermission]

    @extend_schema(
        operation_id="deliveries_replay_dead",
        tags=["Deliveries"],
        summary="Replay every dead letter (optionally one destination's, or those since a time)",
        request=BulkReplayBody,
        responses={202: inline_serializer("BulkReplayResult", {"replayed": serializers.IntegerField()})},
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        # No body at all replays every dead letter; a body must be an object (JSON null is not one).
        data = json_object(request) if request.stream is not None else {}
        body = BulkReplayBody(data=data)
        body.is_valid(raise_exception=True)
        params = body.validated_data
        count = deliveries_replay_dead(
            team_id=principal.team_id,
            actor=principal.actor,
            destination=params.get("destination"),
            since=params.get("since"),
        )
        return Response({"replayed": count}, status=202)
