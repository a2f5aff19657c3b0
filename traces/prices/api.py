"""The team prices API (docs/pricing.md, "Team prices"):

GET    /api/v1/prices          list
POST   /api/v1/prices          create
PATCH  /api/v1/prices/{id}     change the fields given (the revision goes up by one)
DELETE /api/v1/prices/{id}     delete

Reading needs `prices:read` (production and development keys; every role of a user token); writing
`prices:write` (production keys; admins and owners). Prices come back as decimal strings (exact:
`"0.075"`), and are taken as decimal strings or JSON numbers.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, json_object, problem_responses, validation_problem

from . import services
from .models import TeamPrice
from .selectors import price_for_team, prices_for_team

TAG = "Prices"
PricePermission = scoped(Scope.PRICES_READ, Scope.PRICES_WRITE)

_PRICE_IN = (
    'USD per million tokens: a decimal string (`"2.50"`, at most 10 decimal places) or a JSON number '
    "(rounded to 10 places), 0 or more."
)


# The serializers below document the body; `services.clean_price` reads it (the page posts to it too).
@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": services.DECIMAL_PATTERN},
            {"type": "number", "minimum": 0, "maximum": float(services.MAX_PRICE), "exclusiveMaximum": True},
        ]
    }
)
class PriceNumberField(serializers.Field):
    pass


def _price_field(help_text: str, *, required: bool = True) -> serializers.Field:
    return PriceNumberField(required=required, allow_null=not required, help_text=help_text)


class PriceInSerializer(serializers.Serializer):
    closed = True  # unknown fields are refused: additionalProperties false in the schema

    model = serializers.RegexField(
        services.MODEL_PATTERN,
        max_length=services.MAX_MODEL,
        help_text="The model name as traces carry it (compared without case), or a prefix ending in `*` "
        "(`ft:gpt-4o-mini:acme:*`). An exact name wins over any prefix, a longer prefix over a shorter one.",
    )
    provider = serializers.RegexField(
        services.PROVIDER_PATTERN,
        max_length=services.MAX_PROVIDER,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Only calls from this provider (`openai`, `azure`…); empty or null: any provider.",
    )
    input_per_mtok = _price_field(_PRICE_IN + " Every prompt token not priced by a rate below.")
    output_per_mtok = _price_field(_PRICE_IN + " Every completion token not priced as reasoning.")
    cached_input_per_mtok = _price_field("Prompt tokens read from a cache; null: at `input_per_mtok`.", required=False)
    cache_write_per_mtok = _price_field("Prompt tokens written to a cache; null: at `input_per_mtok`.", required=False)
    reasoning_per_mtok = _price_field("Reasoning tokens; null: at `output_per_mtok`.", required=False)
    effective_from = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="Calls at or after this time (ISO 8601; no offset: UTC); null: every call. For one model, "
        "the newest price in effect applies.",
    )


class PricePatchSerializer(PriceInSerializer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["partial"] = True
        super().__init__(*args, **kwargs)


class PriceOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField()
    provider = serializers.CharField(allow_null=True, help_text="null: any provider.")
    input_per_mtok = serializers.CharField(help_text="USD per million tokens, a decimal string.")
    output_per_mtok = serializers.CharField()
    cached_input_per_mtok = serializers.CharField(allow_null=True, help_text="null: at the input price.")
    cache_write_per_mtok = serializers.CharField(allow_null=True, help_text="null: at the input price.")
    reasoning_per_mtok = serializers.CharField(allow_null=True, help_text="null: at the output price.")
    effective_from = serializers.DateTimeField(allow_null=True, help_text="null: always.")
    revision = serializers.IntegerField(
        help_text="1 when created, one more on each change; traces priced by it have `price_version` "
        "`team:<id>@r<revision>`."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PriceListSerializer(serializers.Serializer):
    data = PriceOutSerializer(many=True)  # type: ignore[assignment]  # a nested field, as DRF means it


def price_json(price: TeamPrice) -> dict[str, Any]:
    return {
        "id": price.pk,
        "model": price.model,
        "provider": price.provider or None,
        **{name: services.decimal_text(getattr(price, name)) for name in services.PRICE_FIELDS},
        "effective_from": price.effective_from.isoformat() if price.effective_from else None,
        "revision": price.revision,
        "created_at": price.created_at.isoformat(),
        "updated_at": price.updated_at.isoformat(),
    }


def _problem_for(exc: Exception) -> Problem:
    if isinstance(exc, services.PriceExists):
        return Problem(409, "price-exists", str(exc), errors={"model": [str(exc)]})
    assert isinstance(exc, services.InvalidPrice)
    return validation_problem(exc.errors, title="Invalid price")


def _get(request: Request, price_id: int) -> TeamPrice:
    price = price_for_team(principal_of(request).team_id, price_id)
    if price is None:
        raise Problem(404, "not-found", f"No price {price_id} in this team.")
    return price


EXAMPLE = OpenApiExample(
    "A fine-tune",
    value={
        "model": "ft:gpt-4o-mini:acme:*",
        "provider": "openai",
        "input_per_mtok": "0.30",
        "output_per_mtok": "1.20",
        "cached_input_per_mtok": "0.15",
        "effective_from": "2026-11-01T00:00:00Z",
    },
    request_only=True,
)


class PriceListCreate(APIView):
    permission_classes = [PricePermission]

    @extend_schema(
        tags=[TAG],
        operation_id="prices_list",
        summary="List the team's prices",
        responses={200: PriceListSerializer, **problem_responses(401, 403)},
    )
    def get(self, request: Request) -> Response:
        return Response({"data": [price_json(p) for p in prices_for_team(principal_of(request).team_id)]})

    @extend_schema(
        tags=[TAG],
        operation_id="prices_create",
        summary="Add a team price",
        description="A team price wins over genai-prices for the calls it covers (at or after "
        "`effective_from`): their `price_source` is `team`, their `price_version` `team:<id>@r<revision>`. "
        "Traces already stored keep their cost (re-pricing corrects them).",
        request={"application/json": PriceInSerializer},
        examples=[EXAMPLE],
        responses={201: PriceOutSerializer, **problem_responses(400, 401, 403, 409, 415)},
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        try:
            data = services.clean_price(json_object(request))
            price = services.price_create(team_id=principal.team_id, data=data, actor=principal.actor)
        except (services.PriceExists, services.InvalidPrice) as exc:
            raise _problem_for(exc)
        return Response(price_json(price), status=201)


class PriceDetail(APIView):
    permission_classes = [PricePermission]

    @extend_schema(
        tags=[TAG],
        operation_id="prices_partial_update",
        summary="Change a team price",
        description="Fields left out stay as they are; null clears an optional one. The revision goes up "
        "by one: traces priced from now on name it.",
        request={"application/json": PricePatchSerializer},
        responses={200: PriceOutSerializer, **problem_responses(400, 401, 403, 404, 409, 415)},
    )
    def patch(self, request: Request, price_id: int) -> Response:
        principal = principal_of(request)
        try:
            changes = services.clean_price(json_object(request), partial=True)  # a bad body before the 404
        except services.InvalidPrice as exc:
            raise _problem_for(exc)
        price = _get(request, price_id)
        try:
            services.price_update(price=price, changes=changes, actor=principal.actor)
        except services.PriceExists as exc:
            raise _problem_for(exc)
        return Response(price_json(price))

    @extend_schema(
        tags=[TAG],
        operation_id="prices_destroy",
        summary="Delete a team price",
        responses={204: None, **problem_responses(401, 403, 404)},
    )
    def delete(self, request: Request, price_id: int) -> Response:
        services.price_delete(price=_get(request, price_id), actor=principal_of(request).actor)
        return Response(status=204)
